/**
 * Scale-out: two daemons on one PostgreSQL and one Redis, as docs/scale-out.md describes. Daemon A
 * runs in this process, daemon B in a child process so it can be killed. The global limits hold
 * across them, money is exact, and B's crash reconcile leaves A's live call alone.
 */
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import t, { type Test } from 'tap';
import { loadConfig } from '../../src/config/load.js';
import { startDaemon } from '../../src/daemon.js';
import { httpsCall } from '../helpers/daemon.js';
import { checkInvariants } from '../ledger/helpers.js';
import { startPerlSmsc } from '../messaging/perl-smsc.js';
import { childDaemonConfig, spawnChildDaemon } from '../modules/sip-trunks/child-daemon.js';
import { createWorld, eventually, expectExit, uac, uacScenario, uasAnswer } from '../modules/sip-trunks/world.js';
import { Decimal } from 'decimal.js';
import { REDIS_URL, redisAnswers } from '../helpers/redis.js';

/** Waits for the start of a wall-clock second, so a burst falls in one rate window. */
async function startOfSecond(): Promise<void> {
  for (;;) {
    if (Date.now() % 1000 < 50) return;
    await new Promise((r) => setTimeout(r, 5));
  }
}

const skip = (await redisAnswers()) ? false : 'Redis is not running on 127.0.0.1:6379';

