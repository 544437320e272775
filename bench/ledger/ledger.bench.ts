// Ledger posting benchmark: `npx tsx bench/ledger/ledger.bench.ts [seconds] [clients]`.
// On the machine's PostgreSQL (127.0.0.1:5432, user postgres; SVC_BENCH_PG_ADMIN_URL overrides) it
// creates a scratch database, runs `pgbench -N` (built-in simple-update) and the ledger measures
// with the same number of clients, prints each figure beside pgbench as a ratio, then drops it.
// Charges are driven two ways: by pgbench itself with a custom script calling ledger_charge (the
// same client as the anchor, so the ratio compares server work with server work), and from Node
// through src/ledger as the daemon builds it (balance events into the webhooks outbox, so a charge
// is the daemon's own statement: client CPU included on the same 2 cores), with the CPU each
// charge costs the Node process (process.cpuUsage) and the pool's PostgreSQL backends (/proc).
// The pgbench-driven and the Node-driven charge (ledger.charge) each alternate with pgbench -N for
// ROUNDS rounds (anchor, pgbench-driven, anchor, Node-driven) and each ratio is the median of the
// rounds' ratios: on a shared machine the server's speed drifts within a minute (single rounds of
// the Node-driven charge read from 0.55 to 0.99 within one run on a quiet 2-core VM), so a measure is
// compared only with the anchor measured just before it. Beside each kind the bench prints the
// share of the machine's CPU left idle and the WAL written per operation: with synchronous_commit
// on, the backends of a one-statement charge spend much of their time waiting for a group commit's
// flush (sampled: about 5 of 8 backends at a time, against 2 of 8 for pgbench -N), which is idle
// CPU that no CPU-per-charge figure shows. A last line repeats the Node-driven alternation with
// synchronous_commit off for both (diagnosis only): the ratio when CPU alone bounds them.
// The Node-driven charge is also measured two more ways: a turn's charges grouped into
// ledger_charge_many calls (ledger.chargeGrouped, migrations 223 and 306), and the single statement
// pipelined on fewer connections (SVC_BENCH_LEDGER_PIPE_CONNECTIONS, 2).
// Defaults: 5 seconds per measure, 8 clients, 5 rounds (SVC_BENCH_LEDGER_ROUNDS).
// Rates here move with the machine's load; charge-cost.bench.ts prints what a charge costs in CPU,
// statements, rows and WAL beside pgbench -N's transaction, and the ratio those costs allow.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import postgres from 'postgres';
import { connect, type Sql } from '../../src/db/connection.js';
import { migrate } from '../../src/db/migrate.js';
import { createLedger, type Ledger, type LedgerDeps } from '../../src/ledger/ledger.js';
import { newId } from '../../src/platform/ids.js';
import {
  ACCOUNTS,
  benchId,
  BUYER_PREFIX,
  SELLER_PREFIX,
  daemonLedgerDeps,
  writeChargeScript,
} from '../lib/ledger-charges.js';
import { idleShareSince, machineTicks } from '../lib/proc-cpu.js';

const SECONDS = Number(process.argv[2] ?? 5);
const CLIENTS = Number(process.argv[3] ?? 8);
const ROUNDS = Number(process.env['SVC_BENCH_LEDGER_ROUNDS'] ?? 5);
const PIPE_CONNECTIONS = Number(process.env['SVC_BENCH_LEDGER_PIPE_CONNECTIONS'] ?? 2);
const ADMIN_URL = process.env['SVC_BENCH_PG_ADMIN_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const log = pino({ level: 'silent' });

function pgbench(url: URL, db: string, args: string[]): string {
  return execFileSync(
    'pgbench',
    ['-h', url.hostname, '-p', url.port || '5432', '-U', url.username || 'postgres', ...args, db],
    {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, PGPASSWORD: decodeURIComponent(url.password) },
    },
  );
}

function pgbenchTps(url: URL, db: string, workload: string[] = ['-N']): number {
  const out = pgbench(url, db, [...workload, '-n', '-c', String(CLIENTS), '-j', '2', '-T', String(SECONDS)]);
  const m = /tps = ([\d.]+) \((?:without initial connection time|excluding connections establishing)\)/.exec(out);
  if (!m) throw new Error(`cannot read pgbench output:\n${out}`);
  return Number(m[1]);
}

/**
 * CPU (µs) used so far by each of this database's client backends but ours (not autovacuum's, which
 * the million rows a run writes set off), by pid, read from /proc
 * (Linux, same host); null when none can be read (another host).
 */
