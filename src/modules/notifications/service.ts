import type { Logger } from 'pino';
import type { Config } from '../../config/schema.js';
import type { Sql } from '../../db/connection.js';
import { notFound, validationError } from '../../http/errors.js';
import type { Clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import type { Mailer } from '../../platform/mailer.js';
import { NotificationKinds } from './kinds.js';
import { createNotificationsRepo, type NotificationRow } from './repo.js';

const BATCH = 500;

const out = (n: NotificationRow) => ({
  id: n.id,
  kind: n.kind,
  title: n.title,
  body: n.body,
  data: n.data,
  read: n.readAt !== null,
  readAt: n.readAt?.toISOString() ?? null,
  createdAt: n.createdAt.toISOString(),
});

/**
 * The in-app feed: other modules only `emit` outbox events; `pump` turns the events named in
 * `kinds.ts` into notification rows (and e-mails, when the account chose them) per the account's
 * preferences. The feed API reads and marks those rows.
 */
export function createNotificationsService(deps: {
  sql: Sql;
  config: Readonly<Config>;
  clock: Clock;
  log: Logger;
  mailer: Mailer;
}) {
  const { sql, config, clock, log, mailer } = deps;
  const repo = createNotificationsRepo(sql);
  const windowSeconds = config.notifications.late_commit_seconds;

  async function preferencesOf(accountId: string) {
    const saved = new Map((await repo.preferences(accountId)).map((p) => [p.kind, p]));
    return Object.entries(NotificationKinds).map(([kind, spec]) => ({
      kind,
      label: spec.label,
      inApp: saved.get(kind)?.inApp ?? spec.inAppDefault,
      email: saved.get(kind)?.email ?? false,
    }));
  }

  return {
    async list(accountId: string, q: { cursor?: string | undefined; limit: number; unreadOnly: boolean }) {
      const [rows, unread] = await Promise.all([repo.list(accountId, q), repo.unreadCount(accountId)]);
      return { rows: rows.map(out), unreadCount: unread };
    },
    async markRead(accountId: string, id: string) {
      const at = await repo.markRead(accountId, id, clock.now());
      if (!at) throw notFound('Notification');
      return { id, read: true, readAt: at.toISOString(), unreadCount: await repo.unreadCount(accountId) };
    },
    async markAllRead(accountId: string, before?: string) {
      const marked = await repo.markAllRead(accountId, clock.now(), before);
      return { marked, unreadCount: await repo.unreadCount(accountId) };
    },
    preferences: preferencesOf,
    async savePreferences(
      accountId: string,
      changes: { kind: string; inApp?: boolean | undefined; email?: boolean | undefined }[],
    ) {
      const current = new Map((await preferencesOf(accountId)).map((p) => [p.kind, p]));
      const bad = changes.flatMap((c, i) =>
        current.has(c.kind) ? [] : [{ path: `preferences/${i}/kind`, message: 'is not a notification kind' }],
      );
      if (bad.length) throw validationError(bad);
      const rows = changes.map((c) => {
        const p = current.get(c.kind)!;
        return { kind: c.kind, inApp: c.inApp ?? p.inApp, email: c.email ?? p.email };
      });
      if (rows.length) await repo.savePreferences(accountId, rows, clock.now());
      return preferencesOf(accountId);
    },

    /** Handles the feed events committed since the last pass; returns how many it handled. */
    async pump(): Promise<number> {
      let handled = 0;
      for (;;) {
        const mails: { to: string; subject: string; text: string }[] = [];
        const n = await sql.begin(async (tx) => {
          const events = await repo.claimEvents(tx, windowSeconds, BATCH);
          const rows = [];
          for (const e of events) {
            const spec = NotificationKinds[e.event];
            if (!spec) continue;
            const { title, body } = spec.render(e.data);
            if (e.inApp ?? spec.inAppDefault)
              rows.push({
                id: newId(),
                accountId: e.accountId,
                eventId: e.id,
                kind: e.event,
                title,
                body,
                data: e.data,
                createdAt: e.createdAt,
              });
            if (e.email && e.address)
              mails.push({
                to: e.address,
                subject: title,
                text: `${body}\n\nSee your notifications: ${mailer.link('/notifications')}\n`,
              });
          }
          await repo.insertNotifications(tx, rows);
          return events.length;
        });
        // After commit: an e-mail is sent at most once, and a failed send is spooled by the mailer.
        for (const m of mails)
          await mailer.send(m).catch((err: unknown) => log.error({ err }, 'notification e-mail failed'));
        handled += n;
        if (n < BATCH) break;
      }
      await repo.pruneSeen(windowSeconds);
      return handled;
    },
  };
}

export type NotificationsService = ReturnType<typeof createNotificationsService>;