t.test('two daemons on one database and one Redis', { skip }, async (t) => {
  // Twenty requests a second per credential, summed over both daemons through Redis.
  const shared = { redis: { url: REDIS_URL }, limits: { default_per_second: 20 } };
  const w = await createWorld(t, shared);
  const sql = w.d.sql;
  const services = w.d.modules.services;

  const overridesB = childDaemonConfig(t, w.d.config.database.url, shared);
  const b = await spawnChildDaemon(t, overridesB);
  const sipA = w.sipPort;
  const sipB = b.ports['sip']!;
  const apiB = (method: string, path: string, token: string, body?: unknown) =>
    httpsCall(`https://127.0.0.1:${b.ports['http']}/api/v1${path}`, method, undefined, {
      token,
      insecure: true,
      ...(body === undefined ? {} : { body }),
      ...(method === 'POST' ? { headers: { 'x-idempotency-key': randomUUID() } } : {}),
    });
  const answered = (accountId: string, n: number) =>
    eventually(
      async () => (await sql`select 1 from calls where account_id = ${accountId} and status = 'answered'`).length >= n,
      30_000,
    );

  /** A call held on `holder`, then a second one to the same number on `other`: refused with 503. */
  const oneSlot = async (
    t: Test,
    o: { prefix: string; capacity?: number; maxConcurrentCalls?: number; holder: 'A' | 'B' },
  ) => {
    const number = `${o.prefix}00000001`;
    const uas = await uasAnswer(t, number);
    await w.route({
      port: uas.port,
      prefix: o.prefix,
      rate: '0.013700',
      ...(o.capacity ? { capacity: o.capacity } : {}),
    });
    const sub = await w.sub({
      fund: '5.000000',
      markupPct: '0',
      ...(o.maxConcurrentCalls ? { maxConcurrentCalls: o.maxConcurrentCalls } : {}),
    });
    const [holder, other] = o.holder === 'A' ? [sipA, sipB] : [sipB, sipA];
    const call = (port: number, tail: string, vars: Record<string, string>) =>
      uac(t, port, uacScenario(tail, vars), number, sub.sipUsername, sub.sipPassword);
    const first = await call(holder, 'uac-tail-answer.xml', { HOLD_MS: '3000' });
    await answered(sub.id, 1);
    const second = await call(other, 'uac-tail-final.xml', { FINAL: '503' });
    await expectExit(t, second, `the other daemon refused the second call with 503: ${o.holder} holds the slot`);
    await expectExit(t, first, `the first call, on daemon ${o.holder}, completed`);
    await expectExit(t, uas, 'the supplier saw the first call only');
  };

  await t.test("a sub-account's concurrent-call limit counts the calls of both daemons", (t) =>
    oneSlot(t, { prefix: '4461', maxConcurrentCalls: 1, holder: 'A' }),
  );
  await t.test("a route's capacity counts the calls of both daemons", (t) =>
    oneSlot(t, { prefix: '4462', capacity: 1, holder: 'B' }),
  );

  await t.test("one key's rate limit is one window across both daemons", async (t) => {
    const key = (await services.keys.create(w.operator.accountId, { mode: 'live', scopes: [] })).secret;
    // Ask B once first: its own connection to Redis is up before the burst.
    t.equal((await apiB('GET', '/account', key)).status, 200);
    // The burst is sent at once, half to each daemon, so it fits in one rate window even on a
    // loaded machine; one that still crossed into the next second counted in two windows and is
    // sent again.
    for (let attempt = 1; ; attempt++) {
      await new Promise((r) => setTimeout(r, 1000));
      await startOfSecond();
      const second = Math.floor(Date.now() / 1000);
      const statuses = await Promise.all(
        Array.from({ length: 30 }, async (_, i) =>
          i % 2 === 0 ? (await w.api('GET', '/account', key)).status : (await apiB('GET', '/account', key)).status,
        ),
      );
      if (Math.floor(Date.now() / 1000) !== second && attempt < 10) continue;
      t.equal(statuses.filter((s) => s === 200).length, 20, `statuses: ${statuses.join(',')}`);
      t.equal(statuses.filter((s) => s === 429).length, 10, 'the rest refused, whichever daemon answered');
      break;
    }
  });

  await t.test('SMS sent through both daemons: both reach the supplier, each billed once', async (t) => {
    const smsc = await startPerlSmsc('two1', 'pw1');
    t.teardown(() => smsc.stop());
    const created = await w.api('POST', '/routes', w.seller.token, {
      type: 'sms',
      name: 'Shared SMSC',
      smsDelivery: { kind: 'smpp', host: '127.0.0.1', port: smsc.port, systemId: 'two1', password: 'pw1' },
    });
    t.equal(created.status, 201, created.text);
    const routeId = created.body.data.id as string;
    const rates = await w.api('POST', `/routes/${routeId}/rates`, w.seller.token, {
      format: 'csv',
      csv: 'prefix,destination,rate\n1,US test,0.010\n',
    });
    t.equal(rates.status, 200, rates.text);
    const buyer = await w.signUp();
    t.equal((await w.api('POST', '/purchases', buyer.token, { routeId })).status, 201);
    await services.ledger.topup({
      accountId: buyer.accountId,
      amount: '10.000000',
      source: 'card',
      postingKey: `fund-${buyer.accountId}`,
    });
    const key = (await services.keys.create(buyer.accountId, { mode: 'live', scopes: ['sms:send'] })).secret;
    const viaA = await w.api('POST', '/comms/sms', key, { to: '+12025550141', from: 'MyShop', message: 'via A' });
    t.equal(viaA.status, 200, viaA.text);
    const viaB = await apiB('POST', '/comms/sms', key, { to: '+12025550142', from: 'MyShop', message: 'via B' });
    t.equal(viaB.status, 200, viaB.text);
    await smsc.waitFor(/^SUBMIT 12025550141/);
    await smsc.waitFor(/^SUBMIT 12025550142/);
    // 0.010000 a segment plus the platform's 0.000500, once per message.
    const bal = await services.ledger.balanceOf(buyer.accountId);
    t.same([bal.balance, bal.held], ['9.979000', '0.000000']);
  });

  await t.test("B's crash and restart reconcile B's own call and leave A's live call alone", async (t) => {
    const onA = '446300000001';
    const onB = '446400000001';
    const uasA = await uasAnswer(t, onA, 'u1', 0, '60s');
    const uasB = await uasAnswer(t, onB);
    await w.route({ port: uasA.port, prefix: '4463', rate: '0.013700', increment: '1/1' });
    await w.route({ port: uasB.port, prefix: '4464', rate: '0.013700', increment: '1/1' });
    const subA = await w.sub({ fund: '5.000000', markupPct: '0' });
    const subB = await w.sub({ fund: '5.000000', markupPct: '0' });
    // B's call first, A's once B's is up: A's call must outlive B's kill and restart, which on a
    // loaded machine take seconds, and its hold counts from its own answer, not from B's.
    await uac(
      t,
      sipB,
      uacScenario('uac-tail-answer.xml', { HOLD_MS: '60000' }),
      onB,
      subB.sipUsername,
      subB.sipPassword,
    );
    await answered(subB.id, 1);
    const callA = await uac(
      t,
      sipA,
      uacScenario('uac-tail-answer.xml', { HOLD_MS: '12000' }),
      onA,
      subA.sipUsername,
      subA.sipPassword,
      'u1',
      '60s',
    );
    await answered(subA.id, 1);
    await b.kill();
    // B's last heartbeat as if 5 s after its answer: its call is billed to there.
    await sql`update calls set last_seen_at = answered_at + interval '5 seconds' where account_id = ${subB.id}`;

    const again = await startDaemon(loadConfig({ overrides: overridesB }), { log: pino({ level: 'silent' }) });
    t.teardown(() => again.stop());
    const [rb] = await sql<{ status: string; hangupCause: string; billableSeconds: number; cost: string }[]>`
      select status, hangup_cause, billable_seconds, cost::text from calls where account_id = ${subB.id}`;
    t.match(
      rb,
      { status: 'completed', hangupCause: 'crash', billableSeconds: 5, cost: '0.001308' },
      "B's call billed to its last heartbeat",
    );
    const [ra] = await sql<{ status: string; endedAt: Date | null }[]>`
      select status, ended_at from calls where account_id = ${subA.id}`;
    t.match(ra, { status: 'answered', endedAt: null }, "A's live call untouched by B's reconcile");
    t.equal((await services.ledger.balanceOf(subA.id)).held !== '0.000000', true, "A's hold still open");

    await expectExit(t, callA, "A's call completed normally");
    await expectExit(t, uasA, 'its supplier saw a normal BYE');
    const done = await eventually(async () => {
      const [r] = await sql<{ status: string; hangupCause: string; billableSeconds: number; cost: string }[]>`
        select status, hangup_cause, billable_seconds, cost::text from calls
        where account_id = ${subA.id} and ended_at is not null`;
      return r;
    }, 10_000);
    t.equal(done.status, 'completed');
    t.not(done.hangupCause, 'crash');
    const a = await services.ledger.balanceOf(subA.id);
    t.equal(a.held, '0.000000', "A's hold settled by A");
    t.equal(a.balance, new Decimal('5').minus(done.cost).toFixed(6), "A's sub-account paid exactly its call's cost");
    const bb = await services.ledger.balanceOf(subB.id);
    t.same([bb.balance, bb.held], ['4.998692', '0.000000']);
    const [open] = await sql<{ n: string }[]>`select count(*)::text as n from holds where status = 'open'`;
    t.equal(open?.n, '0', 'no hold left open');
    await checkInvariants(t as never, sql);
  });
});
