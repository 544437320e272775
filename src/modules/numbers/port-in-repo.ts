import type { Db, Sql } from '../../db/connection.js';

export type PortInStatus = 'submitted' | 'in_review' | 'approved' | 'rejected' | 'completed' | 'cancelled';

export interface PortInInput {
  numbers: string[];
  losingCarrier: string;
  carrierAccountNumber: string;
  carrierPin: string | null;
  authorizedName: string;
  documentsRef: string | null;
  desiredDate: string;
}

/** An order as stored: what the buyer sent and where the order stands. */
export interface PortInRow extends PortInInput {
  id: string;
  accountId: string;
  status: PortInStatus;
  reviewNote: string | null;
  submittedAt: Date;
  reviewedAt: Date | null;
  completedAt: Date | null;
  cancelledAt: Date | null;
  updatedAt: Date;
}

const COLUMNS = (db: Db) => db`
  id, account_id, status, numbers, losing_carrier, carrier_account_number, carrier_pin, authorized_name,
  documents_ref, desired_date::text as desired_date, review_note, submitted_at, reviewed_at, completed_at,
  cancelled_at, updated_at`;

/** Numbers of `numbers` already live on the exchange: rented here, or in another open or completed port-in. */
export async function taken(db: Db, numbers: readonly string[]): Promise<string[]> {
  const rows = await db<{ number: string }[]>`
    select number from dids where number = any(${numbers as string[]}) and status in ('pending', 'active', 'suspended')
    union
    select number from did_port_in_numbers where number = any(${numbers as string[]}) and state <> 'dropped'`;
  return rows.map((r) => r.number);
}

export async function insert(db: Db, id: string, accountId: string, r: PortInInput, at: Date): Promise<void> {
  await db`
    insert into did_port_ins (id, account_id, numbers, losing_carrier, carrier_account_number, carrier_pin,
                              authorized_name, documents_ref, desired_date, submitted_at, updated_at)
    values (${id}, ${accountId}, ${r.numbers}, ${r.losingCarrier}, ${r.carrierAccountNumber}, ${r.carrierPin},
            ${r.authorizedName}, ${r.documentsRef}, ${r.desiredDate}::date, ${at}, ${at})`;
  await db`
    insert into did_port_in_numbers (port_in_id, number, account_id)
    select ${id}, n, ${accountId} from unnest(${r.numbers}::text[]) as n`;
}

export async function byId(db: Db, id: string, opts: { forUpdate?: boolean } = {}) {
  const [row] = opts.forUpdate
    ? await db<PortInRow[]>`select ${COLUMNS(db)} from did_port_ins where id = ${id} for update`
    : await db<PortInRow[]>`select ${COLUMNS(db)} from did_port_ins where id = ${id}`;
  return row;
}

/** A cursor page (`limit + 1` rows); `accountId` keeps one account's orders (the operator sees all). */
export function list(
  sql: Sql,
  q: { accountId?: string | undefined; status?: PortInStatus | undefined; cursor?: string | undefined; limit: number },
) {
  return sql<PortInRow[]>`
    select ${COLUMNS(sql)} from did_port_ins
    where true ${q.accountId ? sql`and account_id = ${q.accountId}` : sql``}
      ${q.status ? sql`and status = ${q.status}` : sql``} ${q.cursor ? sql`and id < ${q.cursor}` : sql``}
    order by id desc limit ${q.limit + 1}`;
}

/** Moves the order to `status` with its time column; a closed order's numbers are dropped, a completed one's ported. */
export async function transition(
  db: Db,
  id: string,
  to: PortInStatus,
  o: { at: Date; reviewer?: string; note?: string | null },
): Promise<void> {
  await db`
    update did_port_ins set
      status = ${to},
      updated_at = ${o.at},
      reviewed_by = coalesce(${o.reviewer ?? null}::uuid, reviewed_by),
      review_note = ${o.note === undefined ? db`review_note` : o.note},
      reviewed_at = ${to === 'approved' || to === 'rejected' ? o.at : db`reviewed_at`},
      completed_at = ${to === 'completed' ? o.at : db`completed_at`},
      cancelled_at = ${to === 'cancelled' ? o.at : db`cancelled_at`}
    where id = ${id}`;
  if (to === 'rejected' || to === 'cancelled')
    await db`update did_port_in_numbers set state = 'dropped' where port_in_id = ${id}`;
  if (to === 'completed') await db`update did_port_in_numbers set state = 'ported' where port_in_id = ${id}`;
}
