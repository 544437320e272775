import type { Db } from '../db/connection.js';

/** A customer-facing ledger entry as the spec's "Communications history entry". */
export interface HistoryRow {
  id: string;
  userId: string;
  type: string;
  amount: string;
  balanceAfter: string;
  reference: string | null;
  relatedEntityType: string | null;
  relatedEntityId: string | null;
  callId: string | null;
  createdAt: Date;
}

export interface HistoryFilter {
  from?: string | undefined;
  to?: string | undefined;
  cursor?: string | undefined;
  limit: number;
}

/**
 * An account's balance and test-credit entries about calls or messages (`related_entity_type`
 * in `types`), newest first; `from` inclusive, `to` exclusive, cursor = last id.
 */
export function communicationsHistory(db: Db, accountId: string, types: readonly string[], f: HistoryFilter) {
  return db<HistoryRow[]>`
    select id, owner_id as user_id, type, to_char(amount, 'FM999999999999990.000000') as amount,
           to_char(coalesce(balance_after, 0), 'FM999999999999990.000000') as balance_after,
           reference, related_entity_type, related_entity_id, call_id, created_at
    from entries
    where owner_id = ${accountId} and account_kind in ('customer', 'test_credit')
      and related_entity_type = any(${types as string[]}::text[])
      ${f.from ? db`and created_at >= ${f.from}::timestamptz` : db``}
      ${f.to ? db`and created_at < ${f.to}::timestamptz` : db``}
      ${f.cursor ? db`and id < ${f.cursor}::uuid` : db``}
    order by id desc limit ${f.limit}`;
}
