import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import pino from 'pino';
import { connect, type Sql } from '../../src/db/connection.js';
import { startEmbeddedPostgres } from '../../src/db/embedded.js';
import { migrate } from '../../src/db/migrate.js';

type Teardown = { teardown(fn: () => unknown): void };

const silent = pino({ level: 'silent' });
let adminUrlPromise: Promise<string> | undefined;

/**
 * The server tests make their databases on: SVC_TEST_PG_ADMIN_URL, else the machine's
 * PostgreSQL on 127.0.0.1:5432, else a private embedded one started for this process.
 */
function adminUrl(): Promise<string> {
  adminUrlPromise ??= (async () => {
    const candidates = [process.env['SVC_TEST_PG_ADMIN_URL'], 'postgres://postgres@127.0.0.1:5432/postgres'].filter(Boolean) as string[];
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
    const embedded = await startEmbeddedPostgres({ stateDir: dir, port: 0, log: silent, runAs: 'postgres', runtimeDir: join(tmpdir(), 'svc-test-embedded-postgres') });
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    return embedded.url.replace(/\/svc_exchange$/, '/postgres');
  })();
  return adminUrlPromise;
}

export interface TestDatabase {
  url: string;
  sql: Sql;
}

/** A fresh database with every migration applied, dropped when the test ends. */
export async function createTestDatabase(t: Teardown, opts: { migrate?: boolean } = {}): Promise<TestDatabase> {
  const admin = await adminUrl();
  const name = `svc_t_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  const adminSql = postgres(admin, { max: 1, onnotice: () => {} });
  await adminSql.unsafe(`create database ${name}`);
  const url = admin.replace(/\/[^/?]*(\?|$)/, `/${name}$1`);
  const sql = connect({ url, max: 10, log: silent });
  t.teardown(async () => {
    await sql.end({ timeout: 2 });
    await adminSql.unsafe(`drop database if exists ${name} with (force)`);
    await adminSql.end({ timeout: 2 });
  });
  if (opts.migrate !== false) await migrate(sql, silent);
  return { url, sql };
}
