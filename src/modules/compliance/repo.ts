import type { Db } from '../../db/connection.js';

export type KycStatus = 'unverified' | 'pending' | 'verified' | 'rejected';
export type DocumentKind =
  'passport' | 'national_id' | 'driving_licence' | 'proof_of_address' | 'business_registration' | 'other';

export interface KycRow {
  accountId: string;
  status: KycStatus;
  subjectType: 'individual' | 'business' | null;
  legalName: string | null;
  countryCode: string | null;
  address: string | null;
  dateOfBirth: string | null;
  registrationNumber: string | null;
  submittedAt: Date | null;
  reviewedAt: Date | null;
  rejectionReason: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface KycDocumentRow {
  id: string;
  accountId: string;
  kind: DocumentKind;
  fileName: string;
  contentType: string;
  sizeBytes: number;
  sha256: string;
  storageKey: string;
  createdAt: Date;
}

export interface KycDetails {
  subjectType?: 'individual' | 'business' | undefined;
  legalName?: string | undefined;
  countryCode?: string | undefined;
  address?: string | undefined;
  dateOfBirth?: string | null | undefined;
  registrationNumber?: string | null | undefined;
}

export function createComplianceRepo(db: Db) {
  return {
    async record(accountId: string, tx: Db = db): Promise<KycRow | undefined> {
      const [row] = await tx<KycRow[]>`
        select account_id, status, subject_type, legal_name, country_code, address, to_char(date_of_birth, 'YYYY-MM-DD') as date_of_birth,
               registration_number, submitted_at, reviewed_at, rejection_reason, created_at, updated_at
        from kyc_records where account_id = ${accountId}`;
      return row;
    },
    /** The record locked for a change; made empty first when the account has none. */
    async lockRecord(accountId: string, now: Date, tx: Db): Promise<KycRow> {
      await tx`insert into kyc_records (account_id, created_at, updated_at) values (${accountId}, ${now}, ${now}) on conflict do nothing`;
      await tx`select 1 from kyc_records where account_id = ${accountId} for update`;
      return (await this.record(accountId, tx))!;
    },
    async lockExisting(accountId: string, tx: Db): Promise<KycRow | undefined> {
      const [row] = await tx`select 1 from kyc_records where account_id = ${accountId} for update`;
      return row ? this.record(accountId, tx) : undefined;
    },
    async updateDetails(accountId: string, d: KycDetails, now: Date, tx: Db) {
      const set: Record<string, unknown> = { updated_at: now };
      if (d.subjectType !== undefined) set['subject_type'] = d.subjectType;
      if (d.legalName !== undefined) set['legal_name'] = d.legalName;
      if (d.countryCode !== undefined) set['country_code'] = d.countryCode;
      if (d.address !== undefined) set['address'] = d.address;
      if (d.dateOfBirth !== undefined) set['date_of_birth'] = d.dateOfBirth;
      if (d.registrationNumber !== undefined) set['registration_number'] = d.registrationNumber;
      await tx`update kyc_records set ${tx(set)} where account_id = ${accountId}`;
    },
    async setStatus(
      accountId: string,
      s: { status: KycStatus; now: Date; submitted?: boolean; reviewerId?: string; reason?: string | null },
      tx: Db,
    ) {
      await tx`
        update kyc_records set status = ${s.status}, updated_at = ${s.now},
          submitted_at = ${s.submitted ? s.now : tx`submitted_at`},
          reviewed_at = ${s.reviewerId ? s.now : tx`reviewed_at`},
          reviewed_by = ${s.reviewerId ?? tx`reviewed_by`},
          rejection_reason = ${s.reviewerId ? (s.reason ?? null) : tx`rejection_reason`}
        where account_id = ${accountId}`;
    },
    async insertReview(
      r: {
        id: string;
        accountId: string;
        decision: 'approve' | 'reject';
        reason: string | null;
        reviewerId: string;
        now: Date;
      },
      tx: Db,
    ) {
      await tx`
        insert into kyc_reviews (id, account_id, decision, reason, reviewer_id, created_at)
        values (${r.id}, ${r.accountId}, ${r.decision}, ${r.reason}, ${r.reviewerId}, ${r.now})`;
    },
    async documents(accountId: string, tx: Db = db): Promise<KycDocumentRow[]> {
      return tx<KycDocumentRow[]>`
        select id, account_id, kind, file_name, content_type, size_bytes, sha256, storage_key, created_at
        from kyc_documents where account_id = ${accountId} and deleted_at is null order by id desc`;
    },
    async document(id: string): Promise<KycDocumentRow | undefined> {
      const [row] = await db<KycDocumentRow[]>`
        select id, account_id, kind, file_name, content_type, size_bytes, sha256, storage_key, created_at
        from kyc_documents where id = ${id} and deleted_at is null`;
      return row;
    },
    async insertDocument(d: Omit<KycDocumentRow, 'createdAt'> & { now: Date }, tx: Db) {
      await tx`
        insert into kyc_documents (id, account_id, kind, file_name, content_type, size_bytes, sha256, storage_key, created_at)
        values (${d.id}, ${d.accountId}, ${d.kind}, ${d.fileName}, ${d.contentType}, ${d.sizeBytes}, ${d.sha256}, ${d.storageKey}, ${d.now})`;
    },
    async queue(q: {
      status: KycStatus;
      cursor?: string | undefined;
      limit: number;
    }): Promise<(KycRow & { id: string; email: string | null })[]> {
      return db<(KycRow & { id: string; email: string | null })[]>`
        select k.account_id as id, k.account_id, k.status, k.subject_type, k.legal_name, k.country_code, k.address,
               to_char(k.date_of_birth, 'YYYY-MM-DD') as date_of_birth, k.registration_number, k.submitted_at, k.reviewed_at,
               k.rejection_reason, k.created_at, k.updated_at, a.email
        from kyc_records k join accounts a on a.id = k.account_id
        where k.status = ${q.status} ${q.cursor ? db`and k.account_id < ${q.cursor}` : db``}
        order by k.account_id desc limit ${q.limit + 1}`;
    },
  };
}

export type ComplianceRepo = ReturnType<typeof createComplianceRepo>;
