import type { Sql } from '../db/connection.js';
import type { Clock } from '../platform/clock.js';
import { AppError, conflict } from './errors.js';

export type Claim = { kind: 'new' } | { kind: 'replay'; status: number; body: string };

/**
 * `X-Idempotency-Key` per account, kept in PostgreSQL for `ttlHours` (spec "Conventions").
 * A claim is a lease: an in-flight request holds the key until it stores its response or the
 * lease runs out, so a request that died mid-way frees its key for a retry after the lease.
 */
export function createIdempotencyStore(deps: { sql: Sql; clock: Clock; leaseSeconds: number; ttlHours: number }) {
  const { sql, clock } = deps;
  const later = (seconds: number) => new Date(clock.now().getTime() + seconds * 1000);

  return {
    async claim(accountId: string, key: string, fingerprint: string): Promise<Claim> {
      const now = clock.now();
      const inserted = await sql`
        insert into idempotency_keys (account_id, key, fingerprint, state, lease_until, expires_at)
        values (${accountId}, ${key}, ${fingerprint}, 'in_flight', ${later(deps.leaseSeconds)}, ${later(deps.ttlHours * 3600)})
        on conflict (account_id, key) do update
          set fingerprint = excluded.fingerprint, state = 'in_flight', lease_until = excluded.lease_until,
              status_code = null, response_body = null, created_at = ${now}, expires_at = excluded.expires_at
          where idempotency_keys.expires_at <= ${now}
        returning key`;
      if (inserted.length) return { kind: 'new' };
      const [row] = await sql<
        {
          fingerprint: string;
          state: string;
          leaseUntil: Date;
          statusCode: number | null;
          responseBody: string | null;
        }[]
      >`
        select fingerprint, state, lease_until, status_code, response_body from idempotency_keys
        where account_id = ${accountId} and key = ${key}`;
      if (!row) return this.claim(accountId, key, fingerprint);
      if (row.fingerprint !== fingerprint) {
        throw new AppError('IDEMPOTENCY_KEY_REUSED', 'This X-Idempotency-Key was used with a different request body');
      }
      if (row.state === 'done') return { kind: 'replay', status: row.statusCode ?? 200, body: row.responseBody ?? '' };
      const taken = await sql`
        update idempotency_keys set lease_until = ${later(deps.leaseSeconds)}
        where account_id = ${accountId} and key = ${key} and state = 'in_flight' and lease_until <= ${now}
        returning key`;
      if (taken.length) return { kind: 'new' };
      throw conflict('A request with this X-Idempotency-Key is still in progress');
    },

    async complete(accountId: string, key: string, status: number, body: string): Promise<void> {
      await sql`
        update idempotency_keys set state = 'done', status_code = ${status}, response_body = ${body}
        where account_id = ${accountId} and key = ${key}`;
    },

    /** Long requests (a synchronous call) keep their key by extending the lease. */
    async extendLease(accountId: string, key: string, seconds: number): Promise<void> {
      await sql`update idempotency_keys set lease_until = ${later(seconds)} where account_id = ${accountId} and key = ${key} and state = 'in_flight'`;
    },

    async purgeExpired(): Promise<number> {
      const rows = await sql`delete from idempotency_keys where expires_at <= ${clock.now()} returning key`;
      return rows.length;
    },
  };
}

export type IdempotencyStore = ReturnType<typeof createIdempotencyStore>;
