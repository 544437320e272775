import { randomUUID } from 'node:crypto';
import t from 'tap';
import { parse } from 'csv-parse/sync';
import { Decimal } from 'decimal.js';
import { answerChallenge } from '../../../src/telephony/sip/index.js';
import { checkInvariants } from '../../ledger/helpers.js';
import { rawUdpPeer, until } from '../../telephony/sip/helpers.js';
import {
  answeredSubCall,
  createWorld,
  eventually,
  expectExit,
  uac,
  uacScenario,
  uasAnswer,
  uasFinal,
  type World,
} from './world.js';

// Money in this file (fee 0.002000/min absolute, the config default; increment 6/6):
//   seller rate 0.013700 → buyer price 0.015700/min; a 1–6 s call bills 6 s.
//   6 s at 0.015700 = 0.001570 (seller 0.001370 + fee 0.000200).
//   Sub-account markup 25% of 0.001570 = 0.0003925 → 0.000393; the sub-account pays 0.001963.

/** The next call of `accountId` to end: one not among the calls already ended when the test began. */
const closedCall = async (w: World, accountId: string, seen: readonly string[]) =>
  eventually(async () => {
    const [c] = await w.d.sql<{ id: string; status: string; cost: string; billableSeconds: number; holdId: string }[]>`
      select id, status, cost::text, billable_seconds, hold_id from calls
      where account_id = ${accountId} and ended_at is not null and id <> all(${seen as string[]}::uuid[])
      order by id desc limit 1`;
    return c;
  });

const endedCalls = async (w: World, accountId: string) =>
  (await w.d.sql<{ id: string }[]>`select id from calls where account_id = ${accountId} and ended_at is not null`).map(
    (r) => r.id,
  );

const balance = async (w: World, id: string) => w.d.modules.services.ledger.balanceOf(id);

