import type { Test } from 'tap';
import pino from 'pino';
import type { Sql } from '../../src/db/connection.js';
import { createLedger, type Ledger } from '../../src/ledger/ledger.js';
import type { Clock } from '../../src/platform/clock.js';
import { newId } from '../../src/platform/ids.js';

export const silent = pino({ level: 'silent' });

export function ledgerFor(sql: Sql, clock: Clock = { now: () => new Date() }): Ledger {
  return createLedger({ sql, clock, log: silent });
}

/** Inserts bare accounts (the ledger needs only their ids); children when a parent is given. */
export async function makeAccounts(sql: Sql, n: number, parentId: string | null = null): Promise<string[]> {
  const ids = Array.from({ length: n }, () => newId());
  const rows = ids.map((id) => ({ id, email: parentId ? null : `${id}@test.local`, parent_id: parentId }));
  for (let i = 0; i < rows.length; i += 1000) await sql`insert into accounts ${sql(rows.slice(i, i + 1000))}`;
  return ids;
}

/** The ledger's invariants; each failing one is a tap failure naming the rows. */
export async function checkInvariants(t: Test, sql: Sql, label = '') {
  const [total] = await sql<
    { s: string; n: string }[]
  >`select coalesce(sum(amount), 0)::text as s, count(*)::text as n from entries`;
  t.equal(Number(total!.s), 0, `${label} all entries sum to zero`);
  const unbalanced = await sql`
    select posting_id, sum(amount) from entries group by posting_id having sum(amount) <> 0 limit 5`;
  t.same(unbalanced, [], `${label} every posting sums to zero`);
  const drift = await sql`
    select b.id, b.balance::text, coalesce(e.s, 0)::text as entries
    from ledger_account_balances b left join (select account_id, sum(amount) as s from entries group by account_id) e on e.account_id = b.id
    where b.balance <> coalesce(e.s, 0) limit 5`;
  t.same(drift, [], `${label} each balance equals the sum of its entries`);
  const negative = await sql`
    select id, balance::text, credit_limit::text, held::text from ledger_accounts
    where not sharded and balance + credit_limit - held < 0 limit 5`;
  t.same(negative, [], `${label} no available balance below zero`);
  const heldDrift = await sql`
    select a.id, a.held::text, coalesce(h.s, 0)::text as open_holds from ledger_accounts a
    left join (select account_id, sum(amount) as s from holds where status = 'open' group by account_id) h on h.account_id = a.id
    where a.held <> coalesce(h.s, 0) limit 5`;
  t.same(heldDrift, [], `${label} held equals the sum of open holds`);
  // A sub-account's credit limit is its operator's money, held: what the sub-account may owe is paid for.
  const unbacked = await sql`
    select s.id, s.credit_limit::text, coalesce(h.amount, 0)::text as held_on_operator
    from ledger_accounts s join accounts o on o.id = s.owner_id and o.parent_id is not null
    left join ledger_accounts p on p.owner_id = o.parent_id and p.kind = s.kind
    left join holds h on h.account_id = p.id and h.status = 'open' and h.related_entity_type = 'sub_account_credit_limit'
                     and h.related_entity_id = s.owner_id::text
    where s.kind in ('customer', 'test_credit') and s.credit_limit <> coalesce(h.amount, 0) limit 5`;
  t.same(unbacked, [], `${label} every sub-account credit limit is held on its operator`);
  // Platform (sharded) entries carry no balanceAfter; every other entry's is the running sum.
  const afterDrift = await sql`
    select id from (
      select id, balance_after,
             sum(amount) over (partition by account_id order by seq rows between unbounded preceding and current row) as running
      from entries) x
    where balance_after is not null and balance_after <> running limit 5`;
  t.same(afterDrift, [], `${label} balanceAfter is the running sum`);
}

export function pgCode(err: unknown): string | undefined {
  return (err as { code?: string }).code;
}
