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

/** `messageId`: the SMS's id, chosen before it is sent so the row names it from the start. */
export type NewVerification = Omit<VerificationRow, 'attempts' | 'callId' | 'failure' | 'approvedAt' | 'updatedAt'>;

/** The verifications table; the verify module is its only writer. */
export function createVerifyRepo(db: Db) {
  return {
    /**
     * Takes a send slot of the number and writes the verification, in one statement: the slot's
     * row lock makes concurrent starts for one number wait for each other and re-check the limits
     * against what the first one took. Returns false, writing nothing, when a limit refuses. In
     * `tx` when given (the SMS's own transaction, see the service).
     */
    async reserve(
      v: NewVerification,
      limits: { spacingSeconds: number; perHour: number },
      tx: Db = db,
    ): Promise<boolean> {
      const now = v.createdAt;
      const spaced = new Date(now.getTime() - limits.spacingSeconds * 1000);
      const hour = new Date(now.getTime() - 3_600_000);
      const rows = await tx`
        with slot as (
          insert into verification_sends as s (account_id, to_number, sent_at)
          values (${v.accountId}, ${v.toNumber}, array[${now}::timestamptz])
          on conflict (account_id, to_number) do update
          set sent_at = array[${now}::timestamptz] || array(
                select t from unnest(s.sent_at) t where t > ${hour} order by t desc limit ${limits.perHour - 1})
          where not exists (select 1 from unnest(s.sent_at) t where t > ${spaced})
            and (select count(*) from unnest(s.sent_at) t where t > ${hour}) < ${limits.perHour}
          returning 1
        ), superseded as (
          update verifications set status = 'canceled', failure = 'superseded', updated_at = ${now}
          where account_id = ${v.accountId} and to_number = ${v.toNumber} and status = 'pending'
            and exists (select 1 from slot)
        )
        insert into verifications (id, account_id, to_number, channel, language, brand, code_length, code_hash, status,
                                   max_attempts, expires_at, simulated, message_id, created_at, updated_at)
        select ${v.id}, ${v.accountId}, ${v.toNumber}, ${v.channel}, ${v.language}, ${v.brand}, ${v.codeLength},
               ${v.codeHash}, ${v.status}, ${v.maxAttempts}, ${v.expiresAt}, ${v.simulated}, ${v.messageId}, ${now}, ${now}
        where exists (select 1 from slot)
        returning 1`;
      return rows.length === 1;
    },

    /** Send times still inside the hour (newest first), to say when the number has room again. */
    async sendTimes(accountId: string, toNumber: string, tx: Db = db): Promise<Date[]> {
      const [r] = await tx<{ sentAt: Date[] }[]>`
        select sent_at from verification_sends where account_id = ${accountId} and to_number = ${toNumber}`;
      return (r?.sentAt ?? []).map((d) => new Date(d)).sort((a, b) => b.getTime() - a.getTime());
    },

    /** Numbers with no code in the last hour: their slots say nothing any more. */
    async pruneSends(before: Date): Promise<number> {
      const r = await db`delete from verification_sends where sent_at[1] < ${before}`;
      return r.count;
    },

    /** A code that never went out gives its slot back. */
    async releaseSlot(accountId: string, toNumber: string, at: Date): Promise<void> {
      await db`
        update verification_sends set sent_at = array_remove(sent_at, ${at}::timestamptz)
        where account_id = ${accountId} and to_number = ${toNumber}`;
    },

    async calledBy(id: string, callId: string, at: Date): Promise<void> {
      await db`update verifications set call_id = ${callId}, updated_at = ${at} where id = ${id}`;
    },

    async markFailed(id: string, failure: string, messageKept: boolean, at: Date): Promise<void> {
      await db`
        update verifications
        set status = 'failed', failure = ${failure}, updated_at = ${at},
            message_id = case when ${messageKept} then message_id end
        where id = ${id}`;
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