async function backendsCpu(sql: Sql): Promise<Map<number, number> | null> {
  const rows = await sql<{ pid: number }[]>`
    select pid from pg_stat_activity
     where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend'`;
  const cpu = new Map<number, number>();
  for (const { pid } of rows) {
    try {
      const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      cpu.set(pid, ((Number(f[11]) + Number(f[12])) * 1e6) / 100); // utime, stime in USER_HZ
    } catch {
      // gone since the query, or on another host
    }
  }
  return rows.length > 0 && cpu.size === 0 ? null : cpu;
}

/**
 * The CPU the backends alive at the end used since `before`: by pid, so that a backend that exits
 * in between (pgbench's, closing as the measure starts) takes its whole CPU out of neither side.
 */
function backendsCpuSince(before: Map<number, number> | null, after: Map<number, number> | null): number {
  if (!before || !after) return NaN;
  let us = 0;
  for (const [pid, cpu] of after) us += cpu - (before.get(pid) ?? 0);
  return us;
}

/** Where the cluster's WAL insert position is, in bytes. */
async function walPosition(sql: Sql): Promise<number> {
  const [w] = await sql<{ lsn: number }[]>`select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::float8 as lsn`;
  return w!.lsn;
}

/**
 * What one kind of measure left, over its runs: the share of the machine's CPU left idle, and the
 * WAL written per operation (the insert position's advance, cluster-wide, over the operations the
 * run's rate and length give).
 */
class Regime {
  private idle = 0;
  private runs = 0;
  private walBytes = 0;
  private ops = 0;

  /** Runs `work` (one measure, returning its rate a second) and adds its idle share and WAL to this kind's. */
  async around(sql: Sql, work: () => Promise<number> | number): Promise<number> {
    const w0 = await walPosition(sql);
    const t0 = machineTicks();
    const rate = await work();
    this.idle += idleShareSince(t0);
    this.walBytes += (await walPosition(sql)) - w0;
    this.ops += rate * SECONDS;
    this.runs++;
    return rate;
  }

  toString(): string {
    return `idle ${((this.idle / Math.max(1, this.runs)) * 100).toFixed(1)} %, WAL ${(this.walBytes / Math.max(1, this.ops)).toFixed(0)} B an operation`;
  }
}

/** The last `measure`'s CPU per operation, µs: this process, and the pool's backends. */
const cpuPerOp = { node: NaN, backends: NaN };

/** Runs `op` in CLIENTS concurrent loops for SECONDS; returns operations per second. */
async function measure(op: (worker: number, i: number) => Promise<unknown>, sql?: Sql): Promise<number> {
  const until = Date.now() + SECONDS * 1000;
  let done = 0;
  const b0 = sql ? await backendsCpu(sql) : null;
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, w) => {
      for (let i = 0; Date.now() < until; i++) {
        await op(w, i);
        done++;
      }
    }),
  );
  const rate = done / (Number(process.hrtime.bigint() - t0) / 1e9);
  const c = process.cpuUsage(c0);
  cpuPerOp.node = (c.user + c.system) / done;
  cpuPerOp.backends = sql ? backendsCpuSince(b0, await backendsCpu(sql)) / done : NaN;
  return rate;
}

async function seed(sql: Sql, n: number, amount: string, prefix?: string): Promise<string[]> {
  const ids = Array.from({ length: n }, (_, i) => (prefix ? benchId(prefix, i + 1) : newId()));
  await sql`insert into accounts ${sql(ids.map((id) => ({ id, email: `${id}@bench.local` })))}`;
  await sql`select ledger_topup('seed-' || id, id, ${amount}::numeric, 'wire', null, now()) from unnest(${ids}::uuid[]) as id`;
  return ids;
}

