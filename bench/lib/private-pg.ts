/**
 * A private PostgreSQL cluster for a bench that counts statements: the machine's own server
 * (Debian's, its settings as in /etc/postgresql/15/main/conf.d/90-ci.conf) does not preload
 * pg_stat_statements, and restarting it would break every other test and bench on the machine.
 * Same binaries and the settings that matter for cost per call (fsync, autovacuum off, 128 MB of
 * shared buffers); pg_stat_statements with `track = all`, so the statements inside the ledger's
 * PL/pgSQL functions are counted too (a call's top-level statements are those with `toplevel`).
 */
import postgres from 'postgres';
import { initCluster, startServer } from './pg-cluster.js';

export interface PrivatePostgres {
  /** The cluster's `postgres` database as its superuser. */
  adminUrl: string;
  stop(): Promise<void>;
}

/** Starts a throw-away cluster on `port` (a free one from the caller), with pg_stat_statements loaded. */
export async function startPrivatePostgres(port: number): Promise<PrivatePostgres> {
  const files = initCluster('bench-pg-');
  try {
    const server = await startServer(files, port, {
      settings: [
        'shared_buffers=128MB',
        'max_connections=200',
        'fsync=on',
        'autovacuum=off',
        'shared_preload_libraries=pg_stat_statements',
        'pg_stat_statements.track=all',
        'pg_stat_statements.max=10000',
        'track_functions=pl',
      ],
      ready: (sql) => sql`create extension if not exists pg_stat_statements`,
    });
    return {
      adminUrl: server.url('postgres'),
      stop: async () => {
        await server.stop();
        files.remove();
      },
    };
  } catch (err) {
    files.remove();
    throw err;
  }
}

export interface StatementCount {
  query: string;
  calls: number;
  rows: number;
  ms: number;
  toplevel: boolean;
}

/** The statements `dbName` ran since the last reset, most time first. */
export async function statementsOf(adminSql: postgres.Sql, dbName: string): Promise<StatementCount[]> {
  return adminSql<StatementCount[]>`
    select regexp_replace(s.query, '[[:space:]]+', ' ', 'g') as query, s.calls::int, s.rows::int,
           s.total_exec_time::float8 as ms, s.toplevel
    from pg_stat_statements s join pg_database d on d.oid = s.dbid
    where d.datname = ${dbName}
    order by s.total_exec_time desc`;
}

/**
 * With `BENCH_PG_STATEMENTS` set: a private cluster on `port` for the bench's daemon (the test
 * database helper reads `SVC_TEST_PG_ADMIN_URL` when it first makes a database) and a connection to
 * it, both ended by `cleanups`; null without it.
 */
export async function statementsCluster(
  cleanups: Array<() => unknown>,
  port: () => Promise<number>,
): Promise<postgres.Sql | null> {
  if (!process.env['BENCH_PG_STATEMENTS']) return null;
  const pg = await startPrivatePostgres(await port());
  cleanups.push(() => pg.stop());
  process.env['SVC_TEST_PG_ADMIN_URL'] = pg.adminUrl;
  const admin = postgres(pg.adminUrl, { max: 1, onnotice: () => {} });
  cleanups.push(() => admin.end({ timeout: 1 }));
  return admin;
}

/** Statements `dbName` ran since the last reset: top-level ones (round trips) and those inside functions. */
export async function statementTotals(
  adminSql: postgres.Sql,
  dbName: string,
): Promise<{ top: number; nested: number }> {
  const [s] = await adminSql<{ top: number; nested: number }[]>`
    select coalesce(sum(calls) filter (where toplevel), 0)::float8 as top,
           coalesce(sum(calls) filter (where not toplevel), 0)::float8 as nested
    from pg_stat_statements where dbid = (select oid from pg_database where datname = ${dbName})`;
  return { top: s?.top ?? 0, nested: s?.nested ?? 0 };
}
