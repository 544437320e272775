// Number search benchmark: `npx tsx bench/numbers/search.bench.ts [numbers] [searches]`.
// On the machine's PostgreSQL (127.0.0.1:5432, user postgres; SVC_BENCH_PG_ADMIN_URL overrides) it
// creates a scratch database with every migration, loads `numbers` available numbers (default
// 1,000,000) in 2,000 catalogue groups of 40 countries, and times `searches` searches per match
// mode through the catalogue service (the daemon's own path: repo query, indexes of migration 220),
// printing p50, p99 and max per mode (goal: p99 < 20 ms), then drops the database.
import pino from 'pino';
import postgres from 'postgres';
import { connect } from '../../src/db/connection.js';
import { migrate } from '../../src/db/migrate.js';
import { createCatalog } from '../../src/modules/numbers/catalog.js';
import { systemClock } from '../../src/platform/clock.js';
import { runCleanups } from '../lib/cleanups.js';

const ADMIN_URL = process.env['SVC_BENCH_PG_ADMIN_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const NUMBERS = Number(process.argv[2] ?? 1_000_000);
const SEARCHES = Number(process.argv[3] ?? 500);
const GROUPS = 2000;
const log = pino({ level: 'silent' });

// Deterministic PRNG (mulberry32) so runs compare.
let seed = 7;
const rnd = (): number => {
  seed = (seed + 0x6d2b79f5) | 0;
  let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
  return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
};
const digits = (n: number) => Array.from({ length: n }, () => String(Math.floor(rnd() * 10))).join('');

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

async function main() {
  const cleanups: (() => unknown)[] = [];
  const name = `svc_bench_numbers_${process.pid}`;
  const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} });
  cleanups.push(() => admin.end({ timeout: 5 }));
  await admin.unsafe(`create database ${name}`);
  cleanups.push(() => admin.unsafe(`drop database if exists ${name} with (force)`));
  try {
    const url = new URL(ADMIN_URL);
    url.pathname = `/${name}`;
    const sql = connect({ url: url.toString(), max: 4, log, applicationName: 'bench-numbers' });
    cleanups.push(() => sql.end({ timeout: 5 }));
    await migrate(sql, log);

    const loadStart = Date.now();
    // Sellers, 40 countries, 2,000 groups with one SKU each, then the numbers, all in SQL.
    await sql`insert into accounts (id, email) select gen_random_uuid(), 'seller' || i || '@bench.test' from generate_series(1, 20) i`;
    await sql`
      insert into did_countries (id, name, country_code, prefix)
      select (10 + i)::text || '-c' || i, 'Country ' || i, chr(65 + i / 26) || chr(65 + i % 26), (10 + i)::text
      from generate_series(0, 39) i`;
    await sql`
      insert into did_groups (id, seller_id, country_id, city, area_prefix, type_id)
      select gen_random_uuid(), (select id from accounts order by id offset (g % 20) limit 1),
             (10 + g % 40)::text || '-c' || (g % 40), 'City ' || g, (100 + g / 40)::text,
             (array['local', 'national', 'mobile', 'toll_free'])[1 + g % 4]
      from generate_series(0, ${GROUPS - 1}) g`;
    await sql`
      insert into did_skus (id, group_id, channels, setup_price, monthly_price)
      select gen_random_uuid(), id, 2, 1.5, 1 + (random() * 5)::numeric(20, 6) from did_groups`;
    await sql`
      with g as (select g.id, g.seller_id, c.prefix || g.area_prefix as dial, row_number() over (order by g.id) - 1 as k
                 from did_groups g join did_countries c on c.id = g.country_id),
           n as (select i, lpad((floor(random() * 10000000))::bigint::text, 7, '0') as local_part
                 from generate_series(0, ${NUMBERS - 1}) i)
      insert into did_numbers (id, group_id, seller_id, number, local_part, vanity)
      select gen_random_uuid(), g.id, g.seller_id, g.dial || n.local_part, n.local_part,
             n.local_part ~ '(\\d)\\1{3}|000$'
      from n join g on g.k = n.i % ${GROUPS}
      on conflict (number) do nothing`;
    await sql`analyze`;
    const [count] = await sql<{ n: string }[]>`select count(*) as n from did_numbers`;
    console.log(`numbers loaded: ${count!.n} in ${GROUPS} groups (${((Date.now() - loadStart) / 1000).toFixed(1)} s)`);

    const catalog = createCatalog({ sql, clock: systemClock, log });
    const [country] = await sql<{ id: string }[]>`select id from did_countries order by id limit 1`;
    const modes = [
      { label: 'contains 4 digits', q: () => ({ pattern: digits(4), match: 'contains' as const }) },
      { label: 'starts_with 3 digits', q: () => ({ pattern: digits(3), match: 'starts_with' as const }) },
      { label: 'ends_with 4 digits', q: () => ({ pattern: digits(4), match: 'ends_with' as const }) },
      { label: 'exact 7 digits', q: () => ({ pattern: digits(7), match: 'exact' as const }) },
      { label: 'vanity in a country', q: () => ({ vanity: true, countryId: country!.id }) },
      { label: 'contains 3 + type', q: () => ({ pattern: digits(3), match: 'contains' as const, typeId: 'mobile' }) },
    ];
    for (const m of modes) {
      for (let i = 0; i < 20; i++) await catalog.search({ ...m.q(), limit: 50 }); // warm the cache
      const times: number[] = [];
      let hits = 0;
      for (let i = 0; i < SEARCHES; i++) {
        const t0 = process.hrtime.bigint();
        const r = await catalog.search({ ...m.q(), limit: 50 });
        times.push(Number(process.hrtime.bigint() - t0) / 1e6);
        hits += r.hits.length;
      }
      times.sort((a, b) => a - b);
      console.log(
        `search ${m.label}: p50 ${pct(times, 0.5).toFixed(2)} ms, p99 ${pct(times, 0.99).toFixed(2)} ms, ` +
          `max ${times[times.length - 1]!.toFixed(2)} ms, ${(hits / SEARCHES).toFixed(1)} hits/search over ${count!.n} numbers`,
      );
    }
  } finally {
    await runCleanups(cleanups);
  }
}

await main();
