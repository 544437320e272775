/**
 * The charge both ledger benches post: buyers and sellers pgbench can name by number, and the
 * pgbench script that charges a random buyer to a random seller through ledger_charge.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Sql } from '../../src/db/connection.js';
import type { LedgerDeps } from '../../src/ledger/ledger.js';
import { emit } from '../../src/webhooks/emit.js';
import type { EventName } from '../../src/webhooks/events.js';

/** Buyers and sellers seeded by each bench. */
export const ACCOUNTS = 1000;
// UUIDv7-shaped prefixes for the bench's buyers and sellers (see benchId).
export const BUYER_PREFIX = '01900000-0000-7000-8000-';
export const SELLER_PREFIX = '01900000-0000-7000-9000-';

/**
 * Account ids the pgbench script can spell from a number (`prefix` + the number in 12 digits), so
 * it names accounts by an expression instead of a look-up that would be counted against the ledger.
 */
export const benchId = (prefix: string, i: number) => `${prefix}${String(i).padStart(12, '0')}`;

/** Writes the pgbench charge script into `dir` (with this platform fee); returns its path. */
export function writeChargeScript(dir: string, fee = '0.000500'): string {
  const path = join(dir, `charge-${fee}.sql`);
  // The key is text || uuid::text: text || uuid is textanycat, an SQL function the planner
  // inlines by parsing its body on every simple-protocol statement (5% of the charge's rate).
  writeFileSync(
    path,
    [
      `\\set b random(1, ${ACCOUNTS})`,
      `\\set s random(1, ${ACCOUNTS})`,
      `select ledger_charge('pgb-' || gen_random_uuid()::text, ('${BUYER_PREFIX}' || lpad(:b::text, 12, '0'))::uuid, ('${SELLER_PREFIX}' || lpad(:s::text, 12, '0'))::uuid, 0.012000, ${fee}, false, null, 'call', null, null, now());`,
      '',
    ].join('\n'),
  );
  return path;
}

/** A ledger as the daemon builds it (src/modules/billing buildLedger): balance events go to the webhooks outbox. */
export const daemonLedgerDeps = (sql: Sql, log: Logger): LedgerDeps => ({
  sql,
  clock: { now: () => new Date() },
  log,
  lowBalanceThreshold: '5.000000',
  events: {
    emit: async (db, accountId, event, data) => {
      await emit(db, { accountId, event: event as EventName, data, at: new Date() });
    },
  },
});
