// Measured route quality reads at volume: `node --import tsx bench/rating/quality.bench.ts [routes] [cdrsPerRoute]`.
// Prints one line per measure. Anchor: the whole-history CDR scan the day summaries replaced,
// run in the same process on the same data (the `measured_*` listing sorts read every route at once).
import { createTestDatabase } from '../../test/helpers/db.js';
import { LATEST_CALLS, createCdrQualitySource } from '../../src/modules/marketplace/listings/quality.js';
import type { Sql } from '../../src/db/connection.js';
import { newId } from '../../src/platform/ids.js';

const ROUTES = Number(process.argv[2] ?? 500);
const PER_ROUTE = Number(process.argv[3] ?? 2000);
const REPEATS = 5;
const DAY = 86_400_000;

const teardowns: (() => unknown)[] = [];
const t = { teardown: (fn: () => unknown) => void teardowns.push(fn) };

/** The replaced read: every window by a scan of all of a route's legs. */
const scan = (sql: Sql, ids: string[], now: Date) => sql`
  with c as (
    select route_id, account_id, created_at, duration_seconds, pdd_ms,
      (status in ('answered', 'completed') or sip_code between 200 and 299) as answered,
      row_number() over (partition by route_id order by created_at desc) as rn
    from cdrs
    where route_id = any(${sql.array(ids)}::uuid[]) and kind = 'voice' and not is_probe and not simulated and created_at <= ${now}
  )
  select c.route_id, w.win, count(*)::int as calls, count(distinct c.account_id)::int as buyers,
    count(*) filter (where c.answered)::int as answered, percentile_cont(0.5) within group (order by c.pdd_ms) as pdd
  from c cross join lateral (values
    ('7d', c.created_at > ${new Date(now.getTime() - 7 * DAY)}),
    ('30d', c.created_at > ${new Date(now.getTime() - 30 * DAY)}),
    ('latest', c.rn <= ${LATEST_CALLS})) as w(win, inside)
  where w.inside group by c.route_id, w.win`;

try {
  const { sql } = await createTestDatabase(t);
  const buyers = Array.from({ length: 20 }, () => newId());
  for (const id of buyers) await sql`insert into accounts (id, email) values (${id}, ${`${id}@bench.test`})`;
  const routes = Array.from({ length: ROUTES }, () => newId());
  const now = new Date();
  // CDRs spread over 90 days; written in batches of routes, through the triggers that keep the summaries.
  const t0 = performance.now();
  for (let i = 0; i < ROUTES; i += 50) {
    await sql`
      insert into cdrs (id, account_id, kind, route_id, status, sip_code, duration_seconds, pdd_ms, created_at)
      select gen_random_uuid(), (${sql.array(buyers)}::uuid[])[1 + (g % 20)], 'voice', r,
        case when g % 3 = 0 then 'busy' else 'completed' end, case when g % 3 = 0 then 486 else 200 end,
        g % 300, 500 + (g * 37) % 3000, ${now}::timestamptz - (g % 90) * interval '1 day' - (g % 86400) * interval '1 second'
      from unnest(${sql.array(routes.slice(i, i + 50))}::uuid[]) as r, generate_series(1, ${PER_ROUTE}) as g`;
  }
  const insertMs = performance.now() - t0;
  const total = ROUTES * PER_ROUTE;
  console.log(`routes=${ROUTES} cdrs_per_route=${PER_ROUTE} total_cdrs=${total}`);
  console.log(`cdr_insert_rows_per_second_with_summary_triggers=${Math.round(total / (insertMs / 1000))}`);
  await sql`analyze`;

  const time = async (fn: () => Promise<unknown>): Promise<number> => {
    await fn(); // warm: plans and buffers
    const t1 = performance.now();
    for (let i = 0; i < REPEATS; i++) await fn();
    return (performance.now() - t1) / REPEATS;
  };
  const anchorMs = await time(() => scan(sql, routes, now));
  console.log(`anchor_cdr_scan_all_routes_ms=${anchorMs.toFixed(1)}`);
  const { quality } = createCdrQualitySource({ sql, clock: { now: () => now }, ttlMs: 0 });
  const summaryMs = await time(() => quality(routes));
  console.log(
    `summary_read_all_routes_ms=${summaryMs.toFixed(1)} speedup_vs_anchor=${(anchorMs / summaryMs).toFixed(1)}`,
  );
  const one = routes.slice(0, 1);
  const anchorOneMs = await time(() => scan(sql, one, now));
  const oneMs = await time(() => quality(one));
  console.log(
    `one_route_ms scan=${anchorOneMs.toFixed(2)} summary=${oneMs.toFixed(2)} speedup_vs_anchor=${(anchorOneMs / oneMs).toFixed(1)}`,
  );
  // What the triggers add to the call path's write: one CDR per statement, triggers on and off.
  const single = async (): Promise<number> => {
    const t1 = performance.now();
    for (let i = 0; i < 500; i++) {
      await sql`insert into cdrs (id, account_id, kind, route_id, status, sip_code, duration_seconds, pdd_ms)
        values (${newId()}, ${buyers[i % 20]!}, 'voice', ${routes[i % ROUTES]!}, 'completed', 200, 60, 900)`;
    }
    return (performance.now() - t1) / 500;
  };
  await single(); // warm
  const withMs = await single();
  await sql`alter table cdrs disable trigger user`;
  const withoutMs = await single();
  await sql`alter table cdrs enable trigger user`;
  console.log(
    `single_cdr_insert_ms with_triggers=${withMs.toFixed(3)} without=${withoutMs.toFixed(3)} ratio=${(withMs / withoutMs).toFixed(2)}`,
  );
  const [size] = await sql<{ cdrs: string; summaries: string }[]>`
    select pg_size_pretty(pg_total_relation_size('cdrs')) as cdrs,
      pg_size_pretty(pg_total_relation_size('route_quality_daily') + pg_total_relation_size('route_pdd_daily')) as summaries`;
  console.log(`table_size cdrs=${size?.cdrs} summaries=${size?.summaries}`);
} finally {
  for (const fn of teardowns.reverse()) await fn();
}
