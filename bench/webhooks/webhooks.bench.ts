/**
 * Webhook delivery throughput to a local HTTPS receiver (1, 10, 100 endpoints) and the cost
 * emit adds to a transaction. Run: npx tsx bench/webhooks/webhooks.bench.ts [deliveries=2000]
 * The receiver (which verifies every signature) runs in a child process, as a customer's endpoint
 * runs elsewhere: it shares the machine's cores but not the worker's event loop, and its CPU is
 * reported apart from the worker's.
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import type { TransactionSql } from '../../src/db/connection.js';
import { systemClock } from '../../src/platform/clock.js';
import { newId } from '../../src/platform/ids.js';
import { emit } from '../../src/webhooks/emit.js';
import { createWebhookSender } from '../../src/webhooks/sender.js';
import { createDeliveryWorker } from '../../src/webhooks/worker.js';
import { startCpuProfile } from '../lib/cpu-profile.js';
import { procCpuSeconds } from '../lib/proc-cpu.js';
import { createTestDatabase } from '../../test/helpers/db.js';

const teardowns: (() => unknown)[] = [];
const t = { teardown: (fn: () => unknown) => void teardowns.push(fn) };
const total = Number(process.argv[2] ?? 2000);
const log = pino({ level: 'silent' });

try {
  const { sql } = await createTestDatabase(t);
  const child = fork(fileURLToPath(new URL('./receiver-process.ts', import.meta.url)), ['whsec_bench'], {
    execArgv: ['--import', 'tsx'],
  });
  t.teardown(() => child.kill());
  type Msg = { type: string; port?: number; cert?: string; received?: number; verified?: number; cpuUs?: number };
  const next = async (type: string): Promise<Msg> => {
    for (;;) {
      const [m] = (await once(child, 'message')) as [Msg];
      if (m.type === type) return m;
    }
  };
  const ready = await next('ready');
  const receiver = { cert: ready.cert!, url: (path: string) => `https://127.0.0.1:${ready.port!}${path}` };
  const counts = async () => {
    const answer = next('count');
    child.send({ type: 'count' });
    return answer;
  };
  const worker = createDeliveryWorker({
    sql,
    clock: systemClock,
    log,
    sender: createWebhookSender({ timeoutMs: 10_000, allowPrivate: true, ca: receiver.cert }),
    concurrency: 8,
    leaseMs: 70_000,
    disableAfterFailures: 20,
  });
  t.teardown(() => worker.stop());
  const account = async (endpoints: number) => {
    const id = newId();
    await sql`insert into accounts (id, email) values (${id}, ${id + '@bench.test'})`;
    for (let i = 0; i < endpoints; i++) {
      await sql`
        insert into webhook_endpoints (id, account_id, url, events, secret, created_at, updated_at)
        values (${newId()}, ${id}, ${receiver.url(`/e${i}`)}, ${['*']}, 'whsec_bench', now(), now())`;
    }
    return id;
  };

  /** CPU seconds of this database's backends (their /proc stat: utime + stime). */
  const pgCpu = async () => {
    const pids = await sql<{ pid: number }[]>`select pid from pg_stat_activity where datname = current_database()`;
    return procCpuSeconds(pids.map((p) => p.pid));
  };

  // Warm-up: JIT, the first TLS handshakes and the connection pool. With 50 deliveries the first
  // measured run (one endpoint, the goal's figure) still paid for optimising the send path: about
  // twice the worker CPU per delivery of the runs after it.
  const warm = await account(1);
  await sql.begin(async (tx) => {
    for (let i = 0; i < 1000; i++) await emit(tx, { accountId: warm, event: 'sms.sent', data: { i } });
  });
  await worker.runOnce();

  // BENCH_CPU_PROF=<file>: a CPU profile of the delivery runs only (not start-up or the emit rounds).
  const prof = await startCpuProfile();
  for (const endpoints of [1, 10, 100]) {
    const acc = await account(endpoints);
    const events = Math.max(1, Math.round(total / endpoints));
    await sql.begin(async (tx) => {
      for (let i = 0; i < events; i++)
        await emit(tx, { accountId: acc, event: 'sms.sent', data: { i, cost: '0.010000' } });
    });
    const before = await counts();
    const pg0 = await pgCpu();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const n = await worker.runOnce();
    const secs = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const pgSec = (await pgCpu()) - pg0;
    const after = await counts();
    const okCount = after.verified! - before.verified!;
    const receiverUs = after.cpuUs! - before.cpuUs!;
    console.log(
      `webhooks deliver endpoints=${endpoints} deliveries=${n} verified=${okCount} seconds=${secs.toFixed(2)} deliveries/s=${(n / secs).toFixed(0)}`,
    );
    console.log(
      `webhooks cpu endpoints=${endpoints} per_delivery_us worker=${((cpu.user + cpu.system) / Math.max(1, n)).toFixed(0)} ` +
        `receiver=${(receiverUs / Math.max(1, n)).toFixed(0)} ` +
        `postgres=${((pgSec * 1e6) / Math.max(1, n)).toFixed(0)} load=${readFileSync('/proc/loadavg', 'utf8').split(' ')[0]}`,
    );
  }

  await prof.stop();

  await sql`create table bench_changes (id uuid primary key, v integer not null)`;
  const none = await account(0);
  const one = await account(1);
  const change = (tx: TransactionSql, i: number) => tx`insert into bench_changes (id, v) values (${newId()}, ${i})`;
  // The emit goes with the change it reports, pipelined on the transaction's connection (one round
  // trip for both), as the daemon's main emitters send theirs: SMS sends (the batch writers of
  // src/modules/sms/tx-batcher.ts), SMS receipts, call finishes. `emit1_after` is an emit that waits
  // for its change's answer, as one decided by the change's result does (a debit's balance.low).
  const variants: Record<string, (tx: TransactionSql, i: number) => Promise<unknown>> = {
    base: change,
    emit0: (tx, i) =>
      Promise.all([change(tx, i), emit(tx, { accountId: none, event: 'balance.low', data: { balance: '1.000000' } })]),
    emit1: (tx, i) =>
      Promise.all([change(tx, i), emit(tx, { accountId: one, event: 'balance.low', data: { balance: '1.000000' } })]),
    emit1_after: async (tx, i) => {
      await change(tx, i);
      await emit(tx, { accountId: one, event: 'balance.low', data: { balance: '1.000000' } });
    },
  };
  // Robust to a shared machine: rounds rotate which variant goes first, each round's emit time is
  // divided by the same round's base (drift within a round hits both), and the median of those
  // paired ratios is the figure, with its interquartile range beside it. PostgreSQL CPU per
  // transaction is summed over all rounds of a variant (ticks of 10 ms are too coarse per round).
  const names = Object.keys(variants);
  const ms: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  const pgSecs: Record<string, number> = Object.fromEntries(names.map((n) => [n, 0]));
  const rounds = Number(process.env['BENCH_EMIT_ROUNDS'] ?? 25);
  const perRound = 40;
  for (let round = 0; round <= rounds; round++) {
    for (let k = 0; k < names.length; k++) {
      const name = names[(round + k) % names.length]!;
      const fn = variants[name]!;
      const pg0 = await pgCpu();
      const t0 = performance.now();
      for (let i = 0; i < perRound; i++) await sql.begin((tx) => fn(tx, i));
      const elapsed = (performance.now() - t0) / perRound;
      const pgSec = (await pgCpu()) - pg0;
      // Round 0 warms the statements' plans and caches.
      if (round > 0) {
        ms[name]!.push(elapsed);
        pgSecs[name]! += pgSec;
      }
    }
  }
  const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * q)]!;
  const median = (xs: number[]) => quantile(xs, 0.5);
  const base = median(ms['base']!);
  const pgUs = (name: string) => (pgSecs[name]! * 1e6) / (rounds * perRound);
  for (const [name, label] of [
    ['emit0', 'with_emit_0_endpoints_ms'],
    ['emit1', 'with_emit_1_endpoint_ms'],
    ['emit1_after', 'with_emit_1_endpoint_after_change_ms'],
  ] as const) {
    const paired = ms[name]!.map((x, i) => x / ms['base']![i]!);
    console.log(
      `webhooks emit tx base_ms=${base.toFixed(3)} ${label}=${median(ms[name]!).toFixed(3)} ratio=${median(paired).toFixed(2)} ` +
        `(paired over ${rounds} rounds, IQR ${quantile(paired, 0.25).toFixed(2)}-${quantile(paired, 0.75).toFixed(2)}; ` +
        `postgres cpu_us/tx ${pgUs(name).toFixed(0)} vs ${pgUs('base').toFixed(0)}) load=${readFileSync('/proc/loadavg', 'utf8').split(' ')[0]}`,
    );
  }
} finally {
  for (const fn of teardowns.reverse()) await fn();
}
