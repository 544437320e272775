import type { Db, Sql } from '../../db/connection.js';
import { conflict } from '../../http/errors.js';

export interface DeletionRow {
  id: string;
  accountId: string;
  state: 'scheduled' | 'cancelled' | 'completed';
  forfeitBalance: boolean;
  reason: string | null;
  requestedBy: string;
  requestedAt: Date;
  scheduledFor: Date;
  cancelledAt: Date | null;
  completedAt: Date | null;
  blockedReason: string | null;
  outcome: Record<string, unknown> | null;
}

export interface ExportRow {
  id: string;
  accountId: string;
  state: 'running' | 'completed' | 'failed';
  file: string | null;
  sizeBytes: string | null;
  sha256: string | null;
  sections: Record<string, number> | null;
  error: string | null;
  createdAt: Date;
  completedAt: Date | null;
  expiresAt: Date;
}

export interface DeviceRow {
  id: string;
  userAgent: string | null;
  name: string | null;
  trustedAt: Date | null;
  lastIp: string | null;
  lastSeenAt: Date;
  firstSeenAt: Date;
  sessions: number;
  sessionIds: string[];
}

/** A device is the login's live sessions with one user agent: its id is derived from both. */
const deviceId = (sql: Sql) => sql`md5(s.account_id::text || '|' || coalesce(s.user_agent, ''))::uuid`;

