import { randomBytes } from 'node:crypto';
import type { Sql } from './connection.js';

/** A secret generated once and kept in the database, so every daemon sharing it uses the same one. */
export async function loadServerSecret(sql: Sql, name: string): Promise<string> {
  await sql`insert into server_secrets (name, value) values (${name}, ${randomBytes(48).toString('base64url')}) on conflict (name) do nothing`;
  const [row] = await sql<{ value: string }[]>`select value from server_secrets where name = ${name}`;
  return row!.value;
}
