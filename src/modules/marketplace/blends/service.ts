import { Decimal } from 'decimal.js';
import type { Logger } from 'pino';
import type { Sql } from '../../../db/connection.js';
import { conflict, notFound, validationError, type ErrorDetail } from '../../../http/errors.js';
import type { Clock } from '../../../platform/clock.js';
import { newId } from '../../../platform/ids.js';
import { toMoney } from '../../../rating/index.js';
import type { PurchasesService } from '../purchases/service.js';
import type { RoutesService } from '../listings/service.js';
import type { Routing } from '../routing/routing.js';
import type { RoutingCache } from '../routing/routing-cache.js';
import type { BlendCache } from './blend-cache.js';
import * as repo from './repo.js';
import type { BlendRow, BlendStrategy } from './repo.js';
import { sharesOf } from './rules.js';

export const MIN_MEMBERS = 2;
export const MAX_MEMBERS = 10;

export interface MemberInput {
  routeId: string;
  percent?: number;
}

export interface BlendInput {
  type: 'voice' | 'sms';
  name: string;
  visibility?: 'public' | 'private';
  strategy: BlendStrategy;
  margin?: string;
  members: MemberInput[];
}

export type BlendPatch = Partial<Omit<BlendInput, 'type'>>;

const iso = (d: Date) => new Date(d).toISOString();

/**
 * Route blends (spec group "Route blends"): a seller or buyer composes two to ten routes into one
 * listing with a rule. Members are the owner's own routes or routes the owner bought. A blend
 * others can buy (public, or granted) or that carries a margin must be made of the owner's own
 * routes only: the margin is paid with the member's rate to the member's seller, so it reaches the
 * owner only when the owner sells the member, and nobody resells another seller's route.
 */
