import { createHash, createHmac } from 'node:crypto';
import { Decimal } from 'decimal.js';
import t from 'tap';
import { checkInvariants } from '../../ledger/helpers.js';
import { startPerlSmsc } from '../../messaging/perl-smsc.js';
import { createSmsWorld } from '../sms/world.js';

/**
 * Verify over SMS end to end: the code travels over the buyer's route to a Net::SMPP supplier SMSC,
 * is read back from what the SMSC received and checked; the money is the SMS's own price.
 * Rates of the world: prefix 1 at 0.010000 per segment plus the 0.000500 platform fee.
 */

/** The text of a submit_sm the SMSC logged: GSM-7 one byte a character (dc=0) or UCS-2 big-endian (dc=8). */
function submittedText(line: string): string {
  const hex = /hex=([0-9a-f]*)/.exec(line)![1]!;
  const bytes = Buffer.from(hex, 'hex');
  if (/ dc=8 /.test(line)) return bytes.swap16().toString('utf16le');
  return bytes.toString('latin1');
}
const codeIn = (text: string) => /(\d{4,10})\s*$/.exec(text)![1]!;

t.test('Verify by SMS through a real SMSC', async (t) => {
  const w = await createSmsWorld(t);
  const { h, api, buyer, smsc } = w;
  const key = (await h.services.keys.create(buyer.accountId, { mode: 'live', scopes: ['verify:write'] })).secret;
  let n = 0;
  const number = () => `+1202555${String(1000 + n++).padStart(4, '0')}`;
  // Starts take turns over several keys: each may start 10 a second, and the tests start faster.
  const starters = [key];
  for (let i = 0; i < 5; i++)
    starters.push((await h.services.keys.create(buyer.accountId, { mode: 'live', scopes: ['verify:write'] })).secret);
  let turn = 0;
  const start = (body: Record<string, unknown>, k = starters[turn++ % starters.length]!) =>
    api('POST', '/verify/start', k, body);
  const check = (verificationId: string, code: string, k = key) =>
    api('POST', '/verify/check', k, { verificationId, code });
  /** The SMSC's submit line for `to`; a send that never reaches it fails the test instead of hanging it. */
  const submitLine = (to: string) =>
    Promise.race([
      smsc.waitFor(new RegExp(`^SUBMIT ${to.slice(1)} `)),
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(`no submit for ${to}: ${smsc.lines.slice(-5).join(' | ')}`)), 15_000).unref(),
      ),
    ]);
  const received = async (to: string) => submittedText(await submitLine(to));

  t.test('the code arrives at the supplier, a wrong code is denied, the right one approved once', async (t) => {
    const before = await w.balance(buyer.accountId);
    const to = number();
    const r = await start({ to, channel: 'sms', brand: 'Acme' });
    t.equal(r.status, 200, JSON.stringify(r.body));
    const v = r.body.data;
    t.match(v, { to, channel: 'sms', status: 'pending', maxAttempts: 5, codeLength: 6 });
    t.notOk('testCode' in v, 'a live key never sees the code');
    t.ok(v.messageId);
    const expires = Date.parse(v.expiresAt) - Date.now();
    t.ok(expires > 590_000 && expires <= 600_000, 'ten minutes by default');
    const text = await received(to);
    t.match(text, /^Your Acme verification code is: \d{6}$/);
    const code = codeIn(text);
    const stored = await h.sql<
      { codeHash: string }[]
    >`select code_hash from verifications where id = ${v.verificationId}`;
    t.not(stored[0]!.codeHash, code);
    t.notOk(stored[0]!.codeHash.includes(code), 'only a hash is stored');
    const [key1] = await h.sql<{ value: string }[]>`select value from server_secrets where name = 'verify-code'`;
    const input = `${v.verificationId}:${code}`;
    t.equal(
      stored[0]!.codeHash,
      createHmac('sha256', key1!.value).update(input).digest('hex'),
      'HMAC-SHA-256 under the server secret',
    );
    t.not(stored[0]!.codeHash, createHash('sha256').update(input).digest('hex'), 'not a hash anyone can search');

    const wrong = code === '000000' ? '111111' : '000000';
    t.same((await check(v.verificationId, wrong)).body.data, { status: 'denied', attemptsRemaining: 4 });
    t.same((await check(v.verificationId, code)).body.data, { status: 'approved', attemptsRemaining: 3 });
    const again = await check(v.verificationId, code);
    t.equal(again.status, 409, 'an approved code is single-use');
    t.equal(again.body.error.code, 'CONFLICT');

    const got = (await api('GET', `/verify/${v.verificationId}`, key)).body.data;
    t.match(got, { id: v.verificationId, status: 'approved', attempts: 2, attemptsRemaining: 3, simulated: false });
    t.ok(got.approvedAt);
    t.notOk('code' in got || 'codeHash' in got);

    const after = await w.balance(buyer.accountId);
    t.equal(after.balance, '9.989500', 'billed as one SMS: 0.010000 + 0.000500 fee, no verification fee');
    t.equal(before.balance, '10.000000');
    const sms = (await api('GET', `/comms/sms/${v.messageId}`, buyer.session)).body.data;
    t.match(sms, { cost: '0.010500', from: 'Verify', segments: 1 });
    const events = await h.sql<{ event: string }[]>`
      select event from events where data->>'verificationId' = ${v.verificationId} order by created_at, event`;
    t.same(
      events.map((e) => e.event),
      ['verify.approved'],
    );
    await checkInvariants(t, h.sql);
  });

  t.test('a replay with the same idempotency key returns the first verification and sends once', async (t) => {
    const to = number();
    const send = () =>
      h.app.inject({
        method: 'POST',
        url: '/api/v1/verify/start',
        headers: { authorization: `Bearer ${key}`, 'x-idempotency-key': `replay-${to}` },
        payload: { to, channel: 'sms' },
      });
    const first = await send();
    const second = await send();
    t.equal(first.statusCode, 200);
    t.equal(second.statusCode, 200, 'not the 30-second spacing: the first answer again');
    t.equal(second.json().data.verificationId, first.json().data.verificationId);
    await submitLine(to);
    t.equal(smsc.lines.filter((l) => l.startsWith(`SUBMIT ${to.slice(1)} `)).length, 1, 'one SMS');
    t.equal((await h.sql`select 1 from verifications where to_number = ${to.slice(1)}`).length, 1, 'one verification');
    await h.sql`update verification_sends set sent_at = array[now() - interval '2 hours'] where to_number = ${to.slice(1)}`;
    t.ok((await h.services.verify.pruneSends()) >= 1, 'a number with no code in the hour is forgotten');
  });

  t.test('five wrong codes lock the verification; the right code then fails too', async (t) => {
    const to = number();
    const v = (await start({ to, channel: 'sms', codeLength: 4 })).body.data;
    const code = codeIn(await received(to));
    t.equal(code.length, 4);
    const wrong = code === '0000' ? '1111' : '0000';
    for (let i = 4; i >= 1; i--)
      t.same((await check(v.verificationId, wrong)).body.data, { status: 'denied', attemptsRemaining: i });
    t.same((await check(v.verificationId, wrong)).body.data, { status: 'max_attempts', attemptsRemaining: 0 });
    t.same((await check(v.verificationId, code)).body.data, { status: 'max_attempts', attemptsRemaining: 0 });
  });

  t.test('an expired code is refused', async (t) => {
    const to = number();
    const v = (await start({ to, channel: 'sms', expirySeconds: 60 })).body.data;
    const code = codeIn(await received(to));
    await h.sql`update verifications set expires_at = now() - interval '1 second' where id = ${v.verificationId}`;
    t.same((await check(v.verificationId, code)).body.data, { status: 'expired', attemptsRemaining: 5 });
    t.equal((await api('GET', `/verify/${v.verificationId}`, key)).body.data.status, 'expired');
  });

  t.test('codes to one number: 30 seconds apart and 5 an hour (429 with Retry-After)', async (t) => {
    const to = number();
    const first = await start({ to, channel: 'sms' });
    t.equal(first.status, 200);
    const soon = await h.app.inject({
      method: 'POST',
      url: '/api/v1/verify/start',
      headers: { authorization: `Bearer ${key}`, 'x-idempotency-key': `spacing-${to}` },
      payload: { to, channel: 'sms' },
    });
    t.equal(soon.statusCode, 429);
    t.equal(soon.json().error.code, 'RATE_LIMITED');
    const retry = Number(soon.headers['retry-after']);
    t.ok(retry >= 29 && retry <= 30, `Retry-After ${retry}`);
    // Each earlier code moved back 31 s, as if the caller had waited.
    const shift = () => h.sql`
      update verification_sends set sent_at = array(select t - interval '31 seconds' from unnest(sent_at) t)
      where to_number = ${to.slice(1)}`;
    for (let i = 2; i <= 5; i++) {
      await shift();
      const r = await start({ to, channel: 'sms' });
      t.equal(r.status, 200, `code ${i}`);
    }
    await shift();
    const sixth = await start({ to, channel: 'sms' });
    t.equal(sixth.status, 429, 'a sixth code in the hour');
    const [{ n }] = (await h.sql`
      select count(*)::int as n from verifications where to_number = ${to.slice(1)} and status = 'pending'`) as unknown as [
      { n: number },
    ];
    t.equal(n, 1, 'each new code replaced the pending one before it');
  });

  t.test('Arabic goes as UCS-2; voice refuses Arabic', async (t) => {
    const to = number();
    const started = await start({ to, channel: 'sms', language: 'ar' });
    t.equal(started.status, 200, JSON.stringify(started.body));
    const v = started.body.data;
    const line = await submitLine(to);
    t.match(line, / dc=8 /, 'data_coding 8 (UCS-2)');
    const text = submittedText(line);
    t.match(text, /^رمز التحقق الخاص بك هو: \d{6}$/);
    t.equal((await check(v.verificationId, codeIn(text))).body.data.status, 'approved');
    const voice = await start({ to: number(), channel: 'voice', language: 'ar' });
    t.equal(voice.status, 400);
    t.match(voice.body.error.details, [{ path: 'language' }]);
  });

  t.test('a route refusal fails the start, charges nothing and does not count against the number', async (t) => {
    const before = await w.balance(buyer.accountId);
    const r = await start({ to: '+19990001234', channel: 'sms' });
    t.equal(r.status, 400, JSON.stringify(r.body));
    t.match(r.body.error.message, /could not be sent/);
    t.same(await w.balance(buyer.accountId), before);
    const [row] = await h.sql<{ status: string; failure: string }[]>`
      select status, failure from verifications where to_number = '19990001234'`;
    t.match(row, { status: 'failed', failure: 'SELLER_REJECTED' });
    const again = await start({ to: '+19990001234', channel: 'sms' });
    t.equal(again.status, 400, 'tried again at once: refused by the route, not by the 30-second spacing');
  });

  t.test('cancel, list, scopes, validation and not found', async (t) => {
    const to = number();
    const started = await start({ to, channel: 'sms' });
    t.equal(started.status, 200, JSON.stringify(started.body));
    const v = started.body.data;
    const code = codeIn(await received(to));
    const c = await api('POST', `/verify/${v.verificationId}/cancel`, key);
    t.equal(c.status, 200);
    t.equal(c.body.data.status, 'canceled');
    t.equal((await check(v.verificationId, code)).status, 409, 'a canceled code does not work');
    t.equal((await api('POST', `/verify/${v.verificationId}/cancel`, key)).status, 409);

    const page = await api('GET', '/verify?limit=2', key);
    t.equal(page.status, 200);
    t.equal(page.body.data.length, 2);
    t.equal(page.body.hasMore, true);
    t.equal(page.body.data[0].id, v.verificationId, 'newest first');
    const next = await api('GET', `/verify?limit=100&cursor=${page.body.nextCursor}`, key);
    t.ok(next.body.data.every((x: { id: string }) => x.id < page.body.nextCursor));
    const byNumber = await api('GET', `/verify?to=${encodeURIComponent(to)}&status=canceled`, key);
    t.same(
      byNumber.body.data.map((x: { id: string }) => x.id),
      [v.verificationId],
    );

    const smsOnly = (await h.services.keys.create(buyer.accountId, { mode: 'live', scopes: ['sms:send'] })).secret;
    const denied = await start({ to: number(), channel: 'sms' }, smsOnly);
    t.equal(denied.status, 403);
    t.match(denied.body.error.message, /verify:write/);

    const bad = await start({ to: '12', channel: 'sms', codeLength: 3, expirySeconds: 30 });
    t.equal(bad.status, 400);
    t.equal(bad.body.error.code, 'VALIDATION_ERROR');
    t.equal((await api('GET', '/verify/0190b5a0-0000-7000-8000-000000000000', key)).status, 404);
    const other = await h.signUp();
    t.equal((await api('GET', `/verify/${v.verificationId}`, other.session)).status, 404, 'not the caller’s');
  });

  t.test('a test key simulates: testCode returned, nothing sent, test credit only', async (t) => {
    await h.services.ledger.grantTestCredit({
      postingKey: `tc-${buyer.accountId}`,
      accountId: buyer.accountId,
      amount: '1.000000',
    });
    const before = await w.balance(buyer.accountId);
    const testKey = (await h.services.keys.create(buyer.accountId, { mode: 'test', scopes: ['verify:write'] })).secret;
    const to = number();
    const r = await start({ to, channel: 'sms' }, testKey);
    t.equal(r.status, 200, JSON.stringify(r.body));
    t.match(r.body.data, { status: 'pending', simulated: true, testCode: /^\d{6}$/ });
    t.same((await check(r.body.data.verificationId, r.body.data.testCode, testKey)).body.data, {
      status: 'approved',
      attemptsRemaining: 4,
    });
    const live = (await start({ to: number(), channel: 'sms' })).body.data;
    const refused = await check(live.verificationId, '123456', testKey);
    t.equal(refused.status, 403, 'a test key cannot check a live verification');
    t.equal(refused.body.error.code, 'TEST_KEY_NOT_ALLOWED');
    const after = await w.balance(buyer.accountId);
    t.equal(
      after.balance,
      new Decimal(before.balance).minus('0.010500').toFixed(6),
      'only the live code was paid live',
    );
    t.equal(after.testCredit, '0.989500');
    t.notOk(
      smsc.lines.some((l) => l.startsWith(`SUBMIT ${to.slice(1)}`)),
      'nothing reached the SMSC',
    );
    await checkInvariants(t, h.sql);
  });

  t.test('a code the balance cannot pay for leaves no verification and takes no slot', async (t) => {
    const poor = await h.signUp();
    t.equal((await api('POST', '/purchases', poor.session, { routeId: w.routeId })).status, 201);
    const poorKey = (await h.services.keys.create(poor.accountId, { mode: 'live', scopes: ['verify:write'] })).secret;
    const to = number();
    const r = await start({ to, channel: 'sms' }, poorKey);
    t.equal(r.status, 400, JSON.stringify(r.body));
    t.match(r.body.error.message, /^Insufficient balance/);
    const [left] = await h.sql<{ verifications: number; slots: number; messages: number }[]>`
      select (select count(*)::int from verifications where account_id = ${poor.accountId}) as verifications,
             (select count(*)::int from verification_sends
               where account_id = ${poor.accountId} and cardinality(sent_at) > 0) as slots,
             (select count(*)::int from messages where account_id = ${poor.accountId}) as messages`;
    t.same(left, { verifications: 0, slots: 0, messages: 0 }, 'the row, the slot and the message went back together');
    t.same((await w.balance(poor.accountId)).balance, '0.000000');
    await h.services.ledger.topup({
      accountId: poor.accountId,
      amount: '5.000000',
      source: 'card',
      postingKey: `fund-${poor.accountId}`,
    });
    const again = await start({ to, channel: 'sms' }, poorKey);
    t.equal(again.status, 200, 'at once: the refused start did not count against the 30-second spacing');
    t.ok(codeIn(await received(to)));
    t.equal((await w.balance(poor.accountId)).balance, '4.989500', 'billed as the one SMS sent');
    await checkInvariants(t, h.sql);
  });

  // Last: the cheaper refusing route it adds comes first in every later send's failover order.
  t.test('a code sent by SMS fails over to the next route when the first refuses, billed once', async (t) => {
    const refuser = await startPerlSmsc('sup2', 'pw2', { refuse: true });
    t.teardown(() => refuser.stop());
    const { routeId: cheap } = await w.smsRoute({
      name: 'Refusing SMSC',
      port: refuser.port,
      systemId: 'sup2',
      password: 'pw2',
      csv: 'prefix,destination,rate\n1,US cheap,0.008\n',
    });
    t.equal((await api('POST', '/purchases', buyer.session, { routeId: cheap })).status, 201);

    const before = await w.balance(buyer.accountId);
    const to = number();
    const r = await start({ to, channel: 'sms', brand: 'Acme' });
    t.equal(r.status, 200, JSON.stringify(r.body));
    const v = r.body.data;
    // The cheapest route first (Smart Routing): its SMSC refused the code, the next one took it.
    await refuser.waitFor(new RegExp(`^SUBMIT ${to.slice(1)} `));
    await refuser.waitFor(/^RESP refused/);
    const code = codeIn(await received(to));
    const [sent] = await h.sql<{ routeId: string; status: string; cost: string }[]>`
      select route_id, status, cost::text from messages where id = ${v.messageId}`;
    // The carrying SMSC's receipt may already have come in: delivered is sent and then some.
    t.match(sent, { routeId: w.routeId, status: /^(sent|delivered)$/ }, 'sent over the route that took it');
    t.equal(new Decimal(sent!.cost).toFixed(6), '0.010500', 'the price of the route that carried it');

    const after = await w.balance(buyer.accountId);
    t.equal(
      new Decimal(before.balance).minus(after.balance).toFixed(6),
      '0.010500',
      'billed once: the carrying route plus the fee, nothing for the refusal',
    );
    t.equal(after.held, before.held, 'the hold was settled, nothing left held');
    const [cdrs] = await h.sql<{ n: number }[]>`select count(*)::int as n from cdrs where to_number = ${to.slice(1)}`;
    t.equal(cdrs!.n, 1, 'one record for the one message');
    t.same((await check(v.verificationId, code)).body.data, { status: 'approved', attemptsRemaining: 4 });
    await checkInvariants(t, h.sql);
  });
});
