import t from 'tap';
import { createTestDatabase } from '../../../helpers/db.js';
import { createManualClock } from '../../../../src/platform/clock.js';
import { newId } from '../../../../src/platform/ids.js';
import type { Sql } from '../../../../src/db/connection.js';
import type { ReservedSql } from 'postgres';
import { LATEST_CALLS, createCdrQualitySource } from '../../../../src/modules/marketplace/listings/quality.js';
import { measuredFrom } from '../../../../src/modules/marketplace/routing/smart-routing.js';
import type { MeasuredQuality, WindowStats } from '../../../../src/modules/marketplace/routing/smart-routing.js';

const DAY = 86_400_000;
// Mid-afternoon, so each window's first day is partly inside and partly outside the window.
const NOW = new Date('2026-11-22T15:37:12Z');

// Deterministic PRNG (mulberry32) so a failure repeats.
const prng = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
  return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
};

/** `n` reserved connections whose backends write different summary slots (pid modulo 16, migration 319). */
async function slottedConnections(sql: Sql, n: number): Promise<ReservedSql[]> {
  const kept: ReservedSql[] = [];
  const spare: ReservedSql[] = [];
  const slots = new Set<number>();
  while (kept.length < n) {
    const conn = await sql.reserve();
    const [row] = await conn<{ slot: number }[]>`select (pg_backend_pid() % 16)::int as slot`;
    if (slots.has(row!.slot)) spare.push(conn);
    else {
      slots.add(row!.slot);
      kept.push(conn);
    }
  }
  for (const conn of spare) conn.release();
  return kept;
}

/**
 * The reference: the whole-history CDR scan the summaries replaced, read straight from `cdrs`
 * (every window, including the latest 1,000 calls, by row_number over all of a route's legs).
 */
async function reference(sql: Sql, ids: string[], now: Date): Promise<Map<string, MeasuredQuality | null>> {
  const answered = sql`(status in ('answered', 'completed') or sip_code between 200 and 299)`;
  const rows = await sql<
    {
      routeId: string;
      win: WindowStats['window'];
      calls: number;
      buyers: number;
      answered: number;
      effective: number;
      seconds: string;
      pdd: number | null;
    }[]
  >`
    with c as (
      select route_id, account_id, created_at, duration_seconds, pdd_ms, ${answered} as answered,
        (${answered} or status in ('busy', 'no_answer', 'declined') or sip_code in (486, 487, 600, 603)) as effective,
        row_number() over (partition by route_id order by created_at desc) as rn
      from cdrs
      where route_id = any(${sql.array(ids)}::uuid[]) and kind = 'voice' and not is_probe and not simulated and created_at <= ${now}
    )
    select c.route_id, w.win, count(*)::int as calls, count(distinct c.account_id)::int as buyers,
      count(*) filter (where c.answered)::int as answered, count(*) filter (where c.effective)::int as effective,
      coalesce(sum(c.duration_seconds) filter (where c.answered), 0)::text as seconds,
      percentile_cont(0.5) within group (order by c.pdd_ms) as pdd
    from c cross join lateral (values
      ('7d', c.created_at > ${new Date(now.getTime() - 7 * DAY)}),
      ('30d', c.created_at > ${new Date(now.getTime() - 30 * DAY)}),
      ('latest', c.rn <= ${LATEST_CALLS})) as w(win, inside)
    where w.inside
    group by c.route_id, w.win`;
  const out = new Map<string, MeasuredQuality | null>();
  for (const id of ids) {
    const windows = (['7d', '30d', 'latest'] as const).flatMap((win) => {
      const r = rows.find((x) => x.routeId === id && x.win === win);
      return r === undefined
        ? []
        : [
            {
              window: win,
              calls: r.calls,
              buyers: r.buyers,
              answered: r.answered,
              networkEffective: r.effective,
              totalAnsweredSeconds: Number(r.seconds),
              medianPddMs: r.pdd === null ? 0 : Math.round(Number(r.pdd)),
            },
          ];
    });
    out.set(id, measuredFrom(windows));
  }
  return out;
}

const STATUSES: [string, number | null][] = [
  ['completed', 200],
  ['answered', 200],
  ['busy', 486],
  ['no_answer', 487],
  ['declined', 603],
  ['failed', 503],
  ['failed', 480],
  ['cancelled', null],
  [null as unknown as string, 200],
];

