import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import t from 'tap';
import { migrate, MigrationError, readMigrations } from '../../src/db/migrate.js';
import { createTestDatabase } from '../helpers/db.js';

const log = pino({ level: 'silent' });

t.test('migrations apply once, each recorded with a checksum', async (t) => {
  const { sql } = await createTestDatabase(t, { migrate: false });
  const all = readMigrations();
  const first = await migrate(sql, log);
  t.same(
    first,
    all.map((m) => m.version),
    'every migration applied in order',
  );
  t.same(await migrate(sql, log), [], 'second start applies nothing');
  const rows = await sql<
    { version: number; checksum: string }[]
  >`select version, checksum from schema_migrations order by version`;
  t.same(
    rows.map((r) => r.checksum),
    all.map((m) => m.checksum),
  );
});

t.test('two daemons starting at once apply each migration once (advisory lock)', async (t) => {
  const { sql } = await createTestDatabase(t, { migrate: false });
  const [a, b] = await Promise.all([migrate(sql, log), migrate(sql, log)]);
  t.equal(a.length + b.length, readMigrations().length);
});

t.test('an edited applied migration stops the start; a failing one rolls back', async (t) => {
  const { sql } = await createTestDatabase(t, { migrate: false });
  const dir = mkdtempSync(join(tmpdir(), 'svc-mig-'));
  writeFileSync(join(dir, '001_one.sql'), 'create table one (id int);');
  await migrate(sql, log, readMigrations(dir));
  writeFileSync(join(dir, '001_one.sql'), 'create table one (id bigint);');
  await t.rejects(migrate(sql, log, readMigrations(dir)), {
    name: 'MigrationError',
    message: /001_one.sql was edited/,
  });

  const dir2 = mkdtempSync(join(tmpdir(), 'svc-mig-'));
  writeFileSync(join(dir2, '001_one.sql'), 'create table one (id int);');
  writeFileSync(join(dir2, '002_two.sql'), 'create table two (id int); select no_such_function();');
  const { sql: sql2 } = await createTestDatabase(t, { migrate: false });
  await t.rejects(migrate(sql2, log, readMigrations(dir2)), MigrationError);
  const [two] = await sql2`select to_regclass('two') as t`;
  t.equal(two!['t'], null, 'the failed migration left nothing behind');
  const versions = await sql2`select version from schema_migrations`;
  t.same(
    versions.map((r) => r['version']),
    [1],
  );
});

t.test('duplicate numbers are refused', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-mig-'));
  writeFileSync(join(dir, '001_a.sql'), 'select 1;');
  writeFileSync(join(dir, '001_b.sql'), 'select 1;');
  t.throws(() => readMigrations(dir), MigrationError);
});
