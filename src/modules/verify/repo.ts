import type { Db } from '../../db/connection.js';

export type VerificationStatus = 'pending' | 'approved' | 'expired' | 'max_attempts' | 'canceled' | 'failed';
export type Channel = 'sms' | 'voice';

export interface VerificationRow {
  id: string;
  accountId: string;
  toNumber: string;
  channel: Channel;
  language: string;
  brand: string | null;
  codeLength: number;
  codeHash: string;
  status: VerificationStatus;
  attempts: number;
  maxAttempts: number;
  expiresAt: Date;
  simulated: boolean;
  messageId: string | null;
  callId: string | null;
  failure: string | null;
  createdAt: Date;
  updatedAt: Date;
  approvedAt: Date | null;
}

export type NewVerification = Omit<
  VerificationRow,
  'attempts' | 'messageId' | 'callId' | 'failure' | 'approvedAt' | 'updatedAt'
>;

/** The verifications table; the verify module is its only writer. */
export function createVerifyRepo(db: Db) {
  return {
    /**
     * Serialises starts for one number of one account until the transaction ends, so two
     * concurrent starts cannot both pass the spacing and hourly limits.
     */
    async lockNumber(tx: Db, accountId: string, toNumber: string): Promise<void> {
      await tx`select pg_advisory_xact_lock(hashtextextended(${`verify:${accountId}:${toNumber}`}, 0))`;
    },

    /** Creation times of codes that went out (or are going out) to the number since `since`, newest first. */
    async sentSince(tx: Db, accountId: string, toNumber: string, since: Date): Promise<Date[]> {
      const rows = await tx<{ createdAt: Date }[]>`
        select created_at from verifications
        where account_id = ${accountId} and to_number = ${toNumber} and created_at > ${since}
          and status <> 'failed'
        order by created_at desc`;
      return rows.map((r) => r.createdAt);
    },

    async insert(tx: Db, v: NewVerification): Promise<void> {
      const row = { ...v, updatedAt: v.createdAt };
      await tx`insert into verifications ${tx(
        row,
        'id',
        'accountId',
        'toNumber',
        'channel',
        'language',
        'brand',
        'codeLength',
        'codeHash',
        'status',
        'maxAttempts',
        'expiresAt',
        'simulated',
        'createdAt',
        'updatedAt',
      )}`;
    },

    /** Earlier pending codes of the number: a new code replaces them, so only one can be guessed at a time. */
    async supersede(tx: Db, accountId: string, toNumber: string, exceptId: string, at: Date): Promise<string[]> {
      const rows = await tx<{ id: string }[]>`
        update verifications set status = 'canceled', failure = 'superseded', updated_at = ${at}
        where account_id = ${accountId} and to_number = ${toNumber} and status = 'pending' and id <> ${exceptId}
        returning id`;
      return rows.map((r) => r.id);
    },

    async carriedBy(db2: Db, id: string, ref: { messageId?: string; callId?: string }, at: Date): Promise<void> {
      await db2`
        update verifications
        set message_id = ${ref.messageId ?? null}, call_id = ${ref.callId ?? null}, updated_at = ${at}
        where id = ${id}`;
    },

    async markFailed(db2: Db, id: string, failure: string, at: Date): Promise<void> {
      await db2`update verifications set status = 'failed', failure = ${failure}, updated_at = ${at} where id = ${id}`;
    },

    /** The row locked for a check or a cancel (inside the caller's transaction). */
    async forUpdate(tx: Db, id: string, accountId: string): Promise<VerificationRow | null> {
      const [r] = await tx<VerificationRow[]>`
        select * from verifications where id = ${id} and account_id = ${accountId} for update`;
      return r ?? null;
    },

    async update(
      tx: Db,
      id: string,
      fields: { status: VerificationStatus; attempts: number; at: Date; approvedAt?: Date | null; failure?: string },
    ): Promise<void> {
      await tx`
        update verifications
        set status = ${fields.status}, attempts = ${fields.attempts}, updated_at = ${fields.at},
            approved_at = coalesce(${fields.approvedAt ?? null}::timestamptz, approved_at),
            failure = coalesce(${fields.failure ?? null}, failure)
        where id = ${id}`;
    },

    async get(id: string, accountId: string): Promise<VerificationRow | null> {
      const [r] = await db<
        VerificationRow[]
      >`select * from verifications where id = ${id} and account_id = ${accountId}`;
      return r ?? null;
    },

    async list(
      accountId: string,
      q: {
        cursor?: string | undefined;
        status?: VerificationStatus | undefined;
        to?: string | undefined;
        limit: number;
        now: Date;
      },
    ): Promise<VerificationRow[]> {
      // A pending code past its expiry is expired, whether or not a check has recorded it yet.
      const status =
        q.status === 'pending'
          ? db`and status = 'pending' and expires_at > ${q.now}`
          : q.status === 'expired'
            ? db`and (status = 'expired' or (status = 'pending' and expires_at <= ${q.now}))`
            : q.status
              ? db`and status = ${q.status}`
              : db``;
      return db<VerificationRow[]>`
        select * from verifications
        where account_id = ${accountId}
          ${q.cursor ? db`and id < ${q.cursor}` : db``}
          ${status}
          ${q.to ? db`and to_number = ${q.to}` : db``}
        order by id desc
        limit ${q.limit}`;
    },
  };
}

export type VerifyRepo = ReturnType<typeof createVerifyRepo>;
