import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import pino from 'pino';
import { connect, type Sql } from '../../src/db/connection.js';
import { startEmbeddedPostgres } from '../../src/db/embedded.js';
import { migrate, readMigrations } from '../../src/db/migrate.js';

type Teardown = { teardown(fn: () => unknown): void };

const silent = pino({ level: 'silent' });
let adminUrlPromise: Promise<string> | undefined;

/**
 * The server tests make their databases on: SVC_TEST_PG_ADMIN_URL, else the tests' own PostgreSQL
 * on tmpfs that `make test` starts (scripts/test-postgres.sh says why), else the machine's
 * PostgreSQL on 127.0.0.1:5432, else a private embedded one started for this process.
 */
function adminUrl(): Promise<string> {
  adminUrlPromise ??= (async () => {
    const candidates = [
      process.env['SVC_TEST_PG_ADMIN_URL'],
      'postgres://postgres@127.0.0.1:5439/postgres',
      'postgres://postgres@127.0.0.1:5432/postgres',
    ].filter(Boolean) as string[];
    for (const url of candidates) {
      const probe = postgres(url, { max: 1, connect_timeout: 3, onnotice: () => {} });
      try {
        await probe`select 1`;
        return url;
      } catch {
        // try the next one
      } finally {
        await probe.end({ timeout: 1 });
      }
    }
    const dir = mkdtempSync(join(tmpdir(), 'svc-test-pg-'));
    const embedded = await startEmbeddedPostgres({
      stateDir: dir,
      port: 0,
      log: silent,
      runAs: 'postgres',
      runtimeDir: join(tmpdir(), 'svc-test-embedded-postgres'),
    });
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    return embedded.url.replace(/\/svc_exchange$/, '/postgres');
  })();
  return adminUrlPromise;
}

export interface TestDatabase {
  url: string;
  sql: Sql;
}

let templatePromise: Promise<string> | undefined;

/**
 * A database with every migration applied, kept on the server as a template and named after
 * the migrations' checksums: made once for a set of migrations, by whichever tap worker comes
 * first (the others wait on an advisory lock), and reused by later runs until a migration
 * changes. It is built under another name and renamed when complete, so a run that dies
 * half-way never leaves a template that looks usable.
 */
function migratedTemplate(admin: string): Promise<string> {
  templatePromise ??= (async () => {
    const migrations = readMigrations();
    const digest = createHash('sha256')
      .update(migrations.map((m) => `${m.version}:${m.checksum}`).join('\n'))
      .digest('hex');
    const name = `svc_tpl_${digest.slice(0, 24)}`;
    const building = `${name}_building`;
    const lockKey = BigInt.asIntN(64, BigInt(`0x${digest.slice(0, 16)}`)).toString();
    const adminSql = postgres(admin, { max: 1, onnotice: () => {} });
    // A session lock (CREATE DATABASE cannot run in a transaction): the server releases it if this worker dies.
    const lock = await adminSql.reserve();
    try {
      await lock`select pg_advisory_lock(${lockKey}::bigint)`;
      const [done] = await lock`select 1 from pg_database where datname = ${name}`;
      if (!done) {
        await lock`drop database if exists ${lock(building)} with (force)`;
        await lock`create database ${lock(building)}`;
        const sql = connect({ url: dbUrl(admin, building), max: 1, log: silent });
        try {
          await migrate(sql, silent, migrations);
        } finally {
          await sql.end({ timeout: 2 });
        }
        await lock`alter database ${lock(building)} rename to ${lock(name)}`;
        await lock`alter database ${lock(name)} is_template true`;
      }
    } finally {
      await lock`select pg_advisory_unlock(${lockKey}::bigint)`.catch(() => undefined);
      lock.release();
      await adminSql.end({ timeout: 2 });
    }
    return name;
  })();
  templatePromise.catch(() => (templatePromise = undefined));
  return templatePromise;
}

/**
 * Drops the database from a detached process: the test is done with it, and PostgreSQL 15 makes
 * every DROP DATABASE wait for a forced checkpoint. psql when the machine has it: a node process
 * that only sends the statement cost about 0.08 s of CPU, psql 0.015 s, for each of the few
 * hundred databases a run makes (CPU the run's own figures do not show: the process outlives its test).
 */
function dropLater(admin: string, name: string) {
  const client = psqlPath();
  const child =
    client && !admin.includes('?')
      ? spawn(client, ['-qX', '-d', admin, '-c', `drop database if exists "${name}" with (force)`], {
          detached: true,
          stdio: 'ignore',
        })
      : spawn(process.execPath, [DROPPER, admin, name], { detached: true, stdio: 'ignore' });
  child.on('error', () => undefined);
  child.unref();
}

const DROPPER = fileURLToPath(new URL('./drop-database.mjs', import.meta.url));

let psql: string | null | undefined;

/** psql on the PATH, looked up once (a connection string with options is left to the node dropper). */
function psqlPath(): string | null {
  psql ??=
    (process.env['PATH'] ?? '')
      .split(delimiter)
      .filter(Boolean)
      .map((dir) => join(dir, 'psql'))
      .find((path) => {
        try {
          accessSync(path, constants.X_OK);
          return true;
        } catch {
          return false;
        }
      }) ?? null;
  return psql;
}

function dbUrl(admin: string, name: string): string {
  return admin.replace(/\/[^/?]*(\?|$)/, `/${name}$1`);
}

/**
 * A fresh database dropped when the test ends: a copy of the migrated template, or empty with
 * `migrate: false` (for tests of the migrations themselves).
 */
export async function createTestDatabase(t: Teardown, opts: { migrate?: boolean } = {}): Promise<TestDatabase> {
  const admin = await adminUrl();
  const migrated = opts.migrate !== false;
  const template = migrated ? await migratedTemplate(admin) : null;
  const name = `svc_t_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  const adminSql = postgres(admin, { max: 1, onnotice: () => {} });
  if (template) await adminSql`create database ${adminSql(name)} template ${adminSql(template)}`;
  else await adminSql`create database ${adminSql(name)}`;
  // A commit returns without waiting for its WAL to reach the disk (one fdatasync, milliseconds on
  // a busy disk, for each of the thousands of commits a run makes). What a commit makes visible,
  // and when, is unchanged; only a crash of the server itself could lose the last commits, and a
  // test database does not outlive its test.
  await adminSql`alter database ${adminSql(name)} set synchronous_commit = off`;
  const url = dbUrl(admin, name);
  const sql = connect({ url, max: 10, log: silent });
  await adminSql.end({ timeout: 2 });
  t.teardown(async () => {
    await sql.end({ timeout: 2 });
    dropLater(admin, name);
  });
  return { url, sql };
}
