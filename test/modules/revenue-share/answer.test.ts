/**
 * What the caller of a revenue share number hears, through the real daemon with sipp as the supplier's
 * caller and as the forward's SIP target: the `answer` setting and its validation errors, an
 * announcement whose RTP reaches the caller's media port, a forward to a SIP URI answered when the
 * B leg answers (the A leg recorded and credited, the B leg the holder's free outbound CDR), and a
 * forward to a number the holder's balance cannot pay, answered with the announcement instead.
 */
import { once } from 'node:events';
import t from 'tap';
import { startTestDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { eventually, uasAnswer } from '../sip-trunks/world.js';
import { sipp } from '../../telephony/sip/sipp.js';
import { caller, mediaSink } from './caller.js';

async function account(d: TestDaemon, email: string, role?: 'admin') {
  const a = await d.modules.services.accounts.createAccount({
    email,
    password: 'correct horse battery',
    ...(role ? { role } : {}),
  });
  return { id: a.id, key: (await d.modules.services.keys.create(a.id, { mode: 'live' })).secret };
}

async function api(d: TestDaemon, method: string, url: string, key: string, body?: unknown) {
  const r = await d.app.inject({
    method: method as 'GET',
    url: `/api/v1${url}`,
    headers: { authorization: `Bearer ${key}` },
    ...(body === undefined ? {} : { payload: body as object }),
  });
  return { status: r.statusCode, json: r.json() as any }; // eslint-disable-line @typescript-eslint/no-explicit-any
}

t.test('revenue share answer: announcement, forward to SIP, forward without a route, validation', async (t) => {
  const d = await startTestDaemon(t);
  const sipPort = d.ports['sip']!;
  const rs = d.modules.services.revenueShare;
  const operator = await account(d, 'ans-operator@example.com', 'admin');
  const supplier = await account(d, 'ans-supplier@example.com');
  const holder = await account(d, 'ans-holder@example.com');

  const made = await api(d, 'POST', '/revenue-share/ranges', operator.key, {
    supplierId: supplier.id,
    name: 'Latvia IPRN 3713',
    countryCode: 'LV',
    country: 'Latvia',
    prefix: '3713',
    numberType: 'iprn',
    ratePerMinute: '0.120000',
    payouts: [{ origin: '', payoutPerMinute: '0.060000' }],
    sourceIps: ['127.0.0.1'],
  });
  t.equal(made.status, 201, 'range opened');
  await api(d, 'POST', `/revenue-share/ranges/${made.json.data.id}/numbers`, supplier.key, {
    numbers: ['37130000001', '37130000002', '37130000003'],
  });
  const got = await api(d, 'POST', '/revenue-share/numbers', holder.key, { rangeId: made.json.data.id, quantity: 3 });
  t.equal(got.status, 201, 'numbers allocated');
  const [n1, n2, n3] = (got.json.data as { id: string; number: string }[]).sort((a, b) =>
    a.number < b.number ? -1 : 1,
  );
  t.same(got.json.data[0].answer, { mode: 'silence', target: null, announcement: null }, 'silence by default');

  const patch = (id: string, answer: unknown) =>
    api(d, 'PATCH', `/revenue-share/numbers/${id}`, holder.key, { answer });

  await t.test('validation errors name the field', async (t) => {
    const cases: [unknown, string][] = [
      [{ mode: 'announcement' }, 'answer/announcement'],
      [{ mode: 'announcement', announcement: { text: 'hi', url: 'https://example.com/a.mp3' } }, 'answer/announcement'],
      [{ mode: 'announcement', announcement: { url: 'http://example.com/a.mp3' } }, 'answer/announcement/url'],
      [{ mode: 'announcement', announcement: { url: 'https://10.0.0.1/a.mp3' } }, 'answer/announcement/url'],
      [{ mode: 'announcement', announcement: { text: 'hola', language: 'xx' } }, 'answer/announcement/language'],
      [{ mode: 'forward' }, 'answer/target'],
      [{ mode: 'forward', target: '12' }, 'answer/target'],
      [{ mode: 'forward', target: 'sip:bob@169.254.169.254' }, 'answer/target'],
      [{ mode: 'silence', target: '+447700900123' }, 'answer/target'],
    ];
    for (const [answer, path] of cases) {
      const r = await patch(n1!.id, answer);
      t.equal(r.status, 400, `${JSON.stringify(answer)}: 400`);
      t.equal(r.json.error.code, 'VALIDATION_ERROR');
      t.ok(
        (r.json.error.details as { path: string }[]).some((x) => x.path === path),
        `${JSON.stringify(answer)} names ${path}`,
      );
    }
    const mode = await patch(n1!.id, { mode: 'ring' });
    t.equal(mode.status, 400, 'an unknown mode is refused');
    t.same((await api(d, 'GET', `/revenue-share/numbers/${n1!.id}`, holder.key)).json.data.answer.mode, 'silence');
  });

  await t.test('announcement: the prompt is heard (RTP with speech reaches the caller)', async (t) => {
    const r = await patch(n1!.id, {
      mode: 'announcement',
      announcement: { text: 'Thank you for calling. Please hold.' },
    });
    t.equal(r.status, 200);
    t.same(r.json.data.answer, {
      mode: 'announcement',
      target: null,
      announcement: { url: null, text: 'Thank you for calling. Please hold.', language: 'en' },
    });
    const sink = await mediaSink(t);
    const recorded = once(rs.answering.events, 'recorded');
    const run = await sipp(t, caller(sink.port, 2500), ['-s', n1!.number, `127.0.0.1:${sipPort}`]);
    t.equal(await run.exited, 0, 'the call completed', { output: run.output() });
    const [callId] = (await recorded) as [string];
    t.ok(sink.seen.packets > 20, `RTP arrived (${sink.seen.packets} packets)`);
    t.ok(sink.seen.voiced > 10, `speech in it (${sink.seen.voiced} packets)`);
    const [row] = await d.sql<{ status: string; answeredAt: Date | null }[]>`
      select status, answered_at from revshare_calls where id = ${callId}`;
    t.equal(row?.status, 'held', 'answered and earning');
  });

  await t.test('forward to a SIP URI: answered when the B leg answers, the A leg earns', async (t) => {
    const uas = await uasAnswer(t, 'bob');
    const r = await patch(n2!.id, { mode: 'forward', target: `sip:bob@127.0.0.1:${uas.port}` });
    t.equal(r.status, 200, JSON.stringify(r.json));
    t.equal(r.json.data.answer.target, `sip:bob@127.0.0.1:${uas.port}`);
    const sink = await mediaSink(t);
    const recorded = once(rs.answering.events, 'recorded');
    const run = await sipp(t, caller(sink.port, 1200), ['-s', n2!.number, `127.0.0.1:${sipPort}`]);
    t.equal(await run.exited, 0, 'the caller completed the call', { output: run.output() });
    t.equal(await uas.exited, 0, 'the SIP target answered and got the BYE', { output: uas.output() });
    const [callId] = (await recorded) as [string];
    const [row] = await d.sql<{ status: string; hangupCause: string; billedSeconds: number; payout: string }[]>`
      select status, hangup_cause, billed_seconds, payout::text from revshare_calls where id = ${callId}`;
    t.match(row, { status: 'held', hangupCause: 'caller-bye' }, 'the A leg recorded as answered');
    t.ok(row!.billedSeconds >= 1, 'billed from the B leg’s answer');
    // The B leg's CDR is written when that leg's own BYE transaction ends, which may be after the A
    // leg's record: wait for it rather than read once.
    const trunkLegs = async () =>
      (
        await d.sql<
          { direction: string; source: string; status: string; buyerCost: string; sellerId: string | null }[]
        >`
          select direction, source, status, buyer_cost::text, seller_id from cdrs
          where account_id = ${holder.id} order by direction`
      ).filter((l) => l.source === 'trunk');
    const legs = await eventually(async () => {
      const l = await trunkLegs();
      return l.length > 0 ? l : null;
    }).catch(trunkLegs);
    t.match(
      legs,
      [{ direction: 'outbound', status: 'completed', buyerCost: '0.000000', sellerId: null }],
      'the B leg is the holder’s outbound call, free to a SIP address',
    );
  });

  await t.test('a forward to a number the holder has no route for is refused with the route’s 404', async (t) => {
    const r = await patch(n3!.id, { mode: 'forward', target: '+447700900123', announcement: { text: 'Please hold.' } });
    t.equal(r.status, 200);
    t.same(r.json.data.answer, {
      mode: 'forward',
      target: '+447700900123',
      announcement: { url: null, text: 'Please hold.', language: 'en' },
    });
    const sink = await mediaSink(t);
    const recorded = once(rs.answering.events, 'recorded');
    const run = await sipp(t, caller(sink.port, 500), ['-s', n3!.number, `127.0.0.1:${sipPort}`]);
    t.not(await run.exited, 0, 'the caller was refused');
    const [callId] = (await recorded) as [string];
    const [row] = await d.sql<{ status: string; sipCode: number; hangupCause: string }[]>`
      select status, sip_code, hangup_cause from revshare_calls where id = ${callId}`;
    t.match(
      row,
      { status: 'unanswered', sipCode: 404, hangupCause: 'forward-failed' },
      'recorded unanswered, earning nothing',
    );
    t.equal(sink.seen.packets, 0, 'nothing was played');
  });
});
