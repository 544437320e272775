import type { Db, Sql } from '../../db/connection.js';

export type PayoutStatus = 'pending_approval' | 'paid' | 'rejected' | 'canceled';

export interface PayoutDestination {
  accountName: string;
  bankName?: string | undefined;
  iban?: string | undefined;
  accountNumber?: string | undefined;
  routingNumber?: string | undefined;
  swift?: string | undefined;
  country?: string | undefined;
}

export interface PayoutRow {
  id: string;
  accountId: string;
  amount: string;
  status: PayoutStatus;
  method: 'wire';
  destination: PayoutDestination;
  note: string | null;
  postingId: string | null;
  reviewNote: string | null;
  reviewedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

const COLUMNS = [
  'id',
  'account_id',
  'status',
  'method',
  'destination',
  'note',
  'posting_id',
  'review_note',
  'reviewed_at',
  'created_at',
  'updated_at',
];

export function createPayoutsRepo(sql: Sql) {
  const cols = (db: Db) => db`${db(COLUMNS)}, amount::text`;
  return {
    async insert(
      db: Db,
      p: {
        id: string;
        accountId: string;
        amount: string;
        destination: PayoutDestination;
        note: string | null;
        at: Date;
      },
    ): Promise<PayoutRow> {
      const [row] = await db<PayoutRow[]>`
        insert into payouts (id, account_id, amount, status, method, destination, note, created_at, updated_at)
        values (${p.id}, ${p.accountId}, ${p.amount}::numeric, 'pending_approval', 'wire', ${db.json(p.destination as never)},
                ${p.note}, ${p.at}, ${p.at})
        returning ${cols(db)}`;
      return row!;
    },

    /** Amount still waiting for the operator: it is not withdrawable twice. */
    async pendingTotal(db: Db, accountId: string): Promise<string> {
      const [row] = await db<{ s: string }[]>`
        select coalesce(sum(amount), 0)::text as s from payouts where account_id = ${accountId} and status = 'pending_approval'`;
      return row!.s;
    },

    async list(accountId: string, cursor: string | undefined, max: number): Promise<PayoutRow[]> {
      return sql<PayoutRow[]>`
        select ${cols(sql)} from payouts where account_id = ${accountId} ${cursor ? sql`and id < ${cursor}` : sql``}
        order by id desc limit ${max}`;
    },

    async pending(max: number): Promise<PayoutRow[]> {
      return sql<
        PayoutRow[]
      >`select ${cols(sql)} from payouts where status = 'pending_approval' order by id limit ${max}`;
    },

    async lock(db: Db, id: string): Promise<PayoutRow | undefined> {
      const [row] = await db<PayoutRow[]>`select ${cols(db)} from payouts where id = ${id} for update`;
      return row;
    },

    async review(
      db: Db,
      id: string,
      r: { status: PayoutStatus; postingId: string | null; note: string | null; by: string | null; at: Date },
    ): Promise<PayoutRow> {
      const [row] = await db<PayoutRow[]>`
        update payouts set status = ${r.status}, posting_id = ${r.postingId}, review_note = ${r.note}, reviewed_by = ${r.by},
               reviewed_at = ${r.at}, updated_at = ${r.at}
        where id = ${id} returning ${cols(db)}`;
      return row!;
    },
  };
}

export type PayoutsRepo = ReturnType<typeof createPayoutsRepo>;
