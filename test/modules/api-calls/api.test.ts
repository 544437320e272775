import t from 'tap';
import { randomUUID } from 'node:crypto';
import { createWorld } from '../sip-trunks/world.js';

/**
 * POST /comms/calls through HTTP: the action rules, and test keys that simulate against test
 * credit (no SIP involved); GET /comms/calls/{id} and the history list.
 */
t.test('validation, test-key simulation, record and history', async (t) => {
  const w = await createWorld(t);
  const { d, operator } = w;
  const { routeId } = await w.route({ port: 5999, prefix: '4470', rate: '0.012000', increment: '6/6' });
  const keys = d.modules.services.keys;
  const ledger = d.modules.services.ledger;
  const testKey = (await keys.create(operator.accountId, { mode: 'test' })).secret;
  const liveKey = (await keys.create(operator.accountId, { mode: 'live', scopes: ['voice:send'] })).secret;
  const smsKey = (await keys.create(operator.accountId, { mode: 'live', scopes: ['sms:send'] })).secret;
  await ledger.grantTestCredit({
    postingKey: `tc-${operator.accountId}`,
    accountId: operator.accountId,
    amount: '5.000000',
  });

  const post = (key: string, body: unknown) =>
    d.app.inject({
      method: 'POST',
      url: '/api/v1/comms/calls',
      headers: { authorization: `Bearer ${key}`, 'x-idempotency-key': randomUUID() },
      payload: body as object,
    });
  const base = { to: '+447000000001', from: '+15550001111' };

  t.test('action rules answer 400 VALIDATION_ERROR with the failing path', async (t) => {
    const cases: [string, unknown[] | undefined, Record<string, unknown>, string][] = [
      ['eleven actions', Array.from({ length: 11 }, () => ({ pause: 1 })), {}, 'actions'],
      ['say over 500', [{ say: 'x'.repeat(501) }], {}, 'actions.0.say'],
      ['spoken text over 1,500 in all', Array.from({ length: 4 }, () => ({ say: 'y'.repeat(400) })), {}, 'actions'],
      [
        'four play URLs',
        Array.from({ length: 4 }, (_, i) => ({ play: `https://example.com/${i}.mp3` })),
        {},
        'actions',
      ],
      ['six gathers', Array.from({ length: 6 }, () => ({ gather: {} })), {}, 'actions'],
      ['play over http', [{ play: 'http://example.com/a.mp3' }], {}, 'actions.0.play'],
      ['play URL too long', [{ play: `https://example.com/${'a'.repeat(2040)}` }], {}, 'actions.0.play'],
      ['pause 11', [{ pause: 11 }], {}, 'actions.0.pause'],
      ['pause 0', [{ pause: 0 }], {}, 'actions.0.pause'],
      ['hangup false', [{ hangup: false }], {}, 'actions.0.hangup'],
      ['two verbs in one item', [{ say: 'hi', pause: 1 }], {}, 'actions.0'],
      ['gather digits 21', [{ gather: { digits: 21 } }], {}, 'actions.0.gather.digits'],
      ['gather timeout 31', [{ gather: { timeout: 31 } }], {}, 'actions.0.gather.timeout'],
      ['gather tries 4', [{ gather: { tries: 4 } }], {}, 'actions.0.gather.tries'],
      ['gather finishOnKey 5', [{ gather: { finishOnKey: '5' } }], {}, 'actions.0.gather.finishOnKey'],
      ['gather say and play', [{ gather: { say: 'a', play: 'https://example.com/a.mp3' } }], {}, 'actions.0.gather'],
      ['maxDuration 9', undefined, { maxDuration: 9 }, 'maxDuration'],
      ['maxDuration 3601', undefined, { maxDuration: 3601 }, 'maxDuration'],
      ['language xx', undefined, { language: 'xx' }, 'language'],
      ['to not E.164', undefined, { to: '12ab' }, 'to'],
    ];
    for (const [what, actions, extra, path] of cases) {
      // A key per request: the route allows 10 requests a second per credential.
      const key = (await keys.create(operator.accountId, { mode: 'test' })).secret;
      const r = await post(key, { ...base, ...extra, ...(actions ? { actions } : {}) });
      t.equal(r.statusCode, 400, what);
      const body = r.json();
      t.equal(body.error.code, 'VALIDATION_ERROR', `${what}: code`);
      const paths = (body.error.details ?? []).map((x: { path: string }) => x.path);
      t.ok(
        paths.some((p: string) => p === path || p.startsWith(path)),
        `${what}: path ${path} in ${JSON.stringify(paths)}`,
      );
    }
    const before = await ledger.balanceOf(operator.accountId);
    t.equal(before.testHeld, '0.000000', 'refused requests hold nothing');
  });

  t.test('scope voice:send is required', async (t) => {
    const r = await post(smsKey, base);
    t.equal(r.statusCode, 403);
  });

  t.test('a number no route covers is refused at once', async (t) => {
    const r = await post(testKey, { ...base, to: '+861000000000' });
    t.equal(r.statusCode, 400);
    t.match(r.json().error.message, /route/i);
  });

  t.test('a test key simulates against test credit, runs no actions, places nothing', async (t) => {
    const before = await ledger.balanceOf(operator.accountId);
    const r = await post(testKey, { ...base, maxDuration: 30, actions: [{ say: 'hello' }, { gather: { digits: 2 } }] });
    t.equal(r.statusCode, 200, r.body);
    const c = r.json().data;
    t.equal(c.simulated, true);
    t.equal(c.status, 'completed');
    t.equal(c.sipResponseCode, 200);
    t.equal(c.billingIncrement, '6/6');
    t.equal(c.durationSeconds, 6, 'one first billing block');
    t.equal(c.billableSeconds, 6);
    // 0.012 seller + 0.002 fee = 0.014/min; 6 s = 0.0014
    t.equal(c.cost, '0.001400');
    const after = await ledger.balanceOf(operator.accountId);
    t.equal(after.balance, before.balance, 'live balance never moves');
    t.equal(after.testCredit, (Number(before.testCredit) - 0.0014).toFixed(6), 'test credit pays');
    t.equal(after.testHeld, '0.000000', 'hold gone');

    const got = await d.app.inject({
      method: 'GET',
      url: `/api/v1/comms/calls/${c.callId}`,
      headers: { authorization: `Bearer ${liveKey}` },
    });
    t.equal(got.statusCode, 200);
    const rec = got.json().data;
    t.equal(rec.callId, c.callId);
    t.equal(rec.simulated, true);
    t.equal(rec.mode, 'sync');
    t.equal(rec.cost, '0.001400');
    t.equal(rec.routeId, routeId);
    t.same(rec.gathered, []);
    t.equal(rec.actions.length, 2, 'the actions as sent');
    t.equal(rec.attempts.length, 1);
    t.ok(rec.hangupReason);

    const cdrs =
      await d.sql`select status, simulated, buyer_cost::text as cost, call_group_id from cdrs where call_uuid = ${c.callId}`;
    t.equal(cdrs.length, 1, 'one CDR');
    t.equal(cdrs[0]!['simulated'], true);
    const events =
      await d.sql`select event, data from events where account_id = ${operator.accountId} and data->>'callId' = ${c.callId}`;
    t.same(
      events.map((e) => e['event']),
      ['call.completed'],
    );

    const hist = await d.app.inject({
      method: 'GET',
      url: '/api/v1/comms/calls?limit=5',
      headers: { authorization: `Bearer ${testKey}` },
    });
    t.equal(hist.statusCode, 200, hist.body);
    const entries = hist.json().data as {
      relatedEntityType: string;
      relatedEntityId: string;
      amount: string;
      callId: string;
    }[];
    t.ok(entries.length >= 1);
    t.ok(entries.every((e) => e.relatedEntityType === 'api_call'));
    t.ok(entries.some((e) => e.relatedEntityId === c.callId && e.callId === c.callId && e.amount.startsWith('-')));
  });

  t.test('history is full-access only; another account cannot see the call', async (t) => {
    const r = await d.app.inject({
      method: 'GET',
      url: '/api/v1/comms/calls',
      headers: { authorization: `Bearer ${liveKey}` },
    });
    t.equal(r.statusCode, 403);
    const made = await post(testKey, base);
    const other = await w.signUp();
    const otherKey = (await keys.create(other.accountId, { mode: 'live' })).secret;
    const seen = await d.app.inject({
      method: 'GET',
      url: `/api/v1/comms/calls/${made.json().data.callId}`,
      headers: { authorization: `Bearer ${otherKey}` },
    });
    t.equal(seen.statusCode, 404);
    const unknown = await d.app.inject({
      method: 'GET',
      url: `/api/v1/comms/calls/${randomUUID()}`,
      headers: { authorization: `Bearer ${liveKey}` },
    });
    t.equal(unknown.statusCode, 404);
  });

  t.test('a sub-account key sees only its own calls; its operator sees them too', async (t) => {
    const sub = await w.sub();
    const subKey = (await keys.create(sub.id, { mode: 'test' })).secret;
    await ledger.grantTestCredit({ postingKey: `tc-${sub.id}`, accountId: sub.id, amount: '1.000000' });
    const mine = await post(subKey, base);
    t.equal(mine.statusCode, 200, mine.body);
    const subCall = mine.json().data.callId as string;
    const operatorCall = (await post(testKey, base)).json().data.callId as string;
    const get = (key: string, id: string) =>
      d.app.inject({ method: 'GET', url: `/api/v1/comms/calls/${id}`, headers: { authorization: `Bearer ${key}` } });
    t.equal((await get(subKey, subCall)).statusCode, 200, 'own call');
    t.equal((await get(subKey, operatorCall)).statusCode, 404, "the operator's call is not the sub-account's");
    t.equal((await get(liveKey, subCall)).statusCode, 200, "the operator sees its sub-account's call");
    const rows = await d.sql`select account_id, operator_id from calls where id = ${subCall}`;
    t.equal(rows[0]!['accountId'], sub.id, 'the sub-account pays');
    t.equal(rows[0]!['operatorId'], operator.accountId);
  });

  t.test('POST /comms/voice-otp with a test key: initiated, simulated call, code never stored in clear', async (t) => {
    const r = await d.app.inject({
      method: 'POST',
      url: '/api/v1/comms/voice-otp',
      headers: { authorization: `Bearer ${testKey}`, 'x-idempotency-key': randomUUID() },
      payload: { to: '+447000000009', language: 'de', brand: 'Acme' },
    });
    t.equal(r.statusCode, 200, r.body);
    const v = r.json().data;
    t.equal(v.status, 'initiated');
    t.equal(v.to, '+447000000009');
    t.equal(v.language, 'de');
    t.equal(v.codeLength, 6, 'a 6-digit code is generated');
    t.equal(v.repeat, 2, 'read twice by default');
    const rec = (
      await d.app.inject({
        method: 'GET',
        url: `/api/v1/comms/calls/${v.callId}`,
        headers: { authorization: `Bearer ${testKey}` },
      })
    ).json().data;
    t.equal(rec.simulated, true);
    t.equal(rec.mode, 'async');
    t.ok(rec.cost, 'cost on the call record');
    t.equal(rec.actions.filter((a: { say?: string }) => a.say !== undefined).length, 2);
    t.notOk(
      rec.actions.some((a: { say?: string }) => a.say !== undefined && /\d/.test(a.say)),
      'the digits are not in the record',
    );
    const rows = await d.sql`select code_hash, code_length, call_id from voice_otps where id = ${v.voiceOtpId}`;
    t.equal(rows.length, 1);
    t.equal(rows[0]!['callId'], v.callId);
    t.match(rows[0]!['codeHash'], /^[0-9a-f]{64}$/);
    const bad = await d.app.inject({
      method: 'POST',
      url: '/api/v1/comms/voice-otp',
      headers: { authorization: `Bearer ${testKey}`, 'x-idempotency-key': randomUUID() },
      payload: { to: '+447000000009', code: '12', repeat: 4 },
    });
    t.equal(bad.statusCode, 400);
    const paths = bad.json().error.details.map((x: { path: string }) => x.path);
    t.ok(paths.includes('code') && paths.includes('repeat'), JSON.stringify(paths));
  });

  t.test('test credit that does not cover maxDuration is refused with Insufficient balance', async (t) => {
    const poor = await w.signUp();
    const poorKey = (await keys.create(poor.accountId, { mode: 'test' })).secret;
    // A buyer of its own: the operator's purchase is not the poor account's.
    const bought = await w.api('POST', '/purchases', poor.token, { routeId });
    t.equal(bought.status, 201, bought.text);
    await ledger.grantTestCredit({ postingKey: `tc-${poor.accountId}`, accountId: poor.accountId, amount: '0.010000' });
    const r = await post(poorKey, { ...base, maxDuration: 3600 });
    t.equal(r.statusCode, 400);
    t.match(r.json().error.message, /^Insufficient balance/);
    const n = await d.sql`select count(*)::int as n from calls where account_id = ${poor.accountId}`;
    t.equal(n[0]!['n'], 0, 'no call recorded');
  });
});
