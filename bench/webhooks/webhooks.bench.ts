/**
 * Webhook delivery throughput to a local HTTPS receiver (1, 10, 100 endpoints) and the cost
 * emit adds to a transaction. Run: npx tsx bench/webhooks/webhooks.bench.ts [deliveries=600]
 * The receiver runs in this process and verifies every signature, so it shares the CPU.
 */
import { readFileSync } from 'node:fs';
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
import { startReceiver } from '../../test/webhooks/receiver.js';

const teardowns: (() => unknown)[] = [];
const t = { teardown: (fn: () => unknown) => void teardowns.push(fn) };
const total = Number(process.argv[2] ?? 600);
const log = pino({ level: 'silent' });

try {
  const { sql } = await createTestDatabase(t);
  const receiver = await startReceiver(t, { now: () => Date.now() });
  receiver.secret = 'whsec_bench';
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

  // Warm-up: JIT, the first TLS handshakes and the connection pool.
  const warm = await account(1);
  for (let i = 0; i < 50; i++) await emit(sql, { accountId: warm, event: 'sms.sent', data: { i } });
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
    const before = receiver.received.length;
    const pg0 = await pgCpu();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const n = await worker.runOnce();
    const secs = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const pgSec = (await pgCpu()) - pg0;
    const okCount = receiver.received.slice(before).filter((r) => r.signatureOk).length;
    console.log(
      `webhooks deliver endpoints=${endpoints} deliveries=${n} verified=${okCount} seconds=${secs.toFixed(2)} deliveries/s=${(n / secs).toFixed(0)}`,
    );
    // The process's CPU includes the receiver's side (TLS, signature checks), which shares it.
    console.log(
      `webhooks cpu endpoints=${endpoints} per_delivery_us worker+receiver=${((cpu.user + cpu.system) / Math.max(1, n)).toFixed(0)} ` +
        `postgres=${((pgSec * 1e6) / Math.max(1, n)).toFixed(0)} load=${readFileSync('/proc/loadavg', 'utf8').split(' ')[0]}`,
    );
  }

  await prof.stop();

  await sql`create table bench_changes (id uuid primary key, v integer not null)`;
  const none = await account(0);
  const one = await account(1);
  // Interleaved rounds, median per variant: the machine is shared, so drift hits all alike.
  const change = (tx: TransactionSql, i: number) => tx`insert into bench_changes (id, v) values (${newId()}, ${i})`;
  const variants: Record<string, (tx: TransactionSql, i: number) => Promise<unknown>> = {
    base: change,
    emit0: async (tx, i) => {
      await change(tx, i);
      await emit(tx, { accountId: none, event: 'balance.low', data: { balance: '1.000000' } });
    },
    emit1: async (tx, i) => {
      await change(tx, i);
      await emit(tx, { accountId: one, event: 'balance.low', data: { balance: '1.000000' } });
    },
  };
  const samples: Record<string, number[]> = { base: [], emit0: [], emit1: [] };
  const perRound = 50;
  for (let round = 0; round < 9; round++) {
    for (const [name, fn] of Object.entries(variants)) {
      const t0 = performance.now();
      for (let i = 0; i < perRound; i++) await sql.begin((tx) => fn(tx, i));
      if (round > 0) samples[name]!.push((performance.now() - t0) / perRound);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const [base, with0, with1] = [median(samples['base']!), median(samples['emit0']!), median(samples['emit1']!)];
  console.log(
    `webhooks emit tx base_ms=${base.toFixed(3)} with_emit_0_endpoints_ms=${with0.toFixed(3)} ratio=${(with0 / base).toFixed(2)}`,
  );
  console.log(
    `webhooks emit tx base_ms=${base.toFixed(3)} with_emit_1_endpoint_ms=${with1.toFixed(3)} ratio=${(with1 / base).toFixed(2)}`,
  );
} finally {
  for (const fn of teardowns.reverse()) await fn();
}
