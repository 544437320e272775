import type postgres from 'postgres';
import { procCpuSeconds } from './proc-cpu.js';

export interface PgCounters {
  xact: number;
  rows: number;
  /** CPU seconds. */
  cpu: number;
}

/** Commits, rows written and CPU seconds of one database's backends (their /proc stat: utime + stime). */
export async function pgCounters(adminSql: postgres.Sql, dbName: string): Promise<PgCounters> {
  const [d] = await adminSql<{ xact: string; rows: string }[]>`
    select xact_commit::text as xact, (tup_inserted + tup_updated + tup_deleted)::text as rows from pg_stat_database where datname = ${dbName}`;
  const pids = await adminSql<{ pid: number }[]>`select pid from pg_stat_activity where datname = ${dbName}`;
  return { xact: Number(d?.xact ?? 0), rows: Number(d?.rows ?? 0), cpu: procCpuSeconds(pids.map((p) => p.pid)) };
}
