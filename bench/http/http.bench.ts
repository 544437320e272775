// Authenticated GET /account through the whole API stack (TLS, auth, scope, rate limit,
// envelope) beside a hello-world Fastify route over the same TLS, in the same run.
// Needs wrk (Debian `wrk`) and a PostgreSQL on 127.0.0.1:5432 (or SVC_BENCH_PG_ADMIN_URL).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import postgres from 'postgres';
import pino from 'pino';
import { loadConfig } from '../../src/config/load.js';
import { startDaemon } from '../../src/daemon.js';
import { startCpuProfile } from '../lib/cpu-profile.js';
import { runWrk } from '../lib/wrk.js';

const seconds = Number(process.env['BENCH_SECONDS'] ?? 5);
const admin = process.env['SVC_BENCH_PG_ADMIN_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const dbName = `svc_bench_http_${process.pid}`;
const adminSql = postgres(admin, { max: 1, onnotice: () => {} });
await adminSql.unsafe(`create database ${dbName}`);
const state = mkdtempSync(join(tmpdir(), 'svc-bench-'));
try {
  const config = loadConfig({
    overrides: {
      paths: { state },
      log: { level: 'silent' },
      http: { host: '127.0.0.1', port: 0 },
      // Ephemeral SIP and SMPP ports: a bench must not take the standard ones from a test or a peer.
      sip: { host: '127.0.0.1', port: 0, tls_port: 0 },
      smpp: { host: '127.0.0.1', port: 0, tls_port: 0 },
      metrics: { enabled: false },
      limits: { default_per_second: 1_000_000 },
      database: { url: admin.replace(/\/[^/]*$/, `/${dbName}`) },
    },
  });
  const daemon = await startDaemon(config, { log: pino({ level: 'silent' }) });
  const key = daemon.firstStart!.testKey;
  const tls = { key: readFileSync(join(state, 'tls/server.key')), cert: readFileSync(join(state, 'tls/server.crt')) };
  const hello = Fastify({ https: tls });
  hello.get('/hello', async () => ({ hello: 'world' }));
  await hello.listen({ host: '127.0.0.1', port: 0 });
  const helloPort = (hello.server.address() as { port: number }).port;

  const helloUrl = `https://127.0.0.1:${helloPort}/hello`;
  const apiUrl = `https://127.0.0.1:${daemon.ports['http']}/api/v1/account`;
  const apiHeaders = { authorization: `Bearer ${key}` };
  // Both sides warm, unmeasured: a cold window charges V8's optimizing compiler (its own threads,
  // counted in this process's CPU) to whichever side runs first, and the daemon's request path is
  // far more code to compile than the hello route. Other benches warm up the same way.
  const warmSeconds = Number(process.env['BENCH_WARMUP_SECONDS'] ?? 2);
  if (warmSeconds > 0) {
    await runWrk(helloUrl, { seconds: warmSeconds, connections: 32 });
    await runWrk(apiUrl, { seconds: warmSeconds, connections: 32, headers: apiHeaders });
  }

  // CPU of this process (the daemon and the hello server) per request, beside each wall rate.
  const cpu0 = process.cpuUsage();
  const base = await runWrk(helloUrl, { seconds, connections: 32 });
  const cpuBase = process.cpuUsage(cpu0);
  const cpu1 = process.cpuUsage();
  // BENCH_CPU_PROF=<file> profiles the daemon's window only (the hello server is idle then).
  const prof = await startCpuProfile();
  const api = await runWrk(apiUrl, { seconds, connections: 32, headers: apiHeaders });
  const cpuApi = process.cpuUsage(cpu1);
  await prof.stop();
  const perRequest = (c: NodeJS.CpuUsage, rps: number) => ((c.user + c.system) / (rps * seconds)).toFixed(0);
  console.log(
    `hello-world fastify https: ${base.requestsPerSecond.toFixed(0)} req/s, p99 ${base.p99Ms.toFixed(2)} ms, CPU ${perRequest(cpuBase, base.requestsPerSecond)} us/request`,
  );
  console.log(
    `GET /account (auth, scope, limit, envelope): ${api.requestsPerSecond.toFixed(0)} req/s, p99 ${api.p99Ms.toFixed(2)} ms, non-2xx ${api.non2xx}, CPU ${perRequest(cpuApi, api.requestsPerSecond)} us/request`,
  );
  console.log(
    `ratio GET /account / hello-world: ${(api.requestsPerSecond / base.requestsPerSecond).toFixed(2)} (throughput), ${(api.p99Ms / base.p99Ms).toFixed(2)} (p99 latency)`,
  );
  await hello.close();
  await daemon.stop();
} finally {
  await adminSql.unsafe(`drop database if exists ${dbName} with (force)`);
  await adminSql.end();
  rmSync(state, { recursive: true, force: true });
}