t.test('route quality from the day summaries equals the whole-history CDR scan on random CDRs', async (t) => {
  const { sql } = await createTestDatabase(t);
  const buyers = Array.from({ length: 4 }, () => newId());
  for (const id of buyers) await sql`insert into accounts (id, email) values (${id}, ${`${id}@quality.test`})`;

  for (const seed of [1, 2, 3]) {
    const rnd = prng(seed);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
    const routes = Array.from({ length: 12 }, () => newId());
    const legs = (routeId: string, n: number, minAge: number, maxAge: number, buyerCount: number) =>
      Array.from({ length: n }, () => {
        const [status, sip] = pick(STATUSES);
        return {
          id: newId(),
          account_id: buyers[Math.floor(rnd() * buyerCount)]!,
          kind: rnd() < 0.05 ? 'sms' : 'voice',
          route_id: routeId,
          created_at: new Date(NOW.getTime() - (minAge + rnd() * (maxAge - minAge)) * DAY),
          status,
          sip_code: sip,
          duration_seconds: rnd() < 0.1 ? null : Math.floor(rnd() * 300),
          pdd_ms: rnd() < 0.2 ? null : pick([800, 1000, 1200, 2500, Math.floor(rnd() * 5000)]),
          is_probe: rnd() < 0.05,
          simulated: rnd() < 0.05,
        };
      });
    const all = [
      ...routes.slice(0, 8).flatMap((r, i) => legs(r, Math.floor(rnd() * 140), 0, i < 4 ? 10 : 45, 1 + (i % 4))),
      // Windows around their edges: 7 and 30 days ago to within a day.
      ...legs(routes[8]!, 70, 6.5, 7.5, 3),
      ...legs(routes[9]!, 70, 29.5, 30.5, 3),
      // Over 1,000 calls, all older than 30 days: only the latest-1,000 window can qualify.
      ...legs(routes[10]!, 1400, 31, 90, 3),
      // Over 1,000 calls from one buyer: nothing qualifies.
      ...legs(routes[11]!, 1300, 31, 90, 1),
    ];
    // Several statements of many rows each, as the call path writes batches, from connections in
    // different summary slots (migration 319), and the updates and deletes from a third: a slot's
    // counts then go negative and only the sums over slots are right.
    const [first, second, third] = await slottedConnections(sql, 3);
    for (let i = 0; i < all.length; i += 500) {
      const conn = i % 1000 === 0 ? first! : second!;
      await conn`insert into cdrs ${sql(all.slice(i, i + 500))}`;
    }
    // The summaries follow updates and deletes too.
    const changed = all.filter(() => rnd() < 0.05).map((c) => c.id);
    await third!`update cdrs set status = 'completed', sip_code = 200, duration_seconds = 61 where id = any(${sql.array(changed)}::uuid[])`;
    const gone = all.filter(() => rnd() < 0.03).map((c) => c.id);
    await third!`delete from cdrs where id = any(${sql.array(gone)}::uuid[])`;
    for (const c of [first, second, third]) c!.release();
    const [spread] = await sql<{ n: number }[]>`select count(distinct slot)::int as n from route_quality_daily`;
    t.ok(Number(spread?.n) >= 3, `seed ${seed}: the summaries are spread over slots`);

    const clock = createManualClock(NOW);
    const { quality } = createCdrQualitySource({ sql, clock, ttlMs: 0 });
    const want = await reference(sql, routes, NOW);
    const got = await quality(routes);
    t.same(Object.fromEntries(got), Object.fromEntries(want), `seed ${seed}: every route as the CDR scan`);
    t.ok([...want.values()].filter((m) => m !== null).length >= 3, `seed ${seed}: some routes qualify`);
    t.match(
      want.get(routes[10]!),
      { window: 'latest', calls: LATEST_CALLS },
      'the latest 1,000 calls of a busy old route',
    );
    t.equal(want.get(routes[11]!), null, 'many calls from one buyer never qualify');

    // A day later the windows have moved; the summaries need no refresh.
    clock.advance(DAY + 3_600_000);
    t.same(
      Object.fromEntries(await quality(routes)),
      Object.fromEntries(await reference(sql, routes, clock.now())),
      `seed ${seed}: a day later`,
    );
  }

  const drift = await sql`
    select route_id, day, account_id, sum(calls)::int, sum(answered)::int, sum(effective)::int, sum(answered_seconds)::bigint
    from route_quality_daily group by 1, 2, 3
    having sum(calls) <> 0 or sum(answered) <> 0 or sum(effective) <> 0 or sum(answered_seconds) <> 0
    except
    select route_id, (created_at at time zone 'UTC')::date, account_id, count(*)::int,
      count(*) filter (where coalesce(status in ('answered', 'completed') or sip_code between 200 and 299, false))::int,
      count(*) filter (where coalesce(status in ('answered', 'completed', 'busy', 'no_answer', 'declined') or sip_code between 200 and 299 or sip_code in (486, 487, 600, 603), false))::int,
      coalesce(sum(duration_seconds) filter (where coalesce(status in ('answered', 'completed') or sip_code between 200 and 299, false)), 0)::bigint
    from cdrs where kind = 'voice' and not is_probe and not simulated and route_id is not null group by 1, 2, 3`;
  t.same(drift, [], 'the day summaries equal a recount of cdrs');
  await sql`truncate cdrs`;
  const [left] = await sql<
    { n: number }[]
  >`select (select count(*) from route_quality_daily) + (select count(*) from route_pdd_daily) as n`;
  t.equal(Number(left?.n), 0, 'emptying cdrs empties the summaries');
});

