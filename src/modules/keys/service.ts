import type { Logger } from 'pino';
import type { Config } from '../../config/schema.js';
import type { Db, Sql } from '../../db/connection.js';
import { Scopes, type Scope } from '../../http/access.js';
import { notFound, validationError } from '../../http/errors.js';
import type { Clock } from '../../platform/clock.js';
import { newId, randomToken, sha256Hex } from '../../platform/ids.js';
import { createCredentialCache } from '../../db/cache-listener.js';

export interface ApiKeyRow {
  id: string;
  accountId: string;
  name: string;
  mode: 'live' | 'test';
  prefix: string;
  secretHash: string;
  scopes: Scope[] | null;
  webhooksWrite: boolean;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

export interface VerifiedKey {
  keyId: string;
  accountId: string;
  mode: 'live' | 'test';
  scopes: ReadonlySet<Scope> | null;
  webhooksWrite: boolean;
}

/** NOTIFY channel of api_keys changes (migration 283); the payload is the key's id. */
export const API_KEYS_CHANNEL = 'svc_auth_api_keys';
// With the NOTIFY listen up, a cached key is right until told otherwise; this only ages out idle ones.
const LISTENING_TTL_MS = 10 * 60_000;

const TYPE_PREFIX = { live: 'svc_live_sk_', test: 'svc_test_sk_' } as const;
const LOOKUP_CHARS = 8;
const SECRET_CHARS = 40;

/** Splits requested scopes into the stored form: no scope but `webhooks:write` means full access. */
export function normaliseScopes(requested: readonly string[] | undefined): {
  scopes: Scope[] | null;
  webhooksWrite: boolean;
} {
  const unknown = (requested ?? []).filter((s) => !(Scopes as readonly string[]).includes(s));
  if (unknown.length) {
    throw validationError(unknown.map((s) => ({ path: 'scopes', message: `unknown scope "${s}"` })));
  }
  const set = new Set(requested as Scope[] | undefined);
  const webhooksWrite = set.delete('webhooks:write');
  return { scopes: set.size === 0 ? null : [...set].sort(), webhooksWrite };
}

const MAX_REMEMBERED_HASHES = 10_000;

export function createKeysService(deps: { sql: Sql; config: Readonly<Config>; clock: Clock; log: Logger }) {
  const { sql, clock } = deps;
  // Keyed by the hash of the whole presented secret (never by its prefix). Every daemon hears of a
  // revocation, narrowing or new key at its commit (NOTIFY svc_auth_api_keys, migration 283) and
  // drops its cached keys, so a revoked key is refused at once everywhere; without the listen, a
  // daemon keeps a key no longer than credential_cache_seconds.
  const cache = createCredentialCache<ApiKeyRow | null>({
    sql,
    channel: API_KEYS_CHANNEL,
    clock,
    ttlMs: deps.config.auth.credential_cache_seconds * 1000,
    listeningTtlMs: LISTENING_TTL_MS,
    // The payload is a key's id, the cache is keyed by hash: key changes are rare, drop them all.
    forget: 'all',
    load: async (hash) => {
      const [row] = await sql<ApiKeyRow[]>`select * from api_keys where secret_hash = ${hash} and revoked_at is null`;
      return row ?? null;
    },
  });
  // The verdict of a cached row, made once per row: a changed key is loaded as a new row, so an
  // entry lives exactly as long as the row it was made from (read-only: the scopes are a ReadonlySet).
  const verifiedByRow = new WeakMap<ApiKeyRow, Readonly<VerifiedKey>>();
  // Requests are counted in memory and flushed in batches so the hot path does no write.
  const usage = new Map<string, number>();
  // The hash of each presented secret that matched a key, so a key's every request does not hash
  // it again. Only matches are kept: guesses cannot fill it, and a hit needs the whole secret.
  const hashOfValid = new Map<string, string>();
  const hashOf = (token: string) => hashOfValid.get(token) ?? sha256Hex(token);
  const verdict = (
    token: string,
    hash: string,
    row: ApiKeyRow | null,
    remembered = false,
  ): Readonly<VerifiedKey> | null => {
    if (!row) return null;
    if (!remembered) {
      if (hashOfValid.size >= MAX_REMEMBERED_HASHES) hashOfValid.clear();
      hashOfValid.set(token, hash);
    }
    usage.set(row.id, (usage.get(row.id) ?? 0) + 1);
    let key = verifiedByRow.get(row);
    if (key === undefined) {
      key = {
        keyId: row.id,
        accountId: row.accountId,
        mode: row.mode,
        scopes: row.scopes === null ? null : new Set(row.scopes),
        webhooksWrite: row.webhooksWrite,
      };
      verifiedByRow.set(row, key);
    }
    return key;
  };
  const wellFormed = (token: string) => {
    const mode = token.startsWith(TYPE_PREFIX.live) ? 'live' : token.startsWith(TYPE_PREFIX.test) ? 'test' : null;
    return mode !== null && token.length === TYPE_PREFIX[mode].length + LOOKUP_CHARS + SECRET_CHARS;
  };

  const present = (k: ApiKeyRow) => ({
    id: k.id,
    name: k.name,
    mode: k.mode,
    keyPrefix: k.prefix,
    prefix: k.prefix,
    scopes: k.scopes === null ? null : [...k.scopes, ...(k.webhooksWrite ? ['webhooks:write'] : [])],
    fullAccess: k.scopes === null,
    webhooksWrite: k.webhooksWrite,
    createdAt: k.createdAt.toISOString(),
    lastUsedAt: k.lastUsedAt?.toISOString() ?? null,
    revokedAt: k.revokedAt?.toISOString() ?? null,
  });

  const service = {
    present,
    /** Listens for key changes made by any daemon (the cache then keeps keys longer). */
    startCache: () => cache.start(),
    stopCache: () => cache.stop(),

    async create(accountId: string, input: { name?: string; mode?: 'live' | 'test'; scopes?: string[] }, tx: Db = sql) {
      const mode = input.mode ?? 'live';
      const { scopes, webhooksWrite } = normaliseScopes(input.scopes);
      const lookup = randomToken(LOOKUP_CHARS);
      const secret = `${TYPE_PREFIX[mode]}${lookup}${randomToken(SECRET_CHARS)}`;
      const [row] = await tx<ApiKeyRow[]>`
        insert into api_keys (id, account_id, name, mode, prefix, secret_hash, scopes, webhooks_write)
        values (${newId()}, ${accountId}, ${input.name ?? ''}, ${mode}, ${TYPE_PREFIX[mode] + lookup},
                ${sha256Hex(secret)}, ${scopes}, ${webhooksWrite})
        returning *`;
      return { key: present(row!), secret };
    },

    async list(accountId: string) {
      const rows = await sql<ApiKeyRow[]>`
        select * from api_keys where account_id = ${accountId} order by id desc limit 500`;
      return rows.map(present);
    },

    async revoke(accountId: string, id: string) {
      const [row] = await sql<ApiKeyRow[]>`
        update api_keys set revoked_at = coalesce(revoked_at, ${clock.now()})
        where id = ${id} and account_id = ${accountId} returning *`;
      if (!row) throw notFound('API key');
      cache.set(row.secretHash, null);
      return present(row);
    },

    /** Scopes only narrow: the new set must be within what the key holds now. */
    async narrow(accountId: string, id: string, requested: string[]) {
      const [cur] = await sql<
        ApiKeyRow[]
      >`select * from api_keys where id = ${id} and account_id = ${accountId} and revoked_at is null`;
      if (!cur) throw notFound('API key');
      const next = normaliseScopes(requested);
      const widened: string[] = [];
      if (next.webhooksWrite && !cur.webhooksWrite) widened.push('webhooks:write');
      if (cur.scopes !== null) {
        if (next.scopes === null) widened.push('full access');
        else widened.push(...next.scopes.filter((s) => !cur.scopes!.includes(s)));
      }
      if (widened.length) {
        throw validationError(
          widened.map((s) => ({
            path: 'scopes',
            message: `scopes can only be narrowed; "${s}" would broaden this key`,
          })),
        );
      }
      const [row] = await sql<ApiKeyRow[]>`
        update api_keys set scopes = ${next.scopes}, webhooks_write = ${next.webhooksWrite}
        where id = ${id} returning *`;
      cache.delete(row!.secretHash);
      return present(row!);
    },

    /**
     * Verifies a presented key by the hash of the whole secret. A look-up by the public prefix
     * answered a known prefix (often cached) faster than an unknown one, which let a caller
     * enumerate prefixes; by hash, every wrong key takes the same path whatever its prefix.
     */
    async verify(token: string): Promise<Readonly<VerifiedKey> | null> {
      if (!wellFormed(token)) return null;
      const hash = hashOf(token);
      return verdict(token, hash, await cache.get(hash));
    },

    /** `verify` when its answer is cached; undefined when `verify` must be awaited. */
    verifyNow(token: string): Readonly<VerifiedKey> | null | undefined {
      if (!wellFormed(token)) return null;
      const known = hashOfValid.get(token);
      const hash = known ?? sha256Hex(token);
      const hit = cache.peek(hash);
      return hit === undefined ? undefined : verdict(token, hash, hit.value, known !== undefined);
    },

    /** Writes the counted requests; called on a timer and at shutdown. */
    async flushUsage() {
      if (usage.size === 0) return;
      const day = clock.now().toISOString().slice(0, 10);
      const batch = [...usage.entries()];
      usage.clear();
      const now = clock.now();
      // Every key of the interval in two statements and one commit (not two per key): a sender
      // spreading its traffic over many keys would otherwise pay a transaction per key and flush.
      const ids = batch.map(([keyId]) => keyId);
      const counts = batch.map(([, n]) => n);
      await sql.begin(async (tx) => {
        await tx`
          insert into api_key_usage (key_id, day, requests)
          select k, ${day}::date, n from unnest(${ids}::uuid[], ${counts}::bigint[]) as u(k, n)
          order by k
          on conflict (key_id, day) do update set requests = api_key_usage.requests + excluded.requests`;
        await tx`update api_keys set last_used_at = ${now} where id = any(${ids}::uuid[])`;
      });
    },

    async usageReport(accountId: string, keyId: string | undefined, days: number) {
      const since = new Date(clock.now().getTime() - (days - 1) * 86400_000).toISOString().slice(0, 10);
      const rows = await sql<{ keyId: string; day: string; requests: string }[]>`
        select u.key_id, to_char(u.day, 'YYYY-MM-DD') as day, u.requests
        from api_key_usage u join api_keys k on k.id = u.key_id
        where k.account_id = ${accountId} and u.day >= ${since}
          ${keyId ? sql`and u.key_id = ${keyId}` : sql``}
        order by u.day desc, u.key_id`;
      return rows.map((r) => ({ keyId: r.keyId, day: r.day, requests: Number(r.requests) }));
    },
  };
  return service;
}

export type KeysService = ReturnType<typeof createKeysService>;
