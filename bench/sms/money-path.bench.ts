// The SMS send's money path alone, as the send batcher runs it for one payer (src/modules/sms
// tx-batcher): a batch's holds in one ledger_hold_many transaction, then (after the submits) their
// settles in one ledger_settle_many transaction with the balance events decided. Beside it, the
// same messages charged once (ledger_charge_many, no hold): what a send whose submit outcome were
// known before its batch commits would cost. And the settle as it was before the balance events
// went into its statement (settle, then a second statement over the results).
// Load-independent figures per message: CPU of this process (process.cpuUsage) and of the
// database's backends (/proc), transactions, rows written. Needs PostgreSQL on 127.0.0.1:5432 (or SVC_BENCH_PG_ADMIN_URL).
// Run: node --import tsx bench/sms/money-path.bench.ts   (BENCH_MESSAGES=8000 BENCH_BATCH=32)
import pino from 'pino';
import postgres from 'postgres';
import { connect, type Sql } from '../../src/db/connection.js';
import { migrate } from '../../src/db/migrate.js';
import { createLedger, type HoldResult } from '../../src/ledger/ledger.js';
import { newId } from '../../src/platform/ids.js';
import { daemonLedgerDeps } from '../lib/ledger-charges.js';
import { pgCounters } from '../lib/pg-counters.js';
import { procCpuSeconds } from '../lib/proc-cpu.js';

const MESSAGES = Number(process.env['BENCH_MESSAGES'] ?? 8000);
const BATCH = Number(process.env['BENCH_BATCH'] ?? 32);
const ROWS_BATCHES = 20;
const ADMIN_URL = process.env['SVC_BENCH_PG_ADMIN_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const log = pino({ level: 'silent' });
// The rest-e2e route's price: 0.010 a message, the seller's part 0.009.
const PRICE = { amount: '0.009000', fee: '0.001000' };

const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} });
const name = `svc_bench_sms_money_${process.pid}`;
await admin.unsafe(`create database ${name}`);
const dbUrl = new URL(ADMIN_URL);
dbUrl.pathname = `/${name}`;
const sql: Sql = connect({ url: dbUrl.toString(), max: 2, log });

type Mode = 'hold+settle' | 'hold+settle, events apart' | 'charge once';
const MODES: Mode[] = ['hold+settle', 'hold+settle, events apart', 'charge once'];

try {
  await migrate(sql, log);
  // As the daemon builds it (src/modules/billing): balance events go to the outbox.
  const deps = daemonLedgerDeps(sql, log);
  const ledger = createLedger(deps);
  const plain = createLedger({ ...deps, events: undefined });
  const [buyer, seller] = [newId(), newId()];
  await sql`insert into accounts ${sql([buyer, seller].map((id) => ({ id, email: `${id}@bench.local` })))}`;
  await ledger.topup({ accountId: buyer, amount: '1000000', source: 'wire', postingKey: 'bench-fund' });
  const ctx = { reference: 'SMS', relatedEntityType: 'api_sms' };
  let seq = 0;

  async function batch(mode: Mode): Promise<void> {
    const ids = Array.from({ length: BATCH }, () => `${++seq}-${newId()}`);
    if (mode === 'charge once') {
      await sql.begin((tx) =>
        ledger.chargeMany(
          ids.map((id) => ({
            postingKey: `sms:${id}:charge`,
            accountId: buyer,
            sellerId: seller,
            ...PRICE,
            ...ctx,
            relatedEntityId: id,
          })),
          tx,
        ),
      );
      return;
    }
    const holds = (await sql.begin((tx) =>
      ledger.holdMany(
        ids.map((id) => ({
          postingKey: `sms:${id}:hold`,
          accountId: buyer,
          amount: '0.010000',
          ttlSeconds: 3600,
          ...ctx,
          relatedEntityId: id,
        })),
        tx,
      ),
    )) as HoldResult[];
    const settles = ids.map((id, i) => ({
      postingKey: `sms:${id}:settle`,
      holdId: holds[i]!.holdId,
      sellerId: seller,
      ...PRICE,
      ...ctx,
      relatedEntityId: id,
    }));
    await sql.begin(async (tx) => {
      if (mode === 'hold+settle') return ledger.settleMany(settles, tx);
      const results = await plain.settleMany(settles, tx);
      return ledger.balanceEvents(tx, results as never);
    });
  }

  for (const mode of MODES) for (let i = 0; i < 5; i++) await batch(mode); // warm-up: JIT, plans
  // CPU: the modes' batches interleaved (one of each in turn), each batch's CPU added to its mode,
  // so a change in the machine's load weighs on every mode alike. The pool's backends by pid.
  const pids = (await admin<{ pid: number }[]>`select pid from pg_stat_activity where datname = ${name}`).map(
    (r) => r.pid,
  );
  const cpu = new Map(MODES.map((m) => [m, { node: 0, pg: 0, n: 0 }]));
  for (let b = 0; b < Math.ceil(MESSAGES / BATCH); b++) {
    for (const mode of MODES) {
      const pg0 = procCpuSeconds(pids);
      const c0 = process.cpuUsage();
      await batch(mode);
      const c = process.cpuUsage(c0);
      const f = cpu.get(mode)!;
      f.pg += procCpuSeconds(pids) - pg0;
      f.node += (c.user + c.system) / 1e6;
      f.n += BATCH;
    }
  }
  // Transactions and rows: each mode alone, once its backends have flushed their statistics (an
  // idle backend flushes them 10 s after its last statement, PostgreSQL 15).
  const settle = () => new Promise((res) => setTimeout(res, 11_000));
  const written = new Map<Mode, { xact: number; rows: number }>();
  for (const mode of MODES) {
    await settle();
    const before = await pgCounters(admin, name);
    for (let b = 0; b < ROWS_BATCHES; b++) await batch(mode);
    await settle();
    const after = await pgCounters(admin, name);
    const n = ROWS_BATCHES * BATCH;
    written.set(mode, { xact: (after.xact - before.xact) / n, rows: (after.rows - before.rows) / n });
  }
  console.log(`sms money path, one payer, batches of ${BATCH}, ${MESSAGES} messages a mode (batches interleaved):`);
  for (const mode of MODES) {
    const f = cpu.get(mode)!;
    const w = written.get(mode)!;
    const us = (x: number) => ((x * 1e6) / f.n).toFixed(0);
    console.log(
      `  ${mode.padEnd(26)} CPU per message: node ${us(f.node)} µs, PostgreSQL backends ${us(f.pg)} µs, ` +
        `together ${us(f.node + f.pg)} µs; transactions ${w.xact.toFixed(3)}, rows written ${w.rows.toFixed(2)}`,
    );
  }
  const { loadavg } = await import('node:os');
  console.log(
    `load: ${loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')}`,
  );
} finally {
  await sql.end({ timeout: 1 });
  await admin.unsafe(`drop database if exists ${name} with (force)`);
  await admin.end();
}