// Migration 337: a statement with no voice leg to count skips the summary upserts; one whose rows
// turn into, or stop being, counted voice legs still moves the summaries.
t.test('statements without counted voice legs leave the summaries as a recount of cdrs', async (t) => {
  const { sql } = await createTestDatabase(t);
  const buyer = newId();
  await sql`insert into accounts (id, email) values (${buyer}, ${`${buyer}@quality.test`})`;
  const route = newId();
  const leg = (o: Partial<{ kind: string; route_id: string | null; is_probe: boolean; simulated: boolean }>) => ({
    id: newId(),
    account_id: buyer,
    kind: 'sms',
    route_id: route,
    created_at: NOW,
    status: 'completed',
    sip_code: 200,
    duration_seconds: 30,
    pdd_ms: 900,
    is_probe: false,
    simulated: false,
    ...o,
  });
  const summaries = () =>
    sql<{ calls: number; pdd: number }[]>`
      select (select coalesce(sum(calls), 0)::int from route_quality_daily) as calls,
             (select coalesce(sum(calls), 0)::int from route_pdd_daily) as pdd`;
  const uncounted = [
    leg({}),
    leg({}),
    leg({ kind: 'voice', is_probe: true }),
    leg({ kind: 'voice', simulated: true }),
    leg({ kind: 'voice', route_id: null }),
  ];
  await sql`insert into cdrs ${sql(uncounted)}`;
  t.same(await summaries(), [{ calls: 0, pdd: 0 }], 'SMS, probe, simulated and route-less legs count nothing');

  await sql`update cdrs set kind = 'voice' where id = ${uncounted[0]!.id}`;
  t.same(await summaries(), [{ calls: 1, pdd: 1 }], 'an SMS row made a voice leg is counted');
  await sql`update cdrs set is_probe = true where id = ${uncounted[0]!.id}`;
  t.same(await summaries(), [{ calls: 0, pdd: 0 }], 'and taken off when it stops being one');

  const voice = leg({ kind: 'voice' });
  await sql`insert into cdrs ${sql([voice, leg({})])}`;
  t.same(await summaries(), [{ calls: 1, pdd: 1 }], 'a mixed batch counts its voice leg');
  await sql`delete from cdrs where kind = 'sms'`;
  t.same(await summaries(), [{ calls: 1, pdd: 1 }], 'deleting SMS rows leaves it');
  await sql`delete from cdrs where id = ${voice.id}`;
  const [left] = await sql<{ n: number }[]>`
    select (select count(*) from route_quality_daily) + (select count(*) from route_pdd_daily) as n`;
  t.equal(Number(left?.n), 0, 'deleting the voice leg empties the summaries');
});
