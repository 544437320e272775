// End to end: POST /comms/sms over real HTTPS (wrk, many connections, keys in turn) through auth,
// routing, the ledger (hold, settle, CDR, event) and an SMPP bind to a local SMSC; beside the raw
// throughput of the `smpp` library on loopback, in the same run.
// Needs wrk (Debian `wrk`) and PostgreSQL on 127.0.0.1:5432 (or SVC_BENCH_PG_ADMIN_URL).
// Run: node --import tsx bench/sms/rest-e2e.bench.ts   (BENCH_SECONDS=10 BENCH_CONNECTIONS=64 BENCH_KEYS=600)
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import pino from 'pino';
import { loadConfig } from '../../src/config/load.js';
import { startDaemon } from '../../src/daemon.js';
import { runWrk } from '../lib/wrk.js';
import { driveSmpp, startSmsc } from './smpp-raw.js';

const seconds = Number(process.env['BENCH_SECONDS'] ?? 10);
const connections = Number(process.env['BENCH_CONNECTIONS'] ?? 64);
const keyCount = Number(process.env['BENCH_KEYS'] ?? 600);
const admin = process.env['SVC_BENCH_PG_ADMIN_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const dbName = `svc_bench_sms_${process.pid}`;
const adminSql = postgres(admin, { max: 1, onnotice: () => {} });
await adminSql.unsafe(`create database ${dbName}`);
const state = mkdtempSync(join(tmpdir(), 'svc-bench-sms-'));
const smsc = await startSmsc();
const t0 = Date.now();
const phase = (what: string) => process.stderr.write(`[${((Date.now() - t0) / 1000).toFixed(1)} s] ${what}\n`);
try {
  await driveSmpp(smsc.port, 2000, 100); // warm-up
  const raw = await driveSmpp(smsc.port, 20_000, 100);

  const config = loadConfig({
    overrides: {
      paths: { state },
      log: { level: 'silent' },
      http: { host: '127.0.0.1', port: 0 },
      sip: { host: '127.0.0.1', port: 0 },
      smpp: { host: '127.0.0.1', port: 0, tls_port: 0 },
      metrics: { enabled: false },
      limits: { default_per_second: 1_000_000 },
      database: { url: admin.replace(/\/[^/]*$/, `/${dbName}`), pool_max: Number(process.env['BENCH_POOL'] ?? 20) },
      sms: { bind_tps: 100_000, bind_window_size: 100 },
    },
  });
  phase('raw measured');
  const daemon = await startDaemon(config, { log: pino({ level: 'silent' }) });
  const s = daemon.modules.services;
  const seller = await s.accounts.createAccount({ email: 'bench-seller@example.test', password: 'correct horse battery' });
  const buyer = await s.accounts.createAccount({ email: 'bench-buyer@example.test', password: 'correct horse battery' });
  const route = await s.routes.createRoute(seller.id, {
    type: 'sms', name: 'Bench SMSC', smsDelivery: { kind: 'smpp', host: '127.0.0.1', port: smsc.port, systemId: 'bench', password: 'bench' },
  });
  await s.routes.uploadSheet(seller.id, route.id, { format: 'csv', csv: 'prefix,destination,rate\n1,US,0.010\n' });
  await s.purchases.buy(buyer.id, route.id);
  await s.ledger.topup({ accountId: buyer.id, amount: '1000000.000000', source: 'card', postingKey: 'bench-fund' });
  const keys: string[] = [];
  for (let i = 0; i < keyCount; i++) keys.push((await s.keys.create(buyer.id, { mode: 'live', scopes: ['sms:send'] })).secret);
  phase('world ready');
  const keyFile = join(state, 'keys.txt');
  writeFileSync(keyFile, keys.join('\n'));
  const url = `https://127.0.0.1:${daemon.ports['http']}/api/v1/comms/sms`;
  const script = new URL('./rest-send.lua', import.meta.url).pathname;

  await runWrk(url, { seconds: 2, connections, script, scriptArgs: [keyFile] }); // warm-up: JIT, bind up, caches
  phase('warmed up');
  const before = smsc.submits();
  const sentCount = async () => (await daemon.sql<{ n: number }[]>`select count(*)::int as n from messages where status = 'sent'`)[0]!.n;
  const sentBefore = await sentCount();
  const r = await runWrk(url, { seconds, connections, script, scriptArgs: [keyFile] });
  const sentAfter = await sentCount();
  const sent = (sentAfter - sentBefore) / seconds;

  console.log(`smpp raw loopback (smpp library both ends, window 100): ${raw.toFixed(0)} msg/s`);
  console.log(`POST /comms/sms -> routing, ledger -> SMPP bind -> local SMSC: ${r.requestsPerSecond.toFixed(0)} req/s, ${sent.toFixed(0)} sent msg/s, ` +
    `p50 ${r.p50Ms.toFixed(1)} ms, p99 ${r.p99Ms.toFixed(1)} ms, non-2xx ${r.non2xx}, SMSC submits ${smsc.submits() - before} (${connections} connections, ${keyCount} keys)`);
  console.log(`ratio REST end-to-end / raw smpp: ${(sent / raw).toFixed(3)}`);
  phase('measured');
  await daemon.stop();
  phase('stopped');
} finally {
  smsc.server.close();
  await adminSql.unsafe(`drop database if exists ${dbName} with (force)`);
  await adminSql.end();
  rmSync(state, { recursive: true, force: true });
}
// A lingering handle must not keep the bench (and its --cpu-prof output) waiting.
process.exit(0);
