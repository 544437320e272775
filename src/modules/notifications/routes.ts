import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { DateTime, Nullable, Ok, Uuid, ok } from '../../http/envelope.js';
import { CursorQuery, cursorPage } from '../../http/pagination.js';
import type { NotificationsService } from './service.js';

const TAGS = ['Notifications'];
const READ = { auth: 'required', scope: 'account:read' } as const;
// Marking read changes only the account's own feed, never live traffic: test keys may do it.
const WRITE = { auth: 'required', scope: 'account:write', testKeys: 'allow' } as const;
const Notification = Type.Object({
  id: Uuid(),
  kind: Type.String({
    description: 'the event it came from (balance.low, kyc.verified, …) or webhook.endpoint_disabled',
  }),
  title: Type.String(),
  body: Type.String(),
  data: Type.Record(Type.String(), Type.Unknown()),
  read: Type.Boolean(),
  readAt: Nullable(DateTime()),
  createdAt: DateTime(),
});
const Preference = Type.Object({
  kind: Type.String(),
  label: Type.String(),
  inApp: Type.Boolean(),
  email: Type.Boolean(),
});

export function notificationsRoutes(notifications: NotificationsService) {
  return (app: App) => {
    app.get(
      '/notifications',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'The in-app notification feed, newest first, with the unread count',
          description:
            '`unreadCount` beside the page counts every unread notification of the account (poll with limit=1 for a badge).',
          querystring: Type.Object({ ...CursorQuery(), unreadOnly: Type.Optional(Type.Boolean({ default: false })) }),
          response: {
            200: Type.Object({
              success: Type.Literal(true),
              data: Type.Array(Notification),
              nextCursor: Nullable(Type.String({ format: 'uuid' })),
              hasMore: Type.Boolean(),
              unreadCount: Type.Integer(),
            }),
          },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 25;
        const r = await notifications.list(req.principal!.accountId, {
          cursor: req.query.cursor,
          limit,
          unreadOnly: req.query.unreadOnly ?? false,
        });
        return { ...cursorPage(r.rows, limit), unreadCount: r.unreadCount };
      },
    );

    app.post(
      '/notifications/:id/read',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Mark one notification read',
          params: Type.Object({ id: Uuid() }),
          response: {
            200: Ok(Type.Object({ id: Uuid(), read: Type.Boolean(), readAt: DateTime(), unreadCount: Type.Integer() })),
          },
        },
      },
      async (req) => ok(await notifications.markRead(req.principal!.accountId, req.params.id)),
    );

    app.post(
      '/notifications/read-all',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Mark every notification read (optionally only up to one id, the newest the user saw)',
          body: Type.Optional(
            Type.Object({ before: Type.Optional(Uuid('marks this one and older')) }, { additionalProperties: false }),
          ),
          response: { 200: Ok(Type.Object({ marked: Type.Integer(), unreadCount: Type.Integer() })) },
        },
        // No body at all means every notification.
        preValidation: async (req) => {
          req.body ??= {};
        },
      },
      async (req) => ok(await notifications.markAllRead(req.principal!.accountId, req.body?.before)),
    );

    app.get(
      '/notifications/preferences',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'Which events notify the account, in the app and by e-mail',
          response: { 200: Ok(Type.Array(Preference)) },
        },
      },
      async (req) => ok(await notifications.preferences(req.principal!.accountId)),
    );

    app.put(
      '/notifications/preferences',
      {
        config: { access: { auth: 'required', scope: 'account:write' } },
        schema: {
          tags: TAGS,
          summary: 'Change notification preferences (send only the kinds that change)',
          body: Type.Object(
            {
              preferences: Type.Array(
                Type.Object(
                  {
                    kind: Type.String({ maxLength: 64 }),
                    inApp: Type.Optional(Type.Boolean()),
                    email: Type.Optional(Type.Boolean()),
                  },
                  { additionalProperties: false },
                ),
                { maxItems: 100 },
              ),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Type.Array(Preference)) },
        },
      },
      async (req) => ok(await notifications.savePreferences(req.principal!.accountId, req.body.preferences)),
    );
  };
}