export function createLifecycleRepo(sql: Sql) {
  return {
    sql,

    /** The open (scheduled) deletion of an account, or its latest one. */
    async deletion(accountId: string, db: Db = sql, lock = false): Promise<DeletionRow | undefined> {
      const [row] = await db<DeletionRow[]>`
        select * from account_deletions where account_id = ${accountId}
        order by (state = 'scheduled') desc, id desc limit 1 ${lock ? db`for update` : db``}`;
      return row;
    },

    async insertDeletion(d: Omit<DeletionRow, 'cancelledAt' | 'completedAt' | 'blockedReason' | 'outcome'>) {
      try {
        const [row] = await sql<DeletionRow[]>`
          insert into account_deletions (id, account_id, state, forfeit_balance, reason, requested_by, requested_at, scheduled_for)
          values (${d.id}, ${d.accountId}, 'scheduled', ${d.forfeitBalance}, ${d.reason}, ${d.requestedBy}, ${d.requestedAt},
                  ${d.scheduledFor})
          returning *`;
        return row!;
      } catch (err) {
        if ((err as { code?: string }).code === '23505')
          throw conflict('A deletion of this account is already scheduled');
        throw err;
      }
    },

    async cancelDeletion(db: Db, id: string, now: Date) {
      const [row] = await db<DeletionRow[]>`
        update account_deletions set state = 'cancelled', cancelled_at = ${now}
        where id = ${id} and state = 'scheduled' returning *`;
      return row;
    },

    async blockDeletion(id: string, reason: string) {
      await sql`update account_deletions set blocked_reason = ${reason} where id = ${id} and state = 'scheduled'`;
    },

    async completeDeletion(db: Db, id: string, now: Date, outcome: Record<string, unknown>) {
      await db`
        update account_deletions set state = 'completed', completed_at = ${now}, blocked_reason = null,
          outcome = ${db.json(outcome as never)}
        where id = ${id}`;
    },

    async dueDeletions(now: Date, limit: number): Promise<DeletionRow[]> {
      return sql<DeletionRow[]>`
        select * from account_deletions where state = 'scheduled' and scheduled_for <= ${now}
        order by scheduled_for limit ${limit}`;
    },

    async insertExport(e: { id: string; accountId: string; requestedBy: string; now: Date; expiresAt: Date }) {
      return sql.begin(async (tx) => {
        // One running export per account: serialise the check with the insert.
        await tx`select pg_advisory_xact_lock(hashtextextended(${`account-export:${e.accountId}`}, 0))`;
        const [running] =
          await tx`select 1 from account_exports where account_id = ${e.accountId} and state = 'running'`;
        if (running) throw conflict('An export of this account is already running; wait for it to finish');
        const [row] = await tx<ExportRow[]>`
          insert into account_exports (id, account_id, state, requested_by, created_at, expires_at)
          values (${e.id}, ${e.accountId}, 'running', ${e.requestedBy}, ${e.now}, ${e.expiresAt})
          returning *`;
        return row!;
      });
    },

    async finishExport(
      db: Db,
      id: string,
      done: { file: string; sizeBytes: number; sha256: string; sections: Record<string, number>; at: Date },
    ) {
      await db`
        update account_exports set state = 'completed', file = ${done.file}, size_bytes = ${done.sizeBytes},
          sha256 = ${done.sha256}, sections = ${db.json(done.sections)}, completed_at = ${done.at}
        where id = ${id}`;
    },

    async failExport(id: string, at: Date, error: string) {
      await sql`update account_exports set state = 'failed', error = ${error}, completed_at = ${at} where id = ${id}`;
    },

    async exports(accountId: string, id?: string): Promise<ExportRow[]> {
      return sql<ExportRow[]>`
        select id, account_id, state, file, size_bytes::text, sha256, sections, error, created_at, completed_at, expires_at
        from account_exports where account_id = ${accountId} ${id ? sql`and id = ${id}` : sql``}
        order by id desc limit 25`;
    },

    async deleteExport(accountId: string, id: string): Promise<{ file: string | null } | undefined> {
      const [row] = await sql<{ file: string | null }[]>`
        delete from account_exports where account_id = ${accountId} and id = ${id} and state <> 'running' returning file`;
      return row;
    },

    /** Expired exports, and exports a dead daemon left running, go (their files are the caller's to remove). */
    async sweepExports(now: Date, staleBefore: Date): Promise<(string | null)[]> {
      await sql`
        update account_exports set state = 'failed', error = 'interrupted by a restart', completed_at = ${now}
        where state = 'running' and created_at < ${staleBefore}`;
      const gone = await sql<
        { file: string | null }[]
      >`delete from account_exports where expires_at <= ${now} returning file`;
      return gone.map((g) => g.file);
    },

    /** The login's own live sessions grouped by device, most recently seen first. */
    async devices(accountId: string, now: Date): Promise<DeviceRow[]> {
      return sql<DeviceRow[]>`
        select ${deviceId(sql)} as id, s.user_agent, d.name, d.trusted_at,
               (array_agg(s.ip order by s.last_seen_at desc))[1] as last_ip,
               max(s.last_seen_at) as last_seen_at, min(s.created_at) as first_seen_at,
               count(*)::int as sessions, array_agg(s.id) as session_ids
        from sessions s
        left join account_devices d on d.account_id = s.account_id and d.device_id = ${deviceId(sql)}
        where s.account_id = ${accountId} and s.member_id is null and s.revoked_at is null and s.expires_at > ${now}
        group by 1, s.user_agent, d.name, d.trusted_at
        order by max(s.last_seen_at) desc`;
    },

    async saveDevice(accountId: string, deviceId: string, name: string | null, trustedAt: Date | null, now: Date) {
      await sql`
        insert into account_devices (account_id, device_id, name, trusted_at, updated_at)
        values (${accountId}, ${deviceId}, ${name}, ${trustedAt}, ${now})
        on conflict (account_id, device_id) do update
          set name = excluded.name, trusted_at = excluded.trusted_at, updated_at = excluded.updated_at`;
    },

    /** Ends the device's sessions and forgets what was said about it; answers the ended sessions. */
    async endDevice(accountId: string, sessionIds: readonly string[], deviceId: string, now: Date): Promise<string[]> {
      return sql.begin(async (tx) => {
        await tx`delete from account_devices where account_id = ${accountId} and device_id = ${deviceId}`;
        const rows = await tx<{ id: string }[]>`
          update sessions set revoked_at = ${now}
          where account_id = ${accountId} and id = any (${sessionIds as string[]}::uuid[]) and revoked_at is null
          returning id`;
        return rows.map((r) => r.id);
      });
    },
  };
}

export type LifecycleRepo = ReturnType<typeof createLifecycleRepo>;
