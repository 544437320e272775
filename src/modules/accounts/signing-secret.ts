import type { Sql } from '../../db/connection.js';
import { loadServerSecret } from '../../db/server-secret.js';

/**
 * The session-token secret: from configuration when set, else generated once and kept in
 * the database so every daemon sharing it verifies every other's tokens.
 */
export async function loadSigningSecret(sql: Sql, configured: string): Promise<Uint8Array> {
  return new TextEncoder().encode(configured || (await loadServerSecret(sql, 'jwt')));
}
