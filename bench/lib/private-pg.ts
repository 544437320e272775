/**
 * A private PostgreSQL cluster for a bench that counts statements: the machine's own server
 * (Debian's, its settings as in /etc/postgresql/15/main/conf.d/90-ci.conf) does not preload
 * pg_stat_statements, and restarting it would break every other test and bench on the machine.
 * Same binaries and the settings that matter for cost per call (fsync, autovacuum off, 128 MB of
 * shared buffers); pg_stat_statements with `track = all`, so the statements inside the ledger's
 * PL/pgSQL functions are counted too (a call's top-level statements are those with `toplevel`).
 */
import { spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';

export interface PrivatePostgres {
  /** The cluster's `postgres` database as its superuser. */
  adminUrl: string;
  stop(): Promise<void>;
}

/** The newest installed server's binaries (Debian layout). */
function binDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length === 0) throw new Error('no PostgreSQL server binaries under /usr/lib/postgresql');
  return join(root, versions[0]!, 'bin');
}

/** initdb refuses root: as root the cluster belongs to the `postgres` user. */
const asOwner = (cmd: string, args: string[]): [string, string[]] =>
  process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];

/** Starts a throw-away cluster on `port` (a free one from the caller), with pg_stat_statements loaded. */
export async function startPrivatePostgres(port: number): Promise<PrivatePostgres> {
  const bin = binDir();
  const dir = mkdtempSync(join(tmpdir(), 'bench-pg-'));
  if (process.getuid?.() === 0) {
    const id = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
    const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
    chownSync(dir, Number(id.stdout.trim()), Number(gid.stdout.trim()));
  }
  const data = join(dir, 'data');
  const [initCmd, initArgs] = asOwner(join(bin, 'initdb'), [
    '-D',
    data,
    '-U',
    'postgres',
    '--auth=trust',
    '-E',
    'UTF8',
    '--locale=C.UTF-8',
  ]);
  const init = spawnSync(initCmd, initArgs, { encoding: 'utf8' });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
  const settings = [
    `port=${port}`,
    'listen_addresses=127.0.0.1',
    `unix_socket_directories=${dir}`,
    'shared_buffers=128MB',
    'max_connections=200',
    'fsync=on',
    'autovacuum=off',
    'shared_preload_libraries=pg_stat_statements',
    'pg_stat_statements.track=all',
    'pg_stat_statements.max=10000',
    'track_functions=pl',
  ];
  const [cmd, args] = asOwner(join(bin, 'postgres'), ['-D', data, ...settings.flatMap((s) => ['-c', s])]);
  const server = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  let log = '';
  server.stderr.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-4000)));
  const exited = new Promise<void>((r) => server.once('exit', () => r()));
  const adminUrl = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const stop = async () => {
    // SIGINT: fast shutdown (open sessions rolled back); to the group, runuser's child included.
    if (server.exitCode === null && server.pid) process.kill(-server.pid, 'SIGINT');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  for (let i = 0; ; i++) {
    const probe = postgres(adminUrl, { max: 1, connect_timeout: 2, onnotice: () => {} });
    try {
      await probe`select 1`;
      await probe`create extension if not exists pg_stat_statements`;
      return { adminUrl, stop };
    } catch (err) {
      if (i >= 100 || server.exitCode !== null) {
        await stop();
        throw new Error(`private PostgreSQL did not start: ${String(err)}\n${log}`, { cause: err });
      }
      await new Promise((r) => setTimeout(r, 100));
    } finally {
      await probe.end({ timeout: 1 });
    }
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
