import type { Logger } from 'pino';
import type { Sql } from '../../../db/connection.js';
import { notFound, ruleError, validationError } from '../../../http/errors.js';
import type { Clock } from '../../../platform/clock.js';
import { newId } from '../../../platform/ids.js';
import { emit } from '../../../webhooks/emit.js';
import type { RoutesService } from '../listings/service.js';

type Side = 'buyer' | 'seller';

interface ThreadRow {
  id: string;
  routeId: string;
  routeName: string;
  buyerId: string;
  sellerId: string;
  createdAt: Date;
  lastMessageAt: Date;
}

const PREVIEW = 140;

/** How a seller tells its buyers apart without learning who they are. */
export const buyerLabel = (threadId: string): string => `Buyer ${threadId.replace(/-/g, '').slice(-6).toUpperCase()}`;

/**
 * Route messages (spec group "Route messages"): one thread per route and buyer. A buyer writes on a
 * route it can see; the seller answers in the thread. Each message tells the other side
 * (`route.message_received`). Neither side's account is shown to the other.
 */
export function createMessagesService(deps: { sql: Sql; clock: Clock; log: Logger; routes: RoutesService }) {
  const { sql, clock, routes } = deps;

  const threadView = (t: ThreadRow & { unread?: number; lastBody?: string | null }, side: Side) => ({
    id: t.id,
    routeId: t.routeId,
    routeName: t.routeName,
    role: side,
    buyer: buyerLabel(t.id),
    lastMessageAt: t.lastMessageAt.toISOString(),
    lastMessage: t.lastBody === undefined || t.lastBody === null ? null : t.lastBody.slice(0, PREVIEW),
    unread: t.unread ?? 0,
    createdAt: t.createdAt.toISOString(),
  });

  const threadOf = async (accountId: string, routeId: string, threadId: string | undefined) => {
    const [t] = await sql<ThreadRow[]>`
      select t.*, r.name as route_name from route_threads t join routes r on r.id = t.route_id
      where t.route_id = ${routeId} and ${
        threadId === undefined
          ? sql`t.buyer_id = ${accountId}`
          : sql`t.id = ${threadId} and (t.seller_id = ${accountId} or t.buyer_id = ${accountId})`
      }`;
    return t;
  };

  return {
    /** A buyer writes to a route's seller (the thread starts with it), or the seller answers in `threadId`. */
    async post(accountId: string, routeId: string, input: { body: string; threadId?: string }) {
      const route = await routes.visibleRoute(routeId, accountId);
      if (route === undefined) throw notFound('Route');
      const seller = route.sellerId === accountId;
      if (seller && input.threadId === undefined)
        throw validationError([{ path: '/threadId', message: "the seller answers in a buyer's thread" }]);
      if (input.body.trim() === '') throw validationError([{ path: '/body', message: 'must not be empty' }]);
      const side: Side = seller ? 'seller' : 'buyer';
      const id = newId();
      const now = clock.now();
      const thread = await sql.begin(async (tx) => {
        let t = await threadOf(accountId, routeId, input.threadId);
        if (t === undefined) {
          if (input.threadId !== undefined) throw notFound('Thread');
          await tx`
            insert into route_threads (id, route_id, buyer_id, seller_id, created_at, last_message_at)
            values (${newId()}, ${routeId}, ${accountId}, ${route.sellerId}, ${now}, ${now})
            on conflict (route_id, buyer_id) do nothing`;
          [t] = await tx<ThreadRow[]>`
            select t.*, r.name as route_name from route_threads t join routes r on r.id = t.route_id
            where t.route_id = ${routeId} and t.buyer_id = ${accountId}`;
        }
        if (t === undefined) throw ruleError('The thread could not be opened');
        await tx`insert into route_messages (id, thread_id, from_side, body, created_at) values (${id}, ${t.id}, ${side}, ${input.body}, ${now})`;
        await tx`update route_threads set last_message_at = ${now} where id = ${t.id}`;
        await emit(tx, {
          accountId: side === 'buyer' ? t.sellerId : t.buyerId,
          event: 'route.message_received',
          data: {
            threadId: t.id,
            messageId: id,
            routeId,
            routeName: route.name,
            from: side,
            buyer: buyerLabel(t.id),
            preview: input.body.slice(0, PREVIEW),
          },
        });
        return t;
      });
      return {
        id,
        threadId: thread.id,
        routeId,
        from: side,
        body: input.body,
        createdAt: now.toISOString(),
        readAt: null,
      };
    },

    /** A thread's messages, newest first; reading marks the other side's messages read. */
    async read(accountId: string, routeId: string, q: { threadId?: string; cursor?: string; limit: number }) {
      const t = await threadOf(accountId, routeId, q.threadId);
      if (t === undefined) throw notFound('Thread');
      const side: Side = t.buyerId === accountId ? 'buyer' : 'seller';
      const rows = await sql<{ id: string; fromSide: Side; body: string; createdAt: Date; readAt: Date | null }[]>`
        select id, from_side, body, created_at, read_at from route_messages
        where thread_id = ${t.id} ${q.cursor ? sql`and id < ${q.cursor}` : sql``}
        order by id desc limit ${q.limit + 1}`;
      await sql`update route_messages set read_at = ${clock.now()} where thread_id = ${t.id} and from_side <> ${side} and read_at is null`;
      return rows.map((m) => ({
        id: m.id,
        threadId: t.id,
        routeId,
        from: m.fromSide,
        body: m.body,
        createdAt: m.createdAt.toISOString(),
        readAt: m.readAt === null ? null : m.readAt.toISOString(),
      }));
    },

    /** The caller's threads as buyer and as seller, newest first, with unread counts. */
    async threads(accountId: string, q: { role?: Side; routeId?: string; cursor?: string; limit: number }) {
      const who =
        q.role === 'buyer'
          ? sql`t.buyer_id = ${accountId}`
          : q.role === 'seller'
            ? sql`t.seller_id = ${accountId}`
            : sql`(t.buyer_id = ${accountId} or t.seller_id = ${accountId})`;
      const rows = await sql<(ThreadRow & { unread: number; lastBody: string | null })[]>`
        select t.*, r.name as route_name,
          (select count(*)::int from route_messages m where m.thread_id = t.id and m.read_at is null
             and m.from_side <> case when t.buyer_id = ${accountId} then 'buyer' else 'seller' end) as unread,
          (select m.body from route_messages m where m.thread_id = t.id order by m.id desc limit 1) as last_body
        from route_threads t join routes r on r.id = t.route_id
        where ${who} ${q.routeId ? sql`and t.route_id = ${q.routeId}` : sql``} ${q.cursor ? sql`and t.id < ${q.cursor}` : sql``}
        order by t.id desc limit ${q.limit + 1}`;
      return rows.map((t) => threadView(t, t.buyerId === accountId ? 'buyer' : 'seller'));
    },
  };
}

export type MessagesService = ReturnType<typeof createMessagesService>;
