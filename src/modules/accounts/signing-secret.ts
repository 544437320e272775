import { randomBytes } from 'node:crypto';
import type { Sql } from '../../db/connection.js';

/**
 * The session-token secret: from configuration when set, else generated once and kept in
 * the database so every daemon sharing it verifies every other's tokens.
 */
export async function loadSigningSecret(sql: Sql, configured: string): Promise<Uint8Array> {
  if (configured) return new TextEncoder().encode(configured);
  const fresh = randomBytes(48).toString('base64url');
  await sql`insert into server_secrets (name, value) values ('jwt', ${fresh}) on conflict (name) do nothing`;
  const [row] = await sql<{ value: string }[]>`select value from server_secrets where name = 'jwt'`;
  return new TextEncoder().encode(row!.value);
}