async function main() {
  const adminUrl = new URL(ADMIN_URL);
  const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} });
  const name = `svc_bench_ledger_${process.pid}`;
  await admin.unsafe(`create database ${name}`);
  const dbUrl = new URL(ADMIN_URL);
  dbUrl.pathname = `/${name}`;
  const sql = connect({ url: dbUrl.toString(), max: CLIENTS, log });
  try {
    await migrate(sql, log);
    pgbench(adminUrl, name, ['-i', '-q', '-s', '1']);
    // As the daemon builds it (src/modules/billing buildLedger): balance events go to the outbox.
    const ledgerDeps: LedgerDeps = daemonLedgerDeps(sql, log);
    const ledger: Ledger = createLedger(ledgerDeps);
    const buyers = await seed(sql, ACCOUNTS, '1000000', BUYER_PREFIX);
    const sellers = await seed(sql, ACCOUNTS, '100', SELLER_PREFIX);
    const [hot] = await seed(sql, 1, '100000000');
    const pick = (xs: string[]) => xs[Math.floor(Math.random() * xs.length)]!;
    const run = newId().slice(0, 8);

    // pgbench picks accounts by number; the script spells their ids from it (see benchId).
    const scripts = mkdtempSync(join(tmpdir(), 'ledger-bench-'));
    const chargeScript = writeChargeScript(scripts);

    // A call charge of a random buyer to a random seller, keyed by measure, loop and iteration.
    const spreadCharge = (tag: string, w: number, i: number) => ({
      postingKey: `${run}-${tag}-${w}-${i}`,
      accountId: pick(buyers),
      sellerId: pick(sellers),
      amount: '0.012000',
      fee: '0.000500',
      relatedEntityType: 'call',
    });
    // Unmeasured: opens the pool's connections, prepares the statements and warms the JIT, which the
    // first measure would otherwise pay for (55-90 us of client CPU per charge in charge-cost.bench.ts).
    await Promise.all(
      Array.from({ length: CLIENTS }, async (_, w) => {
        for (let i = 0; i < 200; i++) {
          await ledger.charge(spreadCharge('w', w, i));
          await ledger.chargeGrouped(spreadCharge('wg', w, i));
        }
      }),
    );
    // Each charge in alternation with the anchor (see the header): anchor, pgbench-driven, anchor,
    // Node-driven; the other measures use the mean of all anchors.
    const regimes = { pg: new Regime(), pgbenchCharge: new Regime(), nodeCharge: new Regime() };
    const rounds: { pg: number; charge: number; pgNode: number; node: number }[] = [];
    const spreadCpus: (typeof cpuPerOp)[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const pgRound = await regimes.pg.around(sql, () => pgbenchTps(adminUrl, name));
      const charge = await regimes.pgbenchCharge.around(sql, () => pgbenchTps(adminUrl, name, ['-f', chargeScript]));
      const pgNode = await regimes.pg.around(sql, () => pgbenchTps(adminUrl, name));
      const node = await regimes.nodeCharge.around(sql, () =>
        measure((w, j) => ledger.charge(spreadCharge(`s${i}`, w, j)), sql),
      );
      spreadCpus.push({ ...cpuPerOp });
      rounds.push({ pg: pgRound, charge, pgNode, node });
    }
    rmSync(scripts, { recursive: true, force: true });
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const mean = (xs: number[]) => xs.reduce((n, x) => n + x, 0) / xs.length;
    const spreadRatio = median(rounds.map((x) => x.charge / x.pg));
    const spreadPgbench = mean(rounds.map((x) => x.charge));
    const nodeRatio = median(rounds.map((x) => x.node / x.pgNode));
    const spread = mean(rounds.map((x) => x.node));
    const spreadCpu = { node: mean(spreadCpus.map((x) => x.node)), backends: mean(spreadCpus.map((x) => x.backends)) };
    // The same charges grouped per event-loop turn into ledger_charge_many calls (migrations 223, 306).
    const grouped = await measure((w, i) => ledger.chargeGrouped(spreadCharge('g', w, i)), sql);
    const groupedCpu = { ...cpuPerOp };
    // The single-charge statement pipelined: CLIENTS loops on PIPE_CONNECTIONS connections, the
    // postgres library sending each connection's next statements before the answers come back.
    const pipeSql = connect({ url: dbUrl.toString(), max: PIPE_CONNECTIONS, log });
    const pipeLedger = createLedger({ ...ledgerDeps, sql: pipeSql });
    const piped = await measure((w, i) => pipeLedger.charge(spreadCharge('p', w, i)), pipeSql);
    const pipedCpu = { ...cpuPerOp };
    await pipeSql.end({ timeout: 5 });
    const hotRate = await measure((w, i) =>
      ledger.charge({
        postingKey: `${run}-h-${w}-${i}`,
        accountId: hot!,
        sellerId: pick(sellers),
        amount: '0.012000',
        fee: '0.000500',
        relatedEntityType: 'call',
      }),
    );
    const pairs = await measure(async (w, i) => {
      const h = await ledger.hold({
        postingKey: `${run}-hold-${w}-${i}`,
        accountId: pick(buyers),
        amount: '1.000000',
        ttlSeconds: 300,
      });
      await ledger.settle({
        postingKey: `${run}-settle-${w}-${i}`,
        holdId: h.holdId,
        sellerId: pick(sellers),
        amount: '0.120000',
        fee: '0.002000',
      });
    });
    const pgLast = pgbenchTps(adminUrl, name);
    // The same alternation with commits not waiting for their flush (the database's default, so
    // pgbench's connections and a fresh pool take it): for the diagnosis only, as money is never
    // posted so. What the charge reaches against the anchor when CPU alone bounds both.
    await sql.unsafe(`alter database ${name} set synchronous_commit = off`);
    const asyncSql = connect({ url: dbUrl.toString(), max: CLIENTS, log });
    const asyncLedger = createLedger({ ...ledgerDeps, sql: asyncSql });
    const asyncRounds: { pg: number; node: number }[] = [];
    for (let i = 0; i < 3; i++) {
      const pgAsync = pgbenchTps(adminUrl, name);
      asyncRounds.push({ pg: pgAsync, node: await measure((w, j) => asyncLedger.charge(spreadCharge(`a${i}`, w, j))) });
    }
    await asyncSql.end({ timeout: 5 });
    await sql.unsafe(`alter database ${name} reset synchronous_commit`);
    const anchors = [...rounds.flatMap((x) => [x.pg, x.pgNode]), pgLast];
    const pg = mean(anchors);

    const [check] = await sql<{ s: string }[]>`select coalesce(sum(amount), 0)::text as s from entries`;
    // One pass over the entries: a sum per account looked up per account scans them per account
    // (entries have no index on account_id), minutes after a million charges.
    const [drift] = await sql<{ n: string }[]>`
      select count(*)::text as n
        from ledger_accounts a
        left join (select account_id, sum(amount) as s from entries group by account_id) e on e.account_id = a.id
        left join (select account_id, sum(balance) as b from ledger_account_shards group by account_id) sh
          on sh.account_id = a.id
       where (case when a.sharded then sh.b else a.balance end) is distinct from coalesce(e.s, 0)`;
    const f = (n: number) => n.toFixed(0).padStart(7);
    const r = (n: number) => n.toFixed(2);
    console.log(
      `ledger bench: ${CLIENTS} clients, ${SECONDS} s per measure, PostgreSQL ${(await sql`show server_version`)[0]!['serverVersion']}`,
    );
    console.log(
      `pgbench -N (simple-update)             ${f(pg)} tps   (runs: ${anchors.map((x) => x.toFixed(0)).join(', ')}; ${regimes.pg})`,
    );
    console.log(
      `charge, ${ACCOUNTS} accounts, pgbench-driven  ${f(spreadPgbench)} /s    ${r(spreadRatio)} x pgbench -N   (median of ${rounds.length} rounds, each against the anchor run just before: ${rounds.map((x) => r(x.charge / x.pg)).join(', ')}; ${regimes.pgbenchCharge})`,
    );
    console.log(
      `charge, ${ACCOUNTS} accounts, Node-driven     ${f(spread)} /s    ${r(nodeRatio)} x pgbench -N   (goal >= 0.80; the daemon's path, client CPU on the same cores; median of ${rounds.length} rounds as above: ${rounds.map((x) => r(x.node / x.pgNode)).join(', ')}; ${regimes.nodeCharge})`,
    );
    console.log(
      `  CPU per Node-driven charge: node ${spreadCpu.node.toFixed(0)} us, PostgreSQL backends ${spreadCpu.backends.toFixed(0)} us`,
    );
    console.log(
      `charge, ${ACCOUNTS} accounts, Node, grouped   ${f(grouped)} /s    ${r(grouped / pg)} x pgbench -N   (chargeGrouped: a turn's charges in ledger_charge_many calls; node ${groupedCpu.node.toFixed(0)} us, backends ${groupedCpu.backends.toFixed(0)} us per charge)`,
    );
    console.log(
      `charge, ${ACCOUNTS} accounts, Node, piped     ${f(piped)} /s    ${r(piped / pg)} x pgbench -N   (charge pipelined on ${PIPE_CONNECTIONS} connections; node ${pipedCpu.node.toFixed(0)} us, backends ${pipedCpu.backends.toFixed(0)} us per charge)`,
    );
    console.log(
      `charge, one hot account                 ${f(hotRate)} /s    ${r(hotRate / pg)} x pgbench -N   ${r(hotRate / spread)} x spread (goal >= 0.40)`,
    );
    console.log(`hold + settle pairs, ${ACCOUNTS} accounts     ${f(pairs)} /s    ${r(pairs / pg)} x pgbench -N`);
    console.log(
      `without waiting for flushes (diagnosis)  ${f(mean(asyncRounds.map((x) => x.node)))} /s    ${r(median(asyncRounds.map((x) => x.node / x.pg)))} x pgbench -N   (synchronous_commit off for both: Node-driven charge against pgbench -N ${f(mean(asyncRounds.map((x) => x.pg)))} tps, the CPU-bound ratio; rounds ${asyncRounds.map((x) => r(x.node / x.pg)).join(', ')})`,
    );
    console.log(`entries sum                             ${check!.s} (must be 0)`);
    console.log(`accounts whose balance differs from the sum of their entries: ${drift!.n} (must be 0)`);
    console.log(execFileSync('uptime', { encoding: 'utf8' }).trim());
  } finally {
    await sql.end({ timeout: 5 });
    await admin.unsafe(`drop database if exists ${name} with (force)`);
    await admin.end({ timeout: 5 });
  }
}

await main();
