import pino from 'pino';
import t from 'tap';
import { createPayerTermsCache } from '../../../src/modules/sip-trunks/payer-terms.js';
import type { CallEndedEvent } from '../../../src/telephony/sip/b2bua/index.js';
import { createWorld, eventually } from './world.js';

/**
 * The database side of trunk calls (the PostgreSQL time each call costs), driven through the trunk
 * policy the B2BUA calls, against the real database: calls ending together share one transaction
 * and still each get their CDR and exact charge; when the shared transaction fails, every call is
 * written again on its own, so one bad call costs nothing to the others. Payer terms and route
 * endpoints are cached and follow changes made behind the services' back.
 */
t.test('trunk call writes: batched, exact, and isolated when one fails', async (t) => {
  const w = await createWorld(t);
  const { sql } = w.d;
  const svc = w.d.modules.services;
  // The supplier is never dialled here: the policy is driven as the B2BUA would drive it.
  const { routeId } = await w.route({ port: 5999, prefix: '4415', rate: '0.013700' });
  // Every call holds for the longest call (7,200 s: 2.355 with the markup): enough for 12 at once.
  const sub = await w.sub({ markupPct: '25', fund: '50.000000' });
  const calls = svc.calls;

  const place = async (subAccountId = sub.id) => {
    const plan = await calls.policy.planCall({
      accountId: w.operator.accountId,
      subAccountId,
      to: '441500000001',
      from: '15550001',
      callId: 'c',
      sourceIp: '127.0.0.1',
    });
    if ('reject' in plan) throw new Error(JSON.stringify(plan.reject));
    const startedAt = new Date();
    const answeredAt = new Date(startedAt.getTime() + 10);
    await calls.policy.onAnswered!({ callGroupId: plan.callGroupId, callId: 'c', routeId, answeredAt, attempt: 1 });
    return { id: plan.callGroupId, startedAt, answeredAt };
  };
  const ended = (c: { id: string; startedAt: Date; answeredAt: Date }, seconds: number): CallEndedEvent => {
    const endedAt = new Date(c.answeredAt.getTime() + seconds * 1000);
    return {
      callGroupId: c.id,
      callId: 'c',
      attribution: { accountId: w.operator.accountId, subAccountId: sub.id } as never,
      to: '441500000001',
      from: '15550001',
      startedAt: c.startedAt,
      answeredAt: c.answeredAt,
      endedAt,
      durationMs: seconds * 1000,
      sipCode: 200,
      hangupCause: 'caller-bye',
      routeId,
      attempts: [
        {
          callGroupId: c.id,
          index: 0,
          routeId,
          endpoint: { host: '127.0.0.1', port: 5999, transport: 'udp' },
          startedAt: c.startedAt,
          endedAt,
          sipCode: 200,
          reason: 'OK',
          outcome: 'answered',
          ringing: true,
          pddMs: 10,
        },
      ],
    };
  };
  const balance = async () => {
    const b = await svc.ledger.balanceOf(sub.id);
    return [b.balance, b.held];
  };

  await t.test('calls ending together: each has its row, CDR and charge; the money is exact', async (t) => {
    const placed = await Promise.all(Array.from({ length: 12 }, () => place()));
    const [answered] = await sql<
      { n: number }[]
    >`select count(*)::int as n from calls where id = any(${placed.map((p) => p.id)}::uuid[]) and status = 'answered' and answered_at is not null`;
    t.equal(answered?.n, 12, 'answered marks written (batched)');
    // 6 s at 0.0137 + 0.0020 platform fee = 0.00157, plus the 25% markup: 0.0019625 → 0.001963 per call.
    await Promise.all(placed.map((p) => calls.policy.onCallEnded(ended(p, 6))));
    const rows = await sql<{ status: string; cost: string; cdrs: number; cdrCost: string }[]>`
      select c.status, c.cost::text, (select count(*)::int from cdrs d where d.call_group_id = c.id) as cdrs,
             (select d.buyer_cost::text from cdrs d where d.call_group_id = c.id) as cdr_cost
      from calls c where c.id = any(${placed.map((p) => p.id)}::uuid[])`;
    t.equal(rows.length, 12);
    t.ok(
      rows.every((r) => r.status === 'completed' && r.cost === '0.001963' && r.cdrs === 1 && r.cdrCost === '0.001963'),
      JSON.stringify(rows.slice(0, 2)),
    );
    t.same(await balance(), [(50 - 12 * 0.001963).toFixed(6), '0.000000']);
    const [tx] = await sql<
      { n: number }[]
    >`select count(distinct xmin::text)::int as n from cdrs where call_group_id = any(${placed.map((p) => p.id)}::uuid[])`;
    t.equal(tx?.n, 1, 'written in one transaction');
    t.same(calls.liveCallIds(), [], 'nothing left live');
  });

  await t.test(
    'a batch of endings raises the low-balance event once, from the markup that crossed the line',
    async (t) => {
      // The default sub-account line is 5.000000. Two 6 s calls: both settlements (2 × 0.001570)
      // leave 5.000360, the first markup (0.000393) crosses to 4.999967, the second stays below.
      const low = await w.sub({ markupPct: '25', fund: '5.003500' });
      const placed = await Promise.all([place(low.id), place(low.id)]);
      const endedFor = (c: { id: string; startedAt: Date; answeredAt: Date }) => ({
        ...ended(c, 6),
        attribution: { accountId: w.operator.accountId, subAccountId: low.id } as never,
      });
      await Promise.all(placed.map((p) => calls.policy.onCallEnded(endedFor(p))));
      const b = await svc.ledger.balanceOf(low.id);
      t.same([b.balance, b.held], ['4.999574', '0.000000'], 'both calls billed, markups included');
      const evs = await sql<{ event: string; data: { subAccountId: string; balance: string } }[]>`
      select event, data from events where account_id = ${w.operator.accountId} and event = 'sub_account.balance_low' and data ->> 'subAccountId' = ${low.id}`;
      t.same(
        evs.map((e) => e.data.balance),
        ['4.999967'],
        'once, at the markup that crossed it',
      );
    },
  );

  await t.test('one call that cannot settle does not take the others down with it', async (t) => {
    const before = await balance();
    const placed = await Promise.all(Array.from({ length: 6 }, () => place()));
    // Its hold released behind the call's back: its settlement fails (SVC02), and with it the batch.
    const [bad] = await sql<{ holdId: string }[]>`select hold_id from calls where id = ${placed[0]!.id}`;
    await svc.ledger.release({ postingKey: `test-release-${placed[0]!.id}`, holdId: bad!.holdId });
    await Promise.all(placed.map((p) => calls.policy.onCallEnded(ended(p, 6))));
    const rows = await sql<{ id: string; status: string; endedAt: Date | null }[]>`
      select id, status, ended_at from calls where id = any(${placed.map((p) => p.id)}::uuid[])`;
    const byId = new Map(rows.map((r) => [r.id, r]));
    t.equal(byId.get(placed[0]!.id)?.endedAt, null, 'the bad one is left open for the orphan reconcile');
    t.ok(
      placed.slice(1).every((p) => byId.get(p.id)?.status === 'completed'),
      'the five others completed',
    );
    const [cdrs] = await sql<
      { n: number }[]
    >`select count(*)::int as n from cdrs where call_group_id = any(${placed.map((p) => p.id)}::uuid[])`;
    t.equal(cdrs?.n, 5, 'a CDR for each written call, none for the bad one');
    const [tx] = await sql<
      { n: number }[]
    >`select count(distinct xmin::text)::int as n from cdrs where call_group_id = any(${placed.map((p) => p.id)}::uuid[])`;
    t.equal(tx?.n, 5, 'each in a transaction of its own after the shared one failed');
    t.same(await balance(), [(Number(before[0]) - 5 * 0.001963).toFixed(6), '0.000000']);
    // Closed so the ledger stays balanced for the next tests (a crash reconcile would do the same).
    await sql`update calls set ended_at = now(), status = 'failed' where id = ${placed[0]!.id}`;
  });

  await t.test('a refused hold with a stale balance hint reads the balance and holds what it affords', async (t) => {
    // The longest call (7,200 s at 0.0157/min) holds 1.884: after the first hold the hint (2.116) still pays for another.
    const poor = await w.sub({ markupPct: '0', fund: '4.000000' });
    const plan1 = await calls.policy.planCall({
      accountId: w.operator.accountId,
      subAccountId: poor.id,
      to: '441500000001',
      from: '1',
      callId: 'p1',
      sourceIp: '127.0.0.1',
    });
    t.notOk('reject' in plan1);
    // Spent elsewhere: the hint from the first hold now says far more than there is.
    await svc.ledger.charge({ postingKey: `spend-${poor.id}`, accountId: poor.id, amount: '1.500000' });
    const plan2 = await calls.policy.planCall({
      accountId: w.operator.accountId,
      subAccountId: poor.id,
      to: '441500000001',
      from: '1',
      callId: 'p2',
      sourceIp: '127.0.0.1',
    });
    if ('reject' in plan2) throw new Error(JSON.stringify(plan2.reject));
    t.ok(
      plan2.maxDurationSeconds > 0 && plan2.maxDurationSeconds < w.d.config.sip.max_call_seconds,
      `held for what is left (${plan2.maxDurationSeconds} s)`,
    );
    for (const p of [plan1, plan2]) {
      if (!('reject' in p))
        await calls.policy.onCallEnded({
          ...ended({ id: p.callGroupId, startedAt: new Date(), answeredAt: new Date() }, 0),
          answeredAt: null,
          durationMs: 0,
          sipCode: 487,
          hangupCause: 'caller-cancel',
          routeId: null,
          attempts: [],
        });
    }
    const b = await svc.ledger.balanceOf(poor.id);
    t.same([b.balance, b.held], ['2.500000', '0.000000']);
  });

  await t.test(
    'holds of calls placed together share transactions; the one the balance cannot cover is refused alone',
    async (t) => {
      const cancel = (callGroupId: string) =>
        calls.policy.onCallEnded({
          ...ended({ id: callGroupId, startedAt: new Date(), answeredAt: new Date() }, 0),
          answeredAt: null,
          durationMs: 0,
          sipCode: 487,
          hangupCause: 'caller-cancel',
          routeId: null,
          attempts: [],
        });
      const planFor = (subAccountId: string, i: number) =>
        calls.policy.planCall({
          accountId: w.operator.accountId,
          subAccountId,
          to: '441500000001',
          from: '1',
          callId: `b${i}`,
          sourceIp: '127.0.0.1',
        });
      // The longest call (7,200 s at 0.0157/min) holds 1.884000: 16.000000 pays for eight of them.
      const many = await w.sub({ markupPct: '0', fund: '16.000000' });
      const plans = await Promise.all(Array.from({ length: 8 }, (_, i) => planFor(many.id, i)));
      const granted = plans.flatMap((p) => ('reject' in p ? [] : [p.callGroupId]));
      t.equal(granted.length, 8, 'all eight held');
      const [holds] = await sql<{ n: number; tx: number; sum: string }[]>`
      select count(*)::int as n, count(distinct h.xmin::text)::int as tx, sum(h.amount)::text as sum
      from holds h join calls c on c.hold_id = h.id where c.id = any(${granted}::uuid[])`;
      t.equal(holds?.n, 8, 'each call row has its hold');
      t.ok(holds!.tx < 8, `eight holds in ${holds?.tx} transactions`);
      t.equal(holds?.sum, '15.072000');
      await Promise.all(granted.map(cancel));

      // Three at once against 4.000000: two holds fit (3.768000), the third is refused on its own.
      const poor = await w.sub({ markupPct: '0', fund: '4.000000' });
      const three = await Promise.all([0, 1, 2].map((i) => planFor(poor.id, 10 + i)));
      const refused = three.filter((p) => 'reject' in p);
      t.equal(refused.length, 1, 'one refused');
      t.same(refused[0], { reject: { status: 402, reason: 'Insufficient balance' } });
      const b = await svc.ledger.balanceOf(poor.id);
      t.same([b.balance, b.held], ['4.000000', '3.768000'], 'the two others held');
      await Promise.all(three.flatMap((p) => ('reject' in p ? [] : [cancel(p.callGroupId)])));
      const after = await svc.ledger.balanceOf(poor.id);
      t.same([after.balance, after.held], ['4.000000', '0.000000'], 'released when they end unanswered');
    },
  );

  await t.test('payer terms are cached and follow changes made in SQL', async (t) => {
    const seen: string[] = [];
    const cache = createPayerTermsCache({
      sql,
      log: pino({ level: 'silent' }),
      load: (id) => calls.repo.payerTerms(id),
      onNotify: (p) => seen.push(p),
    });
    await cache.start();
    t.teardown(() => cache.stop());
    t.match(await cache.get(sub.id), { status: 'active', markupPct: '25.000' });
    await sql`update sub_accounts set markup_pct = 30 where account_id = ${sub.id}`;
    await eventually(async () => seen.includes(`a:${sub.id}`));
    t.match(await cache.get(sub.id), { markupPct: '30.000' }, 'markup change seen');
    await sql`update accounts set status = 'suspended' where id = ${sub.id}`;
    await eventually(async () => seen.filter((p) => p === `a:${sub.id}`).length === 2);
    t.match(await cache.get(sub.id), { status: 'suspended' }, 'suspension seen');
    const refused = await calls.policy.planCall({
      accountId: w.operator.accountId,
      subAccountId: sub.id,
      to: '441500000001',
      from: '1',
      callId: 'x',
      sourceIp: '127.0.0.1',
    });
    t.same(refused, { reject: { status: 403, reason: 'Account suspended' } }, 'and by the daemon’s own cache');
    await sql`update accounts set status = 'active' where id = ${sub.id}`;
    await sql`update sub_accounts set markup_pct = null where account_id = ${sub.id}`;
    await sql`update application_settings set default_markup_pct = 7 where operator_id = ${w.operator.accountId}`;
    await eventually(async () => seen.includes(`o:${w.operator.accountId}`));
    t.match(await cache.get(sub.id), { markupPct: null, defaultMarkupPct: '7.000' }, 'operator default seen');
  });

  await t.test('route endpoints are cached and follow changes', async (t) => {
    const ep = () => svc.routes.endpointsFor([routeId]).then((l) => l.map((e) => e.port));
    t.same(await ep(), [5999]);
    await svc.routes.addEndpoint(w.seller.accountId, {
      routeId,
      host: '127.0.0.1',
      port: 5998,
      transport: 'udp',
      priority: 2,
    });
    t.same(await ep(), [5999, 5998], 'an endpoint added through the service: at once');
    await sql`update route_endpoints set port = 5997 where route_id = ${routeId} and port = 5998`;
    t.same(
      await eventually(async () => {
        const l = await ep();
        return l.includes(5997) ? l : null;
      }),
      [5999, 5997],
      'a change made in SQL: through NOTIFY',
    );
  });
});
