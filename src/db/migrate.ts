import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import type { Sql } from './connection.js';

export const migrationsDir = fileURLToPath(new URL('./migrations/', import.meta.url));

export interface Migration {
  version: number;
  name: string;
  file: string;
  sql: string;
  checksum: string;
}

export class MigrationError extends Error {
  override name = 'MigrationError';
}

/** Files named `NNN_name.sql`, ordered by number; a duplicate number is an error. */
export function readMigrations(dir = migrationsDir): Migration[] {
  const out: Migration[] = [];
  for (const file of readdirSync(dir).sort()) {
    const m = /^(\d{3,})_([a-z0-9_]+)\.sql$/.exec(file);
    if (!m) continue;
    const sql = readFileSync(join(dir, file), 'utf8');
    out.push({
      version: Number(m[1]),
      name: m[2] as string,
      file,
      sql,
      checksum: createHash('sha256').update(sql).digest('hex'),
    });
  }
  out.sort((a, b) => a.version - b.version);
  for (let i = 1; i < out.length; i++) {
    if (out[i]?.version === out[i - 1]?.version) {
      throw new MigrationError(`two migrations are numbered ${out[i]?.version}`);
    }
  }
  return out;
}

// Arbitrary constant shared by every daemon so only one applies migrations at a time.
const LOCK_KEY = 7_261_903_001;

/**
 * Applies pending migrations under a session advisory lock, each in its own transaction,
 * and refuses to go on when an applied migration's file was edited since.
 */
export async function migrate(sql: Sql, log: Logger, migrations = readMigrations()): Promise<number[]> {
  const applied: number[] = [];
  await sql.reserve().then(async (conn) => {
    try {
      await conn`select pg_advisory_lock(${LOCK_KEY})`;
      await conn`
        create table if not exists schema_migrations (
          version integer primary key,
          name text not null,
          checksum text not null,
          applied_at timestamptz not null default now()
        )`;
      const rows = await conn<{ version: number; name: string; checksum: string }[]>`
        select version, name, checksum from schema_migrations`;
      const done = new Map(rows.map((r) => [r.version, r]));
      for (const m of migrations) {
        const prior = done.get(m.version);
        if (prior) {
          if (prior.checksum !== m.checksum) {
            throw new MigrationError(
              `migration ${m.file} was edited after it was applied (checksum differs); restore the file and add a new migration instead`,
            );
          }
          continue;
        }
        // A reserved connection has no begin(): the transaction is spelled out.
        await conn`begin`;
        try {
          await conn.unsafe(m.sql);
          await conn`insert into schema_migrations (version, name, checksum) values (${m.version}, ${m.name}, ${m.checksum})`;
          await conn`commit`;
        } catch (err) {
          await conn`rollback`.catch(() => undefined);
          throw new MigrationError(`migration ${m.file} failed: ${(err as Error).message}`);
        }
        log.info({ version: m.version, name: m.name }, 'migration applied');
        applied.push(m.version);
      }
    } finally {
      await conn`select pg_advisory_unlock(${LOCK_KEY})`.catch(() => undefined);
      conn.release();
    }
  });
  return applied;
}
