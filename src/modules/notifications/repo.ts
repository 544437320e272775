import type { Db } from '../../db/connection.js';

export interface NotificationRow {
  id: string;
  kind: string;
  title: string;
  body: string;
  data: Record<string, unknown>;
  createdAt: Date;
  readAt: Date | null;
}

export interface FeedEvent {
  id: string;
  accountId: string;
  event: string;
  data: Record<string, unknown>;
  createdAt: Date;
  inApp: boolean | null;
  email: boolean | null;
  address: string | null;
}

export function createNotificationsRepo(db: Db) {
  return {
    async list(accountId: string, q: { cursor?: string | undefined; limit: number; unreadOnly: boolean }) {
      return db<NotificationRow[]>`
        select id, kind, title, body, data, created_at, read_at from notifications
        where account_id = ${accountId}
          ${q.unreadOnly ? db`and read_at is null` : db``}
          ${q.cursor ? db`and id < ${q.cursor}` : db``}
        order by id desc limit ${q.limit + 1}`;
    },
    async unreadCount(accountId: string): Promise<number> {
      const [row] = await db<
        { n: string }[]
      >`select count(*) as n from notifications where account_id = ${accountId} and read_at is null`;
      return Number(row!.n);
    },
    /** null when the notification is not the account's. */
    async markRead(accountId: string, id: string, now: Date): Promise<Date | null> {
      const [row] = await db<{ readAt: Date }[]>`
        update notifications set read_at = coalesce(read_at, ${now})
        where id = ${id} and account_id = ${accountId} returning read_at`;
      return row?.readAt ?? null;
    },
    async markAllRead(accountId: string, now: Date, before: string | undefined): Promise<number> {
      const rows = await db`
        update notifications set read_at = ${now}
        where account_id = ${accountId} and read_at is null ${before ? db`and id <= ${before}` : db``}
        returning id`;
      return rows.length;
    },
    async preferences(accountId: string) {
      return db<{ kind: string; inApp: boolean; email: boolean }[]>`
        select kind, in_app, email from notification_preferences where account_id = ${accountId}`;
    },
    async savePreferences(accountId: string, rows: { kind: string; inApp: boolean; email: boolean }[], now: Date) {
      const values = rows.map((r) => ({
        account_id: accountId,
        kind: r.kind,
        in_app: r.inApp,
        email: r.email,
        updated_at: now,
      }));
      await db`
        insert into notification_preferences ${db(values, 'account_id', 'kind', 'in_app', 'email', 'updated_at')}
        on conflict (account_id, kind) do update set in_app = excluded.in_app, email = excluded.email, updated_at = excluded.updated_at`;
    },

    /**
     * Claims unhandled feed events of the last `windowSeconds` (by the database clock, which stamped
     * them): each is marked seen in the same statement, so two daemons never handle one twice.
     */
    async claimEvents(tx: Db, windowSeconds: number, limit: number): Promise<FeedEvent[]> {
      return tx<FeedEvent[]>`
        with cand as (
          select e.id from events e
          where notification_event(e.event) and e.created_at >= now() - make_interval(secs => ${windowSeconds})
            and not exists (select 1 from notification_feed_seen s where s.event_id = e.id)
          order by e.created_at limit ${limit}
        ), fresh as (
          insert into notification_feed_seen (event_id, seen_at) select id, now() from cand
          on conflict do nothing returning event_id
        )
        select e.id, e.account_id, e.event, e.data, e.created_at, p.in_app, p.email, a.email as address
        from fresh f join events e on e.id = f.event_id join accounts a on a.id = e.account_id
        left join notification_preferences p on p.account_id = e.account_id and p.kind = e.event
        order by e.created_at`;
    },
    async insertNotifications(
      tx: Db,
      rows: {
        id: string;
        accountId: string;
        eventId: string;
        kind: string;
        title: string;
        body: string;
        data: Record<string, unknown>;
        createdAt: Date;
      }[],
    ) {
      if (rows.length === 0) return;
      const values = rows.map((r) => ({
        id: r.id,
        account_id: r.accountId,
        event_id: r.eventId,
        kind: r.kind,
        title: r.title,
        body: r.body,
        data: r.data,
        created_at: r.createdAt,
      }));
      await tx`
        insert into notifications ${tx(values as never, 'id', 'account_id', 'event_id', 'kind', 'title', 'body', 'data', 'created_at')}
        on conflict do nothing`;
    },
    async pruneSeen(windowSeconds: number) {
      await db`delete from notification_feed_seen where seen_at < now() - make_interval(secs => ${windowSeconds * 2})`;
    },
  };
}
