// Verifications started per second through SMS (POST /verify/start over real HTTPS: auth, the
// per-number limits, the SMS send path with its ledger hold and settle, an SMPP bind to a local
// SMSC), beside plain POST /comms/sms in the same run and the same world. Goal: at least 0.8 × the
// plain SMS rate (issue 21). bench/verify/cpu.bench.ts compares the CPU each request costs.
// Needs wrk (Debian `wrk`) and PostgreSQL on 127.0.0.1:5432 (or SVC_BENCH_PG_ADMIN_URL).
// Run: node --import tsx bench/verify/start.bench.ts   (BENCH_SECONDS=10 BENCH_CONNECTIONS=64 BENCH_KEYS=600)
import { readFileSync } from 'node:fs';
import { runWrk, type WrkResult } from '../lib/wrk.js';
import { withVerifyBenchWorld, type BenchPath } from './world.js';

const seconds = Number(process.env['BENCH_SECONDS'] ?? 10);
const connections = Number(process.env['BENCH_CONNECTIONS'] ?? 64);

await withVerifyBenchWorld('verify', async ({ daemon, paths, args }) => {
  const count = async (q: 'sms' | 'verify') =>
    q === 'sms'
      ? (await daemon.sql<{ n: number }[]>`select count(*)::int as n from messages where status <> 'queued'`)[0]!.n
      : (
          await daemon.sql<{ n: number }[]>`select count(*)::int as n from verifications where message_id is not null`
        )[0]!.n;
  /** Sent messages (or started verifications) per second over one wrk window. */
  const measure = async (p: BenchPath, what: 'sms' | 'verify'): Promise<[WrkResult, number]> => {
    const before = await count(what);
    const r = await runWrk(p.url, { seconds, connections, script: p.script, scriptArgs: args() });
    return [r, ((await count(what)) - before) / seconds];
  };
  // Warm-up of both paths: JIT, the bind, caches.
  for (const p of [paths.sms, paths.verify])
    await runWrk(p.url, { seconds: 2, connections, script: p.script, scriptArgs: args() });
  // Two rounds in turn, so a drift in the machine's load weighs on both paths alike.
  const rounds: { sms: [WrkResult, number]; verify: [WrkResult, number] }[] = [];
  for (let i = 0; i < 2; i++)
    rounds.push({ sms: await measure(paths.sms, 'sms'), verify: await measure(paths.verify, 'verify') });
  const mean = (k: 'sms' | 'verify') => rounds.reduce((a, r) => a + r[k][1], 0) / rounds.length;
  const smsRate = mean('sms');
  const verRate = mean('verify');
  const sms = rounds[rounds.length - 1]!.sms[0];
  const ver = rounds[rounds.length - 1]!.verify[0];
  console.log(
    `rounds (sms/s, verify/s): ${rounds.map((r) => `${r.sms[1].toFixed(0)}, ${r.verify[1].toFixed(0)}`).join('; ')}`,
  );
  const line = (name: string, r: WrkResult, rate: number) =>
    `${name}: ${rate.toFixed(0)}/s, ${r.requestsPerSecond.toFixed(0)} req/s, p50 ${r.p50Ms.toFixed(1)} ms, p99 ${r.p99Ms.toFixed(1)} ms, non-2xx ${r.non2xx}`;
  console.log(line('POST /comms/sms (messages sent, mean; latency of the last round)', sms, smsRate));
  console.log(line('POST /verify/start by SMS (verifications started, mean)', ver, verRate));
  console.log(
    `ratio verify / sms: ${(verRate / smsRate).toFixed(3)} (goal >= 0.8; ${connections} connections, ${process.env['BENCH_KEYS'] ?? 600} keys)`,
  );
  const [c] = await daemon.sql<{ pending: number; failed: number; plain: number }[]>`
    select count(*) filter (where status = 'pending')::int as pending,
           count(*) filter (where status = 'failed')::int as failed,
           count(*) filter (where code_hash ~ '^[0-9]{4,10}$')::int as plain
    from verifications`;
  console.log(
    `verifications: ${c!.pending} pending, ${c!.failed} failed, ${c!.plain} with a plain code stored (must be 0)`,
  );
  console.log(`uptime: ${readFileSync('/proc/loadavg', 'utf8').trim()}`);
});
process.exit(0);
