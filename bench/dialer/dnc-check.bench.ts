/**
 * The do-not-call check of a batch (`blockedAmong`, what the dialer asks at dial time and the
 * numbers import asks per batch), alone against a fresh database: an account listing `listed`
 * whole numbers and `prefixes` prefixes of several lengths (and another account listing as many,
 * which must not count), then `numbers` numbers checked in batches of `batch`, a tenth of them
 * listed and a tenth under a prefix. Prints numbers per second, the daemon's CPU and the PostgreSQL
 * backends' CPU per 1,000 numbers (load-independent), and `uptime` (the machine is shared).
 *
 * Usage: node --import tsx bench/dialer/dnc-check.bench.ts [numbers=100000] [batch=100000] [listed=200000] [prefixes=200] [runs=3]
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { systemClock } from '../../src/platform/clock.js';
import { createDncService } from '../../src/modules/dnc/service.js';
import { createTestDatabase } from '../../test/helpers/db.js';
import { procCpuSeconds } from '../lib/proc-cpu.js';
import { runCleanups } from '../lib/cleanups.js';

const [numbers = 100_000, batch = 100_000, listed = 200_000, prefixes = 200, runs = 3] = process.argv
  .slice(2)
  .map(Number);
const cleanups: Array<() => unknown> = [];
const t = { teardown: (fn: () => unknown) => void cleanups.push(fn) };
const uptime = () => execFileSync('uptime', { encoding: 'utf8' }).trim();

async function main() {
  console.log(`# ${uptime()}`);
  const { sql } = await createTestDatabase(t);
  const dnc = createDncService({ sql, clock: systemClock });
  const account = randomUUID();
  const other = randomUUID();
  for (const id of [account, other]) await sql`insert into accounts (id, email) values (${id}, ${`${id}@dnc.bench`})`;

  // Listed numbers: every 10th checked number, the rest elsewhere in the plan. Prefixes of 4 to 8
  // digits, one of them covering every 10th checked number (offset by 5).
  const checked = Array.from({ length: numbers }, (_, i) => `4477${String(i).padStart(8, '0')}`);
  const list = Array.from({ length: listed }, (_, i) =>
    i < numbers / 10 ? checked[i * 10]! : `4478${String(i).padStart(8, '0')}`,
  );
  const prefixList = Array.from({ length: prefixes }, (_, i) => `1${String(i).padStart(3 + (i % 5), '0')}`);
  for (let i = 0; i < numbers / 10; i += 1)
    if (i % 1000 === 0) prefixList.push(`4477${String(i / 1000).padStart(3, '0')}5`);
  for (const id of [account, other]) {
    for (let i = 0; i < list.length; i += 5000) {
      await dnc.add(id, { numbers: list.slice(i, i + 5000).map((n) => `+${n}`) });
    }
    await dnc.add(id, { prefixes: prefixList });
  }
  console.log(`# listed numbers=${listed} prefixes=${prefixList.length}`);
  await sql`analyze dnc_entries`;

  const backends = async () =>
    (await sql<{ pid: number }[]>`select pid from pg_stat_activity where datname = current_database()`).map(
      (r) => r.pid,
    );
  const perRun: { ms: number; cpu: number; pg: number; hits: number }[] = [];
  for (let run = 0; run < runs; run++) {
    const pids = await backends();
    const pgAt = procCpuSeconds(pids);
    const cpuAt = process.cpuUsage();
    const started = performance.now();
    let hits = 0;
    for (let i = 0; i < checked.length; i += batch) {
      hits += (await dnc.blockedAmong(account, checked.slice(i, i + batch))).size;
    }
    const ms = performance.now() - started;
    const used = process.cpuUsage(cpuAt);
    perRun.push({ ms, cpu: (used.user + used.system) / 1000, pg: (procCpuSeconds(pids) - pgAt) * 1000, hits });
  }
  perRun.sort((a, b) => a.ms - b.ms);
  const m = perRun[Math.floor(perRun.length / 2)]!;
  console.log(
    `dnc blockedAmong: numbers=${numbers} batch=${batch} runs=${runs} blocked=${m.hits} median_ms=${m.ms.toFixed(0)} ` +
      `numbers_per_s=${Math.round((numbers / m.ms) * 1000)} node_cpu_ms_per_1k=${((m.cpu / numbers) * 1000).toFixed(2)} ` +
      `pg_cpu_ms_per_1k=${((m.pg / numbers) * 1000).toFixed(2)}`,
  );
  console.log(`# ${uptime()}`);
}

main()
  .catch((err) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => runCleanups(cleanups));