t.test('SIP trunk calls end to end', async (t) => {
  const w = await createWorld(t);
  const sql = w.d.sql;

  await t.test('sub-account digest call: answered, billed with markup, one CDR, hold gone', async (t) => {
    const number = '441100000001';
    const uas = await uasAnswer(t, number);
    const r = await w.route({ port: uas.port, prefix: '4411', rate: '0.013700' });
    const sub = await w.sub({ markupPct: '25', fund: '10.000000' });
    const opBefore = await balance(w, w.operator.accountId);
    await answeredSubCall(t, w, sub, number, uas);
    const call = await closedCall(w, sub.id, []);
    t.equal(call.status, 'completed');
    t.equal(call.billableSeconds, 6);
    t.equal(call.cost, '0.001963');
    const b = await balance(w, sub.id);
    t.equal(b.balance, '9.998037', 'sub-account paid price × 6 s plus 25% markup');
    t.equal(b.held, '0.000000', 'no hold left');
    const seller = await balance(w, w.seller.accountId);
    t.equal(seller.payable, '0.001370', 'seller earned its rate × 6 s');
    const op = await balance(w, w.operator.accountId);
    t.equal(op.payable, '0.000393', 'operator earned the markup');
    t.equal(op.balance, opBefore.balance, 'operator balance untouched by its sub-account call');
    const [fee] = await sql<{ s: string }[]>`
      select coalesce(sum(e.amount), 0)::numeric(20,6)::text as s from entries e join ledger_accounts a on a.id = e.account_id
      where a.kind = 'platform_fee' and e.call_id = ${call.id}`;
    t.equal(fee?.s, '0.000200', 'platform fee 0.002/min × 6 s');
    const cdrs = await sql`select * from cdrs where call_group_id = ${call.id}`;
    t.equal(cdrs.length, 1);
    t.match(cdrs[0], {
      accountId: sub.id,
      operatorId: w.operator.accountId,
      sellerId: w.seller.accountId,
      routeId: r.routeId,
      status: 'completed',
      sipCode: 200,
      hangupCause: 'caller-bye',
      billedSeconds: 6,
      toNumber: number,
      fromNumber: '15550001111',
      source: 'trunk',
    });
    t.equal(String(cdrs[0]!['buyerCost']), '0.001963');
    t.equal(String(cdrs[0]!['sellerCredit']), '0.001370');
    t.ok(
      (cdrs[0]!['durationSeconds'] as number) >= 1 && (cdrs[0]!['durationSeconds'] as number) <= 3,
      'duration about the 1.2 s held',
    );
    const [h] = await sql<{ status: string }[]>`select status from holds where id = ${call.holdId}`;
    t.not(h?.status, 'open');
  });

  await t.test('whitelisted IP: no challenge, the operator pays without markup', async (t) => {
    const number = '441200000001';
    const uas = await uasAnswer(t, number);
    await w.route({ port: uas.port, prefix: '4412', rate: '0.013700' });
    const added = await w.api('POST', '/sip/trunk-ips', w.operator.token, { ip: '127.0.0.1', label: 'office' });
    t.equal(added.status, 201, added.text);
    const listed = await w.api('GET', '/sip/trunk-ips', w.operator.token);
    t.same(
      listed.body.data.map((r: { ip: string }) => r.ip),
      ['127.0.0.1'],
    );
    const before = await balance(w, w.operator.accountId);
    const seen = await endedCalls(w, w.operator.accountId);
    const run = await uac(t, w.sipPort, uacScenario('uac-tail-answer.xml', { HOLD_MS: '300' }, false), number);
    await expectExit(t, run, 'caller completed the call without a challenge');
    await expectExit(t, uas, 'supplier answered');
    const call = await closedCall(w, w.operator.accountId, seen);
    t.equal(call.cost, '0.001570');
    const after = await balance(w, w.operator.accountId);
    t.equal(after.balance, new Decimal(before.balance).minus('0.001570').toFixed(6), 'operator paid price × 6 s');
    t.equal(after.held, '0.000000');
    const removed = await w.api('DELETE', `/sip/trunk-ips/${added.body.data.id}`, w.operator.token);
    t.equal(removed.status, 200);
    t.equal((await w.api('DELETE', `/sip/trunk-ips/${added.body.data.id}`, w.operator.token)).status, 404);
  });

  await t.test('purchase credentials: the operator pays, that route first', async (t) => {
    const number = '441300000001';
    const uas = await uasAnswer(t, number);
    const r = await w.route({ port: uas.port, prefix: '4413', rate: '0.013700' });
    const creds = await w.api('POST', `/purchases/${r.purchaseId}/sip-credentials`, w.operator.token);
    t.equal(creds.status, 201, creds.text);
    t.match(creds.body.data.sipUsername, /^pur_/);
    t.equal(
      (await w.api('POST', `/purchases/${r.purchaseId}/sip-credentials`, w.seller.token)).status,
      404,
      "not the seller's purchase",
    );
    const before = await balance(w, w.operator.accountId);
    const seen = await endedCalls(w, w.operator.accountId);
    const run = await uac(
      t,
      w.sipPort,
      uacScenario('uac-tail-answer.xml', { HOLD_MS: '300' }),
      number,
      creds.body.data.sipUsername,
      creds.body.data.sipPassword,
    );
    await expectExit(t, run, 'caller completed the call');
    await expectExit(t, uas, 'supplier answered');
    const call = await closedCall(w, w.operator.accountId, seen);
    t.equal(call.cost, '0.001570');
    const after = await balance(w, w.operator.accountId);
    t.equal(after.balance, new Decimal(before.balance).minus('0.001570').toFixed(6));
    const [cdr] = await sql`select account_id, route_id from cdrs where call_group_id = ${call.id}`;
    t.match(cdr, { accountId: w.operator.accountId, routeId: r.routeId });
  });

  await t.test('wrong password: 403, no call planned', async (t) => {
    const sub = await w.sub({ fund: '1.000000' });
    const run = await uac(
      t,
      w.sipPort,
      uacScenario('uac-tail-final.xml', { FINAL: '403' }),
      '441100000002',
      sub.sipUsername,
      'not-the-password',
    );
    await expectExit(t, run, 'caller got 403');
    const [n] = await sql<{ n: string }[]>`select count(*)::text as n from calls where account_id = ${sub.id}`;
    t.equal(n?.n, '0');
  });

  await t.test('insufficient balance: 402, nothing held or charged', async (t) => {
    const sub = await w.sub({});
    const run = await uac(
      t,
      w.sipPort,
      uacScenario('uac-tail-final.xml', { FINAL: '402' }),
      '441100000003',
      sub.sipUsername,
      sub.sipPassword,
    );
    await expectExit(t, run, 'caller got 402');
    const b = await balance(w, sub.id);
    t.same([b.balance, b.held], ['0.000000', '0.000000']);
    const [n] = await sql<
      { n: string }[]
    >`select (select count(*) from calls where account_id = ${sub.id}) + (select count(*) from holds h join ledger_accounts a on a.id = h.account_id where a.owner_id = ${sub.id}) as n`;
    t.equal(String(n?.n), '0');
  });

  await t.test('failover: 503 then answered: two legs, one callGroupId, only the connected leg billed', async (t) => {
    const number = '442000000001';
    const bad = await uasFinal(t, 503, 'Service Unavailable');
    const good = await uasAnswer(t, number, 'u1', 300);
    const cheap = await w.route({ port: bad.port, prefix: '4420', rate: '0.005000' });
    const dear = await w.route({ port: good.port, prefix: '4420', rate: '0.013700' });
    const sub = await w.sub({ markupPct: '0', fund: '5.000000' });
    const run = await uac(
      t,
      w.sipPort,
      uacScenario('uac-tail-answer.xml', { HOLD_MS: '300' }),
      number,
      sub.sipUsername,
      sub.sipPassword,
    );
    await expectExit(t, run, 'caller completed the call');
    await expectExit(t, bad, 'first supplier refused');
    await expectExit(t, good, 'second supplier answered');
    const call = await closedCall(w, sub.id, []);
    t.equal(call.cost, '0.001570', "billed at the connected route's price");
    t.equal((await balance(w, sub.id)).balance, '4.998430');
    const legs = await sql<
      {
        routeId: string;
        status: string;
        sipCode: number;
        buyerCost: string;
        callGroupId: string;
        pddMs: number | null;
      }[]
    >`
      select route_id, status, sip_code, buyer_cost::text, call_group_id, pdd_ms from cdrs where call_group_id = ${call.id} order by created_at, id`;
    t.equal(legs.length, 2);
    t.match(legs[0], { routeId: cheap.routeId, sipCode: 503, buyerCost: '0.000000', callGroupId: call.id });
    t.match(legs[1], {
      routeId: dear.routeId,
      sipCode: 200,
      status: 'completed',
      buyerCost: '0.001570',
      callGroupId: call.id,
    });
    t.equal(legs[0]?.pddMs, null, 'a refusal without 18x has no post-dial delay');
    // The supplier sent 100 Trying, waited 300 ms, then rang: the 100 does not end the delay.
    t.ok((legs[1]?.pddMs ?? 0) >= 300, `post-dial delay counts to the 180 (${legs[1]?.pddMs} ms)`);
    const listed = await w.api('GET', '/billing/cdrs?limit=100', w.operator.token);
    const row = listed.body.data.find(
      (r: { callGroupId: string; sipCode: number }) => r.callGroupId === call.id && r.sipCode === 200,
    );
    t.equal(row?.pddMs, legs[1]?.pddMs, 'pddMs is in GET /billing/cdrs');
  });

  await t.test('486 is never retried', async (t) => {
    const number = '443000000001';
    const busy = await uasFinal(t, 486, 'Busy Here');
    const spare = await uasAnswer(t, number);
    await w.route({ port: busy.port, prefix: '4430', rate: '0.005000' });
    await w.route({ port: spare.port, prefix: '4430', rate: '0.013700' });
    const sub = await w.sub({ fund: '5.000000' });
    const run = await uac(
      t,
      w.sipPort,
      uacScenario('uac-tail-final.xml', { FINAL: '486' }),
      number,
      sub.sipUsername,
      sub.sipPassword,
    );
    await expectExit(t, run, 'caller got 486');
    await expectExit(t, busy, 'first supplier said busy');
    const call = await closedCall(w, sub.id, []);
    t.equal(call.status, 'busy');
    t.equal(call.cost, '0.000000');
    const legs = await sql`select sip_code from cdrs where call_group_id = ${call.id}`;
    t.same(
      legs.map((l) => l['sipCode']),
      [486],
      'one leg only',
    );
    const b = await balance(w, sub.id);
    t.same([b.balance, b.held], ['5.000000', '0.000000']);
  });

  await t.test('sub-account maxConcurrentCalls: the second call is refused with 503 and counted', async (t) => {
    const number = '444000000001';
    const uas = await uasAnswer(t, number);
    await w.route({ port: uas.port, prefix: '4440', rate: '0.013700' });
    const sub = await w.sub({ fund: '5.000000', maxConcurrentCalls: 1 });
    const refusedBefore = w.d.modules.services.calls.refusals()['concurrency'] ?? 0;
    const first = await uac(
      t,
      w.sipPort,
      uacScenario('uac-tail-answer.xml', { HOLD_MS: '4000' }),
      number,
      sub.sipUsername,
      sub.sipPassword,
    );
    await eventually(
      async () => (await sql`select 1 from calls where account_id = ${sub.id} and status = 'answered'`).length > 0,
    );
    const second = await uac(
      t,
      w.sipPort,
      uacScenario('uac-tail-final.xml', { FINAL: '503' }),
      number,
      sub.sipUsername,
      sub.sipPassword,
    );
    await expectExit(t, second, 'second call refused with 503');
    t.equal(w.d.modules.services.calls.refusals()['concurrency'], refusedBefore + 1, 'refusal counted');
    await expectExit(t, first, 'first call completed');
    await expectExit(t, uas, 'supplier answered the first call only');
    const call = await closedCall(w, sub.id, []);
    t.equal(call.status, 'completed');
  });

  await t.test('route capacity: a full route is skipped, and with no other route the call gets 503', async (t) => {
    const number = '444100000001';
    const uas = await uasAnswer(t, number);
    await w.route({ port: uas.port, prefix: '4441', rate: '0.013700', capacity: 1 });
    const sub = await w.sub({ fund: '5.000000' });
    const before = w.d.modules.services.calls.refusals()['capacity'] ?? 0;
    const first = await uac(
      t,
      w.sipPort,
      uacScenario('uac-tail-answer.xml', { HOLD_MS: '2500' }),
      number,
      sub.sipUsername,
      sub.sipPassword,
    );
    await eventually(
      async () => (await sql`select 1 from calls where account_id = ${sub.id} and status = 'answered'`).length > 0,
    );
    const second = await uac(
      t,
      w.sipPort,
      uacScenario('uac-tail-final.xml', { FINAL: '503' }),
      number,
      sub.sipUsername,
      sub.sipPassword,
    );
    await expectExit(t, second, 'second call refused with 503');
    t.equal(w.d.modules.services.calls.refusals()['capacity'], before + 1, 'refusal counted');
    await expectExit(t, first, 'first call completed');
    await expectExit(t, uas, 'supplier answered the first call only');
    await closedCall(w, sub.id, []);
    t.equal((await balance(w, sub.id)).held, '0.000000');
  });

  await t.test('session timer: the call is cut when the balance runs out, and billed to the cut', async (t) => {
    // 0.000600 at 0.015700/min (1/1) pays 2.29 s: the hold is for 2 s, 0.000523.
    const number = '447000000001';
    const uas = await uasAnswer(t, number);
    await w.route({ port: uas.port, prefix: '4470', rate: '0.013700', increment: '1/1' });
    const sub = await w.sub({ markupPct: '0', fund: '0.000600' });
    const run = await uac(t, w.sipPort, uacScenario('uac-tail-bye-in.xml'), number, sub.sipUsername, sub.sipPassword);
    await expectExit(t, run, 'the caller got a BYE from the exchange');
    await expectExit(t, uas, 'the supplier got a BYE from the exchange');
    const call = await closedCall(w, sub.id, []);
    t.match(call, { status: 'completed', billableSeconds: 2, cost: '0.000523' });
    const [c] = await sql<
      { hangupCause: string; maxDurationSeconds: number }[]
    >`select hangup_cause, max_duration_seconds from calls where id = ${call.id}`;
    t.match(c, { hangupCause: 'max-duration', maxDurationSeconds: 2 });
    const b = await balance(w, sub.id);
    t.same([b.balance, b.held], ['0.000077', '0.000000']);
  });

  await t.test('a digest built with another realm is challenged again with the same nonce', async (t) => {
    const sub = await w.sub({ fund: '1.000000' });
    const realm = w.d.config.sip.primary_host;
    const peer = await rawUdpPeer();
    t.teardown(() => peer.close());
    // No route covers this number: a 404 after the digest proves the credentials were accepted.
    const number = '449900000001';
    const uri = `sip:${number}@127.0.0.1:${w.sipPort}`;
    const invite = (cseq: number, auth: string) => `INVITE ${uri} SIP/2.0
Via: SIP/2.0/UDP 127.0.0.1:${peer.port};branch=z9hG4bK${randomUUID().replace(/-/g, '')};rport
Max-Forwards: 70
From: <sip:15550001111@127.0.0.1>;tag=realm${cseq}
To: <sip:${number}@127.0.0.1>
Call-ID: realm-${sub.id}
CSeq: ${cseq} INVITE
Contact: <sip:15550001111@127.0.0.1:${peer.port}>
${auth}Content-Length: 0

`;
    const challenges = () => peer.got.filter((m) => m.startsWith('SIP/2.0 401'));
    peer.send(invite(1, ''), w.sipPort);
    await until(() => challenges().length === 1);
    const first = challenges()[0]!;
    const header = /^WWW-Authenticate:\s*(.+)$/im.exec(first)?.[1]?.trim() ?? '';
    t.match(header, `realm="${realm}"`);
    t.notMatch(header, /qop/, 'no qop offered');
    const nonce = /nonce="([^"]+)"/.exec(header)?.[1];
    t.ok(nonce, 'a nonce was offered');
    // A correct digest, but over a realm the client made up.
    const elsewhere = answerChallenge({
      challenge: header.replace(`realm="${realm}"`, 'realm="elsewhere.example"'),
      method: 'INVITE',
      uri,
      username: sub.sipUsername,
      password: sub.sipPassword,
    });
    peer.send(invite(2, `Authorization: ${elsewhere}\n`), w.sipPort);
    await until(() => challenges().length === 2);
    const second = challenges()[1]!;
    t.match(second, `nonce="${nonce}"`, 'the same nonce again');
    t.match(second, `realm="${realm}"`, 'with the primary realm');
    const right = answerChallenge({
      challenge: header,
      method: 'INVITE',
      uri,
      username: sub.sipUsername,
      password: sub.sipPassword,
    });
    peer.send(invite(3, `Authorization: ${right}\n`), w.sipPort);
    await until(() => peer.got.some((m) => m.startsWith('SIP/2.0 404')));
    t.equal(challenges().length, 2, 'the same nonce was accepted with the right realm');
  });

  await t.test('a call over TCP on both legs', async (t) => {
    const number = '441400000001';
    const uas = await uasAnswer(t, number, 't1');
    const r = await w.route({ port: uas.port, prefix: '4414', rate: '0.013700', transport: 'tcp' });
    const sub = await w.sub({ markupPct: '0', fund: '1.000000' });
    const run = await uac(
      t,
      w.sipPort,
      uacScenario('uac-tail-answer.xml', { HOLD_MS: '300' }),
      number,
      sub.sipUsername,
      sub.sipPassword,
      't1',
    );
    await expectExit(t, run, 'caller completed the call over TCP');
    await expectExit(t, uas, 'the TCP supplier answered and got the BYE');
    const call = await closedCall(w, sub.id, []);
    t.match(call, { status: 'completed', cost: '0.001570' });
    const [cdr] = await sql`select route_id, sip_code, status from cdrs where call_group_id = ${call.id}`;
    t.match(cdr, { routeId: r.routeId, sipCode: 200, status: 'completed' });
    t.same(await balance(w, sub.id).then((b) => [b.balance, b.held]), ['0.998430', '0.000000']);
  });

  await t.test(
    'sub-account daily spend cap: reached by a call, the next is refused with 403 and counted',
    async (t) => {
      const number = '444200000001';
      const uas = await uasAnswer(t, number);
      await w.route({ port: uas.port, prefix: '4442', rate: '0.013700' });
      // One 6 s call costs 0.001963 with the 25% markup: past a 0.001 cap.
      const sub = await w.sub({ markupPct: '25', fund: '5.000000', dailySpendCap: '0.001000' });
      const run = await uac(
        t,
        w.sipPort,
        uacScenario('uac-tail-answer.xml', { HOLD_MS: '300' }),
        number,
        sub.sipUsername,
        sub.sipPassword,
      );
      await expectExit(t, run, 'the first call is allowed');
      await expectExit(t, uas, 'supplier answered');
      const call = await closedCall(w, sub.id, []);
      t.equal(call.cost, '0.001963');
      const view = await w.api('GET', `/application/sub-accounts/${sub.id}`, w.operator.token);
      t.match(view.body.data, { autoSuspended: true, status: 'suspended' }, view.text);
      const before = w.d.modules.services.calls.refusals()['daily-cap'] ?? 0;
      const refusedRun = await uac(
        t,
        w.sipPort,
        uacScenario('uac-tail-final.xml', { FINAL: '403', FINAL_CHECK: 'Reason: SIP;cause=403;text="Daily spend cap' }),
        number,
        sub.sipUsername,
        sub.sipPassword,
      );
      await expectExit(t, refusedRun, 'the next call got 403 with the daily-cap Reason');
      t.equal(w.d.modules.services.calls.refusals()['daily-cap'], before + 1, 'refusal counted');
      const [n] = await sql<{ n: string }[]>`select count(*)::text as n from calls where account_id = ${sub.id}`;
      t.equal(n?.n, '1', 'no call planned for the refused one');
      t.same(
        await balance(w, sub.id).then((b) => [b.balance, b.held]),
        ['4.998037', '0.000000'],
        'nothing held or charged',
      );
    },
  );

  await t.test(
    "sub-account daily spend cap reached by an SMS charge: the call's hold is refused by SQLSTATE, 403 and counted",
    async (t) => {
      const number = '444300000001';
      const uas = await uasAnswer(t, number);
      await w.route({ port: uas.port, prefix: '4443', rate: '0.013700' });
      const sub = await w.sub({ markupPct: '25', fund: '5.000000', dailySpendCap: '0.010000' });
      // Spent outside the calls module: no call of this payer has seen the cap, so only the hold refuses.
      const charged = await w.d.modules.services.ledger.charge({
        postingKey: `cap-sms-${sub.id}`,
        accountId: sub.id,
        amount: '0.010000',
        relatedEntityType: 'sms',
      });
      t.equal(charged.capReached, true);
      const before = w.d.modules.services.calls.refusals()['daily-cap'] ?? 0;
      const refusedRun = await uac(
        t,
        w.sipPort,
        uacScenario('uac-tail-final.xml', { FINAL: '403', FINAL_CHECK: 'Reason: SIP;cause=403;text="Daily spend cap' }),
        number,
        sub.sipUsername,
        sub.sipPassword,
      );
      await expectExit(t, refusedRun, 'the call got 403 with the daily-cap Reason');
      t.equal(
        w.d.modules.services.calls.refusals()['daily-cap'],
        before + 1,
        'counted as a daily cap, not as a balance refusal',
      );
      t.same(
        await balance(w, sub.id).then((b) => [b.balance, b.held]),
        ['4.990000', '0.000000'],
        'nothing held or charged',
      );
    },
  );

  await t.test('GET /billing/cdrs: JSON pages and CSV', async (t) => {
    const page = await w.api('GET', '/billing/cdrs?limit=2', w.operator.token);
    t.equal(page.status, 200, page.text);
    t.equal(page.body.data.length, 2);
    t.equal(page.body.hasMore, true);
    const next = await w.api('GET', `/billing/cdrs?limit=100&cursor=${page.body.nextCursor}`, w.operator.token);
    const all = [...page.body.data, ...next.body.data];
    const [n] = await sql<
      { n: string }[]
    >`select count(*)::text as n from cdrs where account_id = ${w.operator.accountId} or operator_id = ${w.operator.accountId}`;
    t.equal(String(all.length), n?.n, "the operator sees its rows and its sub-accounts'");
    t.ok(
      all.every((r: { sellerCredit: string | null }) => r.sellerCredit === null),
      'a buyer never sees sellerCredit',
    );
    const sellerView = await w.api('GET', '/billing/cdrs?limit=100&kind=voice', w.seller.token);
    const answered = sellerView.body.data.filter((r: { status: string }) => r.status === 'completed');
    t.ok(answered.length >= 5);
    t.ok(
      answered.every((r: { sellerCredit: string | null }) => r.sellerCredit !== null),
      'the seller sees its credit',
    );
    t.ok(
      answered.every((r: { pddMs: number | null }) => Number.isInteger(r.pddMs) && (r.pddMs ?? -1) >= 0),
      'every answered leg has a post-dial delay',
    );
    t.equal((await w.api('GET', '/billing/cdrs?kind=sms', w.operator.token)).body.data.length, 0);
    const csv = await w.api('GET', '/billing/cdrs?format=csv', w.operator.token);
    t.equal(csv.status, 200);
    t.match(csv.text.split('\n')[0], /^id,callUuid,callGroupId,/);
    const rows = parse(csv.text, { columns: true }) as Record<string, string>[];
    t.equal(String(rows.length), n?.n);
    const billed = rows.find((r) => r['buyerCost'] === '0.001963');
    t.ok(billed, 'the marked-up sub-account call is in the export');
    t.equal(billed?.['billedSeconds'], '6');
  });

  await t.test('ledger invariants after all of it', async (t) => {
    await checkInvariants(t as never, sql);
    const [open] = await sql<{ n: string }[]>`select count(*)::text as n from holds where status = 'open'`;
    t.equal(open?.n, '0', 'no hold left open');
  });
});
