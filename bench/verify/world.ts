// The world both verify benches run in: a fresh database, a local SMSC, the SMS bench world (a
// funded buyer's keys with sms:send and verify:write) and the two paths compared, POST /comms/sms
// and POST /verify/start by SMS, each with its wrk script.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { startSmsBenchWorld, type SmsBenchWorld } from '../lib/sms-world.js';
import { startSmsc } from '../sms/smpp-raw.js';

export interface BenchPath {
  url: string;
  script: string;
}

export interface VerifyBenchWorld extends SmsBenchWorld {
  adminSql: postgres.Sql;
  dbName: string;
  paths: { sms: BenchPath; verify: BenchPath };
  /** wrk script arguments: the key file, and a block of numbers of its own for each run (one number may get a code only every 30 s). */
  args(): string[];
}

/** Runs `fn` in a new world and removes it afterwards (PostgreSQL at SVC_BENCH_PG_ADMIN_URL, else 127.0.0.1:5432). */
export async function withVerifyBenchWorld(name: string, fn: (w: VerifyBenchWorld) => Promise<void>): Promise<void> {
  const admin = process.env['SVC_BENCH_PG_ADMIN_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const dbName = `svc_bench_${name}_${process.pid}`;
  const adminSql = postgres(admin, { max: 1, onnotice: () => {} });
  await adminSql.unsafe(`create database ${dbName}`);
  const state = mkdtempSync(join(tmpdir(), `svc-bench-${name}-`));
  const smsc = await startSmsc();
  try {
    const world = await startSmsBenchWorld({
      databaseUrl: admin.replace(/\/[^/]*$/, `/${dbName}`),
      state,
      smscPort: smsc.port,
      keyCount: Number(process.env['BENCH_KEYS'] ?? 600),
      scopes: ['sms:send', 'verify:write'],
      funds: '1000000.000000',
    });
    let block = 0;
    try {
      await fn({
        ...world,
        adminSql,
        dbName,
        paths: {
          sms: { url: `${world.base}/comms/sms`, script: new URL('../sms/rest-send.lua', import.meta.url).pathname },
          verify: {
            url: `${world.base}/verify/start`,
            script: new URL('./verify-start.lua', import.meta.url).pathname,
          },
        },
        args: () => [world.keyFile, String(++block * 100_000_000)],
      });
    } finally {
      await world.daemon.stop();
    }
  } finally {
    smsc.server.close();
    await adminSql.unsafe(`drop database if exists ${dbName} with (force)`);
    await adminSql.end();
    rmSync(state, { recursive: true, force: true });
  }
}
