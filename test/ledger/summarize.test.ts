import t, { type Test } from 'tap';
import pino from 'pino';
import { loadConfig, type DeepPartial } from '../../src/config/load.js';
import type { Config } from '../../src/config/schema.js';
import type { Sql } from '../../src/db/connection.js';
import { buildModules } from '../../src/modules/index.js';
import { systemClock } from '../../src/platform/clock.js';
import { createHealthRegistry } from '../../src/platform/health.js';
import { createTestDatabase } from '../helpers/db.js';
import { ledgerFor, makeAccounts } from './helpers.js';

// 111: the entries' posting index is summarized by ledger_summarize_entries. Autovacuum is off on
// entries here, so nothing else summarizes it (no VACUUM) and every figure below is the function's.

/** `n` charges in one statement; returns the last one's posting id. */
async function charges(sql: Sql, buyer: string, seller: string, from: number, n: number): Promise<string> {
  const rows = await sql<{ p: string }[]>`
    select (ledger_charge('sum-' || i, ${buyer}::uuid, ${seller}::uuid, 0.010000, 0.001000, false,
                          'summarize test', 'sms', null, null, now()) ->> 'postingId') as p
      from generate_series(${from}::int, ${from + n - 1}::int) i`;
  return rows.at(-1)!.p;
}

/** Heap pages a look-up of one posting's entries reads through the BRIN index. */
async function pagesRead(sql: Sql, postingId: string): Promise<number> {
  return sql.begin(async (tx) => {
    await tx`set local enable_seqscan = off`;
    const [row] = await tx.unsafe<{ 'QUERY PLAN': { Plan: Record<string, unknown> }[] }[]>(
      `explain (analyze, format json) select * from entries where posting_id = '${postingId}'::uuid`,
    );
    const plan = row!['QUERY PLAN'][0]!.Plan;
    if (plan['Node Type'] !== 'Bitmap Heap Scan') throw new Error(`unexpected plan ${String(plan['Node Type'])}`);
    return Number(plan['Lossy Heap Blocks'] ?? 0) + Number(plan['Exact Heap Blocks'] ?? 0);
  });
}

async function tableBlocks(sql: Sql): Promise<number> {
  const [row] = await sql<
    { n: number }[]
  >`select (pg_relation_size('entries') / current_setting('block_size')::bigint)::int as n`;
  return row!.n;
}

async function world(t: Test) {
  const { sql } = await createTestDatabase(t);
  await sql`alter table entries set (autovacuum_enabled = off)`;
  const [buyer, seller] = await makeAccounts(sql, 2);
  await ledgerFor(sql).topup({ accountId: buyer!, amount: '100000.000000', source: 'wire', postingKey: 'fund' });
  return { sql, buyer: buyer!, seller: seller! };
}

t.test(
  'a posting look-up reads one range once the ranges are summarized, and only new ranges are summarized later',
  async (t) => {
    const { sql, buyer, seller } = await world(t);
    const ledger = ledgerFor(sql);
    const first = await charges(sql, buyer, seller, 1, 1500);
    const blocks = await tableBlocks(sql);
    t.ok(blocks >= 64, `entries span several 16-page ranges (${blocks} pages)`);
    const before = await pagesRead(sql, first);
    // The first range has had a summary since the index was built on the empty table (013).
    t.ok(
      before >= blocks - 17,
      `unsummarized, a look-up reads every page past the first range (${before} of ${blocks})`,
    );

    const next = await ledger.summarizeEntries(null);
    t.equal(next, blocks, 'returns the table size in blocks: where the next call starts');
    t.ok((await pagesRead(sql, first)) <= 32, 'summarized, a look-up reads at most two ranges');

    const later = await charges(sql, buyer, seller, 1501, 1500);
    const grown = await tableBlocks(sql);
    t.ok((await pagesRead(sql, later)) >= grown - next - 16, 'the ranges written since are not summarized yet');
    t.equal(await ledger.summarizeEntries(next), grown);
    t.ok(
      (await pagesRead(sql, later)) <= 32,
      'summarized from the last call on, a new posting reads at most two ranges',
    );
    t.ok((await pagesRead(sql, first)) <= 32, 'and an old one still one range');
    const [row] = await sql<{ n: number }[]>`select count(*)::int as n from entries where posting_id = ${later}::uuid`;
    t.equal(row!.n, 4, 'the look-up still finds all four entries of the posting (charge, credit, fee, platform fee)');
  },
);

t.test('the billing module summarizes every summarize_seconds while it runs', async (t) => {
  const { sql, buyer, seller } = await world(t);
  const config = loadConfig({
    overrides: { log: { level: 'silent' }, billing: { summarize_seconds: 1 } } as DeepPartial<Config>,
  });
  const modules = await buildModules({
    config,
    sql,
    log: pino({ level: 'silent' }),
    clock: systemClock,
    redis: null,
    health: createHealthRegistry(),
  });
  const billing = modules.list.find((m) => m.name === 'billing')!;
  const last = await charges(sql, buyer, seller, 1, 1500);
  t.ok((await pagesRead(sql, last)) > 32, 'not summarized before the module runs');
  await billing.start?.();
  t.teardown(() => billing.stop?.());
  const deadline = Date.now() + 10_000;
  while ((await pagesRead(sql, last)) > 32 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  t.ok((await pagesRead(sql, last)) <= 32, 'summarized within a few ticks');
});
