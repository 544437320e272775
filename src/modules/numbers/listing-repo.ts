import type { Db, Sql } from '../../db/connection.js';

export type ListingStatus = 'pending' | 'approved' | 'rejected';

export interface ListingRequestRow {
  id: string;
  accountId: string;
  status: ListingStatus;
  companyName: string | null;
  contactName: string;
  contactEmail: string | null;
  contactPhone: string | null;
  selectedDidIds: string[];
  didCount: number | null;
  countries: string | null;
  numberTypes: string | null;
  monthlyVolume: string | null;
  targetPrice: string | null;
  notes: string | null;
  reviewNote: string | null;
  submittedAt: Date;
  reviewedAt: Date | null;
}

export interface ListingInput {
  companyName: string | null;
  contactName: string;
  contactEmail: string | null;
  contactPhone: string | null;
  selectedDidIds: string[];
  didCount: number | null;
  countries: string | null;
  numberTypes: string | null;
  monthlyVolume: string | null;
  targetPrice: string | null;
  notes: string | null;
}

const COLUMNS = (db: Db) => db`
  id, account_id, status, company_name, contact_name, contact_email, contact_phone, selected_did_ids, did_count,
  countries, number_types, monthly_volume, target_price, notes, review_note, submitted_at, reviewed_at`;

/** Inserts the request; false when the account already has an open one (the partial unique index decides). */
export async function insert(db: Db, id: string, accountId: string, r: ListingInput, at: Date): Promise<boolean> {
  const res = await db`
    insert into did_listing_requests (id, account_id, company_name, contact_name, contact_email, contact_phone,
      selected_did_ids, did_count, countries, number_types, monthly_volume, target_price, notes, submitted_at)
    values (${id}, ${accountId}, ${r.companyName}, ${r.contactName}, ${r.contactEmail}, ${r.contactPhone},
      ${r.selectedDidIds}::uuid[], ${r.didCount}, ${r.countries}, ${r.numberTypes}, ${r.monthlyVolume}, ${r.targetPrice},
      ${r.notes}, ${at})
    on conflict (account_id) where status = 'pending' do nothing`;
  return res.count === 1;
}

/** The open request, else the latest reviewed one. */
export async function latest(sql: Sql, accountId: string): Promise<ListingRequestRow | undefined> {
  const [row] = await sql<ListingRequestRow[]>`
    select ${COLUMNS(sql)} from did_listing_requests where account_id = ${accountId}
    order by (status = 'pending') desc, id desc limit 1`;
  return row;
}

export async function byId(db: Db, id: string, opts: { forUpdate?: boolean } = {}) {
  const [row] = opts.forUpdate
    ? await db<ListingRequestRow[]>`select ${COLUMNS(db)} from did_listing_requests where id = ${id} for update`
    : await db<ListingRequestRow[]>`select ${COLUMNS(db)} from did_listing_requests where id = ${id}`;
  return row;
}

export async function list(
  sql: Sql,
  q: { status?: ListingStatus | undefined; cursor?: string | undefined; limit: number },
) {
  return sql<ListingRequestRow[]>`
    select ${COLUMNS(sql)} from did_listing_requests
    where true ${q.status ? sql`and status = ${q.status}` : sql``} ${q.cursor ? sql`and id < ${q.cursor}` : sql``}
    order by id desc limit ${q.limit + 1}`;
}

export async function review(
  db: Db,
  id: string,
  r: { status: 'approved' | 'rejected'; reviewer: string; note: string | null; at: Date },
): Promise<void> {
  await db`
    update did_listing_requests set status = ${r.status}, reviewed_by = ${r.reviewer}, review_note = ${r.note},
                                    reviewed_at = ${r.at}
    where id = ${id}`;
}