export function createBlendsService(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  routes: RoutesService;
  purchases: PurchasesService;
  routing: Routing;
  cache: BlendCache;
  routingCache?: RoutingCache;
}) {
  const { sql, log, cache, routing } = deps;

  const present = (b: BlendRow, viewerId: string) => {
    const own = b.ownerId === viewerId;
    return {
      id: b.id,
      type: b.type,
      name: b.name,
      visibility: b.visibility,
      status: b.status,
      own,
      strategy: b.strategy,
      margin: toMoney(new Decimal(b.margin)),
      // Buyers see the rule and the shares, not which listings stand behind the blend.
      members: [...b.members]
        .sort((a, x) => a.position - x.position)
        .map((m) => ({ position: m.position, routeId: own ? m.memberId : null, percent: m.percent })),
      createdAt: iso(b.createdAt),
      updatedAt: iso(b.updatedAt),
    };
  };

  /** The members' problems as `{ path, message }`, or the rows to store. */
  const checkMembers = async (
    ownerId: string,
    blendId: string | null,
    type: 'voice' | 'sms',
    strategy: BlendStrategy,
    sellable: boolean,
    members: readonly MemberInput[],
  ): Promise<repo.BlendMemberRow[]> => {
    const problems: ErrorDetail[] = [];
    if (members.length < MIN_MEMBERS || members.length > MAX_MEMBERS)
      problems.push({ path: '/members', message: `a blend has ${MIN_MEMBERS} to ${MAX_MEMBERS} members` });
    const ids = members.map((m) => m.routeId);
    if (new Set(ids).size !== ids.length) problems.push({ path: '/members', message: 'a route appears twice' });
    const facts = new Map((await repo.memberFacts(sql, ids)).map((f) => [f.id, f]));
    const bought = new Set((await deps.purchases.usableRoutesNow(ownerId, type)).map((u) => u.routeId));
    let percentTotal = 0;
    members.forEach((m, i) => {
      const at = `/members/${i}`;
      const f = facts.get(m.routeId);
      if (f === undefined || f.status === 'deleted' || (f.sellerId !== ownerId && !bought.has(m.routeId))) {
        problems.push({ path: `${at}/routeId`, message: 'not an own route or an active purchase' });
        return;
      }
      if (m.routeId === blendId || f.isBlend)
        problems.push({ path: `${at}/routeId`, message: 'a blend cannot be a member of a blend' });
      if (f.type !== type) problems.push({ path: `${at}/routeId`, message: `not a ${type} route` });
      if (sellable && f.sellerId !== ownerId)
        problems.push({
          path: `${at}/routeId`,
          message: 'a public, granted or margin-carrying blend is made of own routes only',
        });
      if (strategy === 'percent') {
        if (m.percent === undefined)
          problems.push({ path: `${at}/percent`, message: 'the percent rule needs a share' });
        percentTotal += m.percent ?? 0;
      } else if (m.percent !== undefined && m.percent !== 0) {
        problems.push({ path: `${at}/percent`, message: 'only the percent rule takes shares' });
      }
    });
    if (strategy === 'percent' && percentTotal !== 100 && problems.length === 0)
      problems.push({ path: '/members', message: `shares add up to ${percentTotal}, not 100` });
    if (problems.length > 0) throw validationError(problems);
    return members.map((m, i) => ({
      memberId: m.routeId,
      position: i + 1,
      percent: strategy === 'percent' ? (m.percent ?? 0) : 0,
    }));
  };

  const hasGrants = async (id: string): Promise<boolean> =>
    (await sql`select 1 from route_access where route_id = ${id} limit 1`).length > 0;

  const ownBlend = async (ownerId: string, id: string): Promise<BlendRow> => {
    const b = await repo.findOwn(sql, id, ownerId);
    if (b === undefined) throw notFound('Blend');
    return b;
  };

  /** A blend the viewer may see (own, public or granted). */
  const visibleBlend = async (viewerId: string, id: string) => {
    const route = await deps.routes.visibleRoute(id, viewerId);
    const [b] = route === undefined ? [] : await repo.loadBlends(sql, [id]);
    if (b === undefined) throw notFound('Blend');
    const live = (await cache.blendsAmong([id])).get(id);
    if (live === undefined) throw notFound('Blend');
    return { row: b, live };
  };

  return {
    isBlend: (routeId: string) => cache.isBlend(routeId),

    async create(ownerId: string, input: BlendInput) {
      const margin = input.margin ?? '0';
      const visibility = input.visibility ?? 'private';
      const sellable = visibility === 'public' || !new Decimal(margin).isZero();
      const members = await checkMembers(ownerId, null, input.type, input.strategy, sellable, input.members);
      const id = newId();
      await sql.begin(async (tx) => {
        await repo.insertBlend(
          tx,
          { id, ownerId, type: input.type, name: input.name, visibility },
          input.strategy,
          margin,
        );
        await repo.replaceMembers(tx, id, members);
      });
      await cache.changed(id);
      deps.routingCache?.accountChanged(ownerId);
      log.info({ ownerId, blendId: id, strategy: input.strategy, members: members.length }, 'route blend created');
      return present(await ownBlend(ownerId, id), ownerId);
    },

    async list(ownerId: string, q: { type?: 'voice' | 'sms'; cursor?: string; limit: number }) {
      return (await repo.listOwn(sql, ownerId, q)).map((b) => present(b, ownerId));
    },

    async get(viewerId: string, id: string) {
      return present((await visibleBlend(viewerId, id)).row, viewerId);
    },

    async update(ownerId: string, id: string, patch: BlendPatch) {
      const cur = await ownBlend(ownerId, id);
      const strategy = patch.strategy ?? cur.strategy;
      const visibility = patch.visibility ?? cur.visibility;
      const margin = patch.margin ?? cur.margin;
      const sellable = visibility === 'public' || !new Decimal(margin).isZero() || (await hasGrants(id));
      // Without new members, a change of rule or of who may buy is checked against the members in place.
      const members =
        patch.members ??
        [...cur.members]
          .sort((a, b) => a.position - b.position)
          .map((m) => ({ routeId: m.memberId, ...(strategy === 'percent' ? { percent: m.percent } : {}) }));
      if (patch.strategy === 'percent' && cur.strategy !== 'percent' && patch.members === undefined)
        throw validationError([
          { path: '/members', message: 'changing to the percent rule needs members with shares' },
        ]);
      const rows = await checkMembers(ownerId, id, cur.type, strategy, sellable, members);
      await sql.begin(async (tx) => {
        await repo.updateBlend(tx, id, {
          ...(patch.name === undefined ? {} : { name: patch.name }),
          ...(patch.visibility === undefined ? {} : { visibility: patch.visibility }),
          ...(patch.strategy === undefined ? {} : { strategy: patch.strategy }),
          ...(patch.margin === undefined ? {} : { margin: patch.margin }),
        });
        await repo.replaceMembers(tx, id, rows);
      });
      await cache.changed(id);
      return present(await ownBlend(ownerId, id), ownerId);
    },

    /** Deletes an unsold blend (no active purchase by another account); it leaves the owner's routing order. */
    async remove(ownerId: string, id: string) {
      await ownBlend(ownerId, id);
      await sql.begin(async (tx) => {
        await tx`select 1 from routes where id = ${id} for update`;
        if ((await repo.activeSales(tx, id)) > 0)
          throw conflict('The blend has active purchases: buyers cancel them first, or pause the listing');
        await repo.markDeleted(tx, id);
      });
      await cache.changed(id);
      deps.routingCache?.routeChanged(id);
      return { id, deleted: true as const };
    },

    /** Which member carries traffic to `number` now, and every covering member's price and share. */
    async preview(viewerId: string, id: string, number: string, mccMnc: string | null) {
      const { row, live } = await visibleBlend(viewerId, id);
      const own = row.ownerId === viewerId;
      const { digits, ordered, eligible } = await routing.previewBlend(live, number, mccMnc);
      const shares = sharesOf(live.strategy, ordered);
      const first = ordered[0];
      const member = (m: (typeof ordered)[number]) => ({
        position: m.position,
        routeId: own ? m.routeId : null,
        routeName: own ? m.meta.name : null,
        matchedPrefix: m.match.prefix,
        destination: m.match.destination,
        price: toMoney(m.price),
        billingIncrement: m.match.increment.text,
        quality: Math.round(m.quality * 10_000) / 10_000,
        share: shares.get(m.routeId) ?? 0,
      });
      return {
        blendId: id,
        number: digits,
        type: live.type,
        strategy: live.strategy,
        margin: toMoney(live.margin),
        resolved: first === undefined ? null : member(first),
        members: ordered.map(member),
        notCovering: eligible - ordered.length,
      };
    },

    async rates(viewerId: string, id: string, q: { prefix?: string; limit: number; offset: number }) {
      const { live } = await visibleBlend(viewerId, id);
      return routing.blendRates(live, q);
    },
  };
}

export type BlendsService = ReturnType<typeof createBlendsService>;
