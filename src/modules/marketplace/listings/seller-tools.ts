import { Decimal } from 'decimal.js';
import type { Config } from '../../../config/schema.js';
import type { Sql } from '../../../db/connection.js';
import { notFound, ruleError, validationError } from '../../../http/errors.js';
import type { Clock } from '../../../platform/clock.js';
import { buyerRate, toMoney } from '../../../rating/index.js';
import type { RoutingCache } from '../routing/routing-cache.js';
import { normaliseNumber } from '../routing/routing.js';
import { salesColumns } from './quality.js';
import * as repo from './repo.js';
import { MAX_BULK_ROUTES, platformFeeFrom } from './service.js';
import type { RoutesService } from './service.js';

const DAY = 86_400_000;
/** Routes one comparison may hold. */
export const MAX_COMPARE = 10;

/** CLI types sellers state, with what each means to a buyer (other values are kept as stated). */
export const CLI_TYPES = [
  { cliType: 'cli', description: 'caller ID delivered as sent' },
  { cliType: 'non-cli', description: 'caller ID not guaranteed' },
  { cliType: 'tdm', description: 'TDM (SS7) interconnect, caller ID delivered' },
  { cliType: 'ott', description: 'delivered over an app (OTT) where the callee has one' },
  { cliType: 'cc', description: 'call-centre traffic accepted, caller ID delivered' },
  { cliType: 'premium', description: 'direct or first-hop carrier, caller ID delivered' },
] as const;

type BulkAction = 'pause' | 'resume' | 'public' | 'private';
export interface BulkTerms {
  capacity?: number | null;
  maxCps?: number | null;
  cliType?: string | null;
  mediaMode?: 'direct' | 'proxy';
  expectedAsr?: number | null;
  expectedAcd?: number | null;
  expectedPdd?: number | null;
}

/** A buyer as a seller may see it: a label from the purchase, never the account. */
const buyerLabel = (purchaseId: string): string => `Buyer ${purchaseId.replace(/-/g, '').slice(-6).toUpperCase()}`;

/**
 * The seller's and the buyer's tools around listings (spec group "Marketplace routes"): saved
 * endpoints, bulk status and terms, the notice period, the listings export, one listing's SMS
 * delivery and sales, daily sales, anonymous buyers, watchers, the dashboard summary; for buyers
 * the CLI-type catalogue, search facets, similar listings, a price comparison for a number, and a
 * watch list. A change reaches this daemon's caches at once and the peers through the deck notification.
 */
export function createSellerTools(deps: {
  sql: Sql;
  clock: Clock;
  config: Readonly<Config>;
  routes: RoutesService;
  routingCache?: RoutingCache;
}) {
  const { sql, clock, routes } = deps;

  const own = async (sellerId: string, id: string) => {
    const r = await repo.findOwnRoute(sql, id, sellerId);
    if (r === undefined) throw notFound('Route');
    return r;
  };
  const visible = async (viewerId: string, id: string) => {
    const r = await routes.visibleRoute(id, viewerId);
    if (r === undefined) throw notFound('Route');
    return r;
  };
  const changed = async (ids: readonly string[]) => {
    for (const id of ids) {
      await repo.bumpDeck(sql, id);
      deps.routingCache?.routeChanged(id);
      await routes.decks.reload(id);
    }
  };
  /** Many listings' facts changed, no rows: one notification and one re-read, not one deck rebuild per route. */
  const listingsChanged = async (sellerId: string, ids: readonly string[]) => {
    await repo.bumpListings(sql, sellerId, ids);
    for (const id of ids) deps.routingCache?.routeChanged(id);
    await routes.decks.refreshListings(sellerId);
  };
  /** Own listings (not blends, not deleted) among those asked for, or all of them. */
  const targets = async (sellerId: string, ids: string[] | undefined) => {
    if (ids !== undefined && new Set(ids).size !== ids.length) throw ruleError('A route appears twice');
    const rows = await sql<{ id: string; status: string; visibility: string }[]>`
      select r.id, r.status, r.visibility from routes r
      where r.seller_id = ${sellerId} and r.status <> 'deleted'
        and not exists (select 1 from route_blends b where b.route_id = r.id)
        ${ids === undefined ? sql`` : sql`and r.id = any(${sql.array(ids)}::uuid[])`}
      order by r.id limit ${MAX_BULK_ROUTES}`;
    const have = new Set(rows.map((r) => r.id));
    return { rows, notFound: (ids ?? []).filter((id) => !have.has(id)) };
  };

  return {
    /** Pause, resume, or change the visibility of many own listings at once (up to 5,000; dry run). */
    async bulkStatus(sellerId: string, input: { routeIds?: string[]; action: BulkAction; dryRun?: boolean }) {
      const { rows, notFound: missing } = await targets(sellerId, input.routeIds);
      const change = rows.filter((r) => {
        if (input.action === 'pause') return r.status === 'active';
        if (input.action === 'resume') return r.status === 'paused';
        return r.status !== 'suspended' && r.visibility !== input.action;
      });
      const skipped = rows.filter((r) => !change.includes(r)).map((r) => r.id);
      const ids = change.map((r) => r.id);
      if (!input.dryRun && ids.length > 0) {
        const now = clock.now();
        if (input.action === 'pause' || input.action === 'resume')
          await sql`update routes set status = ${input.action === 'pause' ? 'paused' : 'active'}, updated_at = ${now}
            where id = any(${sql.array(ids)}::uuid[])`;
        else
          await sql`update routes set visibility = ${input.action}, updated_at = ${now} where id = any(${sql.array(ids)}::uuid[])`;
        await listingsChanged(sellerId, ids);
      }
      return {
        action: input.action,
        dryRun: input.dryRun ?? false,
        matched: rows.length,
        updated: input.dryRun ? 0 : ids.length,
        routeIds: ids,
        unchanged: skipped,
        notFound: missing,
      };
    },

    /** The same terms on many own listings (up to 5,000; dry run): capacity, CPS, CLI type, media mode, stated figures. */
    async bulkTerms(sellerId: string, input: { routeIds?: string[]; terms: BulkTerms; dryRun?: boolean }) {
      const t = input.terms;
      const set: Record<string, unknown> = {};
      if (t.capacity !== undefined) set['capacity'] = t.capacity;
      if (t.maxCps !== undefined) set['maxCps'] = t.maxCps;
      if (t.cliType !== undefined) set['cliType'] = t.cliType;
      if (t.mediaMode !== undefined) set['mediaMode'] = t.mediaMode;
      if (t.expectedAsr !== undefined) set['expectedAsr'] = t.expectedAsr;
      if (t.expectedAcd !== undefined) set['expectedAcd'] = t.expectedAcd;
      if (t.expectedPdd !== undefined) set['expectedPdd'] = t.expectedPdd;
      if (Object.keys(set).length === 0) throw validationError([{ path: '/terms', message: 'give at least one term' }]);
      const { rows, notFound: missing } = await targets(sellerId, input.routeIds);
      const ids = rows.map((r) => r.id);
      if (!input.dryRun && ids.length > 0) {
        await sql`update routes set ${sql({ ...set, updatedAt: clock.now() } as never)} where id = any(${sql.array(ids)}::uuid[])`;
        await listingsChanged(sellerId, ids);
      }
      return {
        dryRun: input.dryRun ?? false,
        matched: ids.length,
        updated: input.dryRun ? 0 : ids.length,
        routeIds: ids,
        notFound: missing,
      };
    },

    /** The notice buyers get before increases and removals; applies to changes scheduled after it. */
    async setNoticePeriod(sellerId: string, id: string, noticeDays: number) {
      const r = await own(sellerId, id);
      if (r.blend) throw ruleError('A blend has no rate sheet of its own');
      await sql`update routes set notice_days = ${noticeDays}, updated_at = ${clock.now()} where id = ${id}`;
      await changed([id]);
      return routes.getRoute(id, sellerId);
    },

    /** One own SMS listing's delivery as saved, secrets left out. */
    async smsDelivery(sellerId: string, id: string) {
      const r = await own(sellerId, id);
      if (r.type !== 'sms') throw ruleError('Only SMS routes have SMS delivery');
      const d = (await routes.smsDeliveryFor([id])).get(id);
      if (d === undefined) return { routeId: id, kind: null };
      const s = (k: string) => (typeof d[k] === 'string' && d[k] !== '' ? (d[k] as string) : null);
      if (d['kind'] === 'smpp')
        return {
          routeId: id,
          kind: 'smpp',
          host: s('host'),
          port: typeof d['port'] === 'number' ? d['port'] : null,
          systemId: s('systemId'),
          systemType: s('systemType'),
          tls: d['tls'] === true,
          hasPassword: s('password') !== null,
        };
      let url: string | null;
      try {
        // The URL without its query: a token there is a secret.
        const u = new URL(s('url') ?? '');
        url = `${u.origin}${u.pathname}`;
      } catch {
        url = null;
      }
      return {
        routeId: id,
        kind: 'http',
        url,
        hasAuthorization: s('authorization') !== null,
        hasSigningSecret: s('signingSecret') !== null,
      };
    },

    /** Own listings as rows for a CSV export. */
    async exportRows(sellerId: string) {
      return sql<
        {
          id: string;
          name: string;
          type: string;
          country: string | null;
          visibility: string;
          status: string;
          cliType: string | null;
          billingIncrement: string;
          capacity: number | null;
          maxCps: number | null;
          noticeDays: number;
          mediaMode: string;
          rateCount: number;
          activePurchases: number;
          createdAt: Date;
        }[]
      >`
        select r.id, r.name, r.type, r.country, r.visibility, r.status, r.cli_type, r.billing_increment, r.capacity,
          r.max_cps, r.notice_days, r.media_mode, coalesce(d.row_count, 0) as rate_count,
          (select count(*)::int from purchases p where p.route_id = r.id and p.status = 'active') as active_purchases,
          r.created_at
        from routes r left join rate_decks d on d.route_id = r.id
        where r.seller_id = ${sellerId} and r.status <> 'deleted'
        order by r.created_at, r.id limit 100000`;
    },

    /** Per day over `days`: calls, answered calls, billed minutes, messages and revenue of own listings (one or all). */
    async dailySales(sellerId: string, q: { days: number; routeId?: string }) {
      if (q.routeId !== undefined) await own(sellerId, q.routeId);
      const since = new Date(clock.now().getTime() - q.days * DAY);
      const rows = await sql<
        { day: Date; calls: number; answered: number; billedSeconds: string; messages: number; revenue: string }[]
      >`
        select date_trunc('day', created_at, 'UTC') as day, ${salesColumns(sql)}
        from cdrs
        where seller_id = ${sellerId} and created_at >= ${since} and not is_probe and not simulated and route_id is not null
          ${q.routeId === undefined ? sql`` : sql`and route_id = ${q.routeId}`}
        group by 1 order by 1`;
      return {
        days: q.days,
        since: since.toISOString(),
        routeId: q.routeId ?? null,
        rows: rows.map((r) => ({
          day: r.day.toISOString().slice(0, 10),
          calls: r.calls,
          answeredCalls: r.answered,
          billedMinutes: Math.round((Number(r.billedSeconds) / 60) * 100) / 100,
          messages: r.messages,
          revenue: r.revenue,
        })),
      };
    },

    /** The buyers of own listings, each as a label (never the account), with their traffic over `days`. */
    async buyers(sellerId: string, q: { days: number; routeId?: string; limit: number; offset: number }) {
      if (q.routeId !== undefined) await own(sellerId, q.routeId);
      const since = new Date(clock.now().getTime() - q.days * DAY);
      const rows = await sql<
        {
          purchaseId: string;
          routeId: string;
          routeName: string;
          status: string;
          createdAt: Date;
          calls: number;
          messages: number;
          revenue: string;
          total: string;
        }[]
      >`
        select p.id as purchase_id, p.route_id, r.name as route_name, p.status, p.created_at,
          coalesce(t.calls, 0) as calls, coalesce(t.messages, 0) as messages, coalesce(t.revenue, '0.000000') as revenue,
          count(*) over () as total
        from purchases p join routes r on r.id = p.route_id
        left join lateral (
          select count(*) filter (where c.kind = 'voice')::int as calls,
            coalesce(sum(c.segments) filter (where c.kind = 'sms'), 0)::int as messages,
            coalesce(sum(c.seller_credit), 0)::numeric(20,6)::text as revenue
          from cdrs c
          where c.route_id = p.route_id and c.seller_id = ${sellerId} and c.created_at >= ${since}
            and (c.account_id = p.account_id or c.operator_id = p.account_id) and not c.is_probe and not c.simulated
        ) t on true
        where r.seller_id = ${sellerId} and p.status in ('active', 'paused')
          ${q.routeId === undefined ? sql`` : sql`and p.route_id = ${q.routeId}`}
        order by p.created_at desc, p.id limit ${q.limit} offset ${q.offset}`;
      return {
        rows: rows.map((r) => ({
          buyer: buyerLabel(r.purchaseId),
          routeId: r.routeId,
          routeName: r.routeName,
          status: r.status,
          since: r.createdAt.toISOString(),
          calls: r.calls,
          messages: r.messages,
          revenue: r.revenue,
        })),
        total: rows.length === 0 ? 0 : Number(rows[0]!.total),
        limit: q.limit,
        offset: q.offset,
      };
    },

    /** The seller's dashboard: listings by status, buyers, revenue over 30 days, open reports, scheduled changes, watchers. */
    async summary(sellerId: string) {
      const since = new Date(clock.now().getTime() - 30 * DAY);
      const [s] = await sql<
        {
          active: number;
          paused: number;
          suspended: number;
          publicListings: number;
          privateListings: number;
          buyers: number;
          activePurchases: number;
          scheduledChanges: number;
          watchers: number;
          openReports: number;
          revenue: string;
        }[]
      >`
        select
          count(*) filter (where r.status = 'active')::int as active,
          count(*) filter (where r.status = 'paused')::int as paused,
          count(*) filter (where r.status = 'suspended')::int as suspended,
          count(*) filter (where r.visibility = 'public')::int as public_listings,
          count(*) filter (where r.visibility = 'private')::int as private_listings,
          (select count(distinct p.account_id)::int from purchases p join routes x on x.id = p.route_id
            where x.seller_id = ${sellerId} and p.status = 'active') as buyers,
          (select count(*)::int from purchases p join routes x on x.id = p.route_id
            where x.seller_id = ${sellerId} and p.status = 'active') as active_purchases,
          (select count(*)::int from rate_changes c join routes x on x.id = c.route_id
            where x.seller_id = ${sellerId} and c.status = 'scheduled' and c.effective_at > ${clock.now()}) as scheduled_changes,
          (select count(*)::int from route_watches w join routes x on x.id = w.route_id where x.seller_id = ${sellerId}) as watchers,
          (select count(*)::int from route_reports rr join routes x on x.id = rr.route_id
            where x.seller_id = ${sellerId} and rr.status in ('open', 'answered', 'escalated')) as open_reports,
          (select coalesce(sum(c.seller_credit), 0)::numeric(20,6)::text from cdrs c
            where c.seller_id = ${sellerId} and c.created_at >= ${since} and not c.is_probe and not c.simulated) as revenue
        from routes r where r.seller_id = ${sellerId} and r.status <> 'deleted'`;
      return {
        listings: {
          active: s!.active,
          paused: s!.paused,
          suspended: s!.suspended,
          public: s!.publicListings,
          private: s!.privateListings,
        },
        buyers: s!.buyers,
        activePurchases: s!.activePurchases,
        scheduledChanges: s!.scheduledChanges,
        watchers: s!.watchers,
        openReports: s!.openReports,
        revenue30d: s!.revenue,
      };
    },

    /** How many accounts watch each own listing (never who). */
    async watchers(sellerId: string) {
      const rows = await sql<{ routeId: string; name: string; watchers: number }[]>`
        select r.id as route_id, r.name, count(w.account_id)::int as watchers
        from routes r left join route_watches w on w.route_id = r.id
        where r.seller_id = ${sellerId} and r.status <> 'deleted'
        group by r.id, r.name order by watchers desc, r.id limit 10000`;
      return rows;
    },

    async watch(viewerId: string, id: string) {
      const r = await visible(viewerId, id);
      if (r.sellerId === viewerId) throw ruleError('An own listing cannot be watched');
      await sql`insert into route_watches (account_id, route_id, created_at) values (${viewerId}, ${id}, ${clock.now()})
        on conflict do nothing`;
      const [w] = await sql<{ createdAt: Date }[]>`
        select created_at from route_watches where account_id = ${viewerId} and route_id = ${id}`;
      return { routeId: id, watching: true, since: w!.createdAt.toISOString() };
    },

    async unwatch(viewerId: string, id: string) {
      const res = await sql`delete from route_watches where account_id = ${viewerId} and route_id = ${id}`;
      if (res.count === 0) throw notFound('Watched route');
      return { routeId: id, watching: false };
    },

    /** The caller's watched listings that it can still see, newest watch first. */
    async watchlist(viewerId: string, q: { limit: number; offset: number }) {
      const rows = await sql<{ routeId: string; createdAt: Date; total: string }[]>`
        select route_id, created_at, count(*) over () as total from route_watches where account_id = ${viewerId}
        order by created_at desc, route_id limit ${q.limit} offset ${q.offset}`;
      const out = [];
      for (const w of rows) {
        if ((await routes.visibleRoute(w.routeId, viewerId)) === undefined) continue;
        out.push({ watchedAt: w.createdAt.toISOString(), route: await routes.getRoute(w.routeId, viewerId) });
      }
      return { rows: out, total: rows.length === 0 ? 0 : Number(rows[0]!.total), limit: q.limit, offset: q.offset };
    },

    /** CLI types: the catalogue and the values stated on active public listings, with counts per type. */
    async cliTypes() {
      const counts = await sql<{ cliType: string; voice: number; sms: number }[]>`
        select lower(cli_type) as cli_type, count(*) filter (where type = 'voice')::int as voice,
          count(*) filter (where type = 'sms')::int as sms
        from routes where status = 'active' and visibility = 'public' and cli_type is not null group by 1 order by 1`;
      const known = new Map<string, string>(CLI_TYPES.map((c) => [c.cliType, c.description]));
      const names = [...new Set([...known.keys(), ...counts.map((c) => c.cliType)])];
      return names.map((name) => {
        const c = counts.find((x) => x.cliType === name);
        return {
          cliType: name,
          description: known.get(name) ?? null,
          voiceRoutes: c?.voice ?? 0,
          smsRoutes: c?.sms ?? 0,
        };
      });
    },

    /** Counts behind the marketplace search filters, over the active listings the caller can see. */
    async facets(viewerId: string, type: 'voice' | 'sms' | undefined) {
      const rows = await sql<{ facet: string; value: string | null; n: number }[]>`
        with v as (
          select r.* from routes r
          where r.status = 'active' and not exists (select 1 from route_blends b where b.route_id = r.id)
            and (r.visibility = 'public' or r.seller_id = ${viewerId}
              or exists (select 1 from route_access a where a.route_id = r.id and a.account_id = ${viewerId}))
            ${type === undefined ? sql`` : sql`and r.type = ${type}`}
        )
        select 'type' as facet, type as value, count(*)::int as n from v group by 2
        union all select 'country', country, count(*)::int from v group by 2
        union all select 'cliType', lower(cli_type), count(*)::int from v group by 2
        union all select 'billingIncrement', billing_increment, count(*)::int from v group by 2
        union all select 'mediaMode', media_mode, count(*)::int from v where type = 'voice' group by 2
        order by 1, 3 desc, 2`;
      const of = (f: string) => rows.filter((r) => r.facet === f).map((r) => ({ value: r.value, routes: r.n }));
      return {
        type: type ?? null,
        routes: of('type').reduce((s, r) => s + r.routes, 0),
        types: of('type'),
        countries: of('country'),
        cliTypes: of('cliType'),
        billingIncrements: of('billingIncrement'),
        mediaModes: of('mediaMode'),
      };
    },

    /** Other active listings of the same type and country the caller can see, cheapest first. */
    async similar(viewerId: string, id: string, limit: number) {
      const r = await visible(viewerId, id);
      const page = await routes.listRoutes({
        viewerId,
        type: r.type,
        ...(r.country === null ? {} : { country: r.country }),
        sort: 'price_asc',
        limit: limit + 1,
        offset: 0,
      });
      return page.rows.filter((x) => x.id !== id && !x.blend).slice(0, limit);
    },

    /** Up to 10 listings the caller can see, priced for one number (buyer price, fee included), cheapest first. */
    async compare(viewerId: string, ids: string[], number: string, type: 'voice' | 'sms') {
      const digits = normaliseNumber(number);
      await routes.decks.ensureLoaded();
      const fee = platformFeeFrom(deps.config);
      const out = [];
      for (const id of [...new Set(ids)]) {
        const r = await routes.visibleRoute(id, viewerId);
        if (r === undefined || r.type !== type) {
          out.push({
            routeId: id,
            found: false,
            covered: false,
            name: null,
            matchedPrefix: null,
            destination: null,
            price: null,
            billingIncrement: null,
            expectedAsr: null,
            expectedAcd: null,
            cliType: null,
          });
          continue;
        }
        const m = routes.decks.registry.get(id)?.lookup(digits);
        out.push({
          routeId: id,
          found: true,
          covered: m !== undefined,
          name: r.name,
          matchedPrefix: m?.prefix ?? null,
          destination: m?.destination ?? null,
          price: m === undefined ? null : toMoney(buyerRate(m.rateDecimal, fee, type === 'voice' ? 'min' : 'msg')),
          billingIncrement: m?.increment.text ?? null,
          expectedAsr: r.expectedAsr === null ? null : Number(r.expectedAsr),
          expectedAcd: r.expectedAcd === null ? null : Number(r.expectedAcd),
          cliType: r.cliType,
        });
      }
      out.sort((a, b) =>
        a.price === null ? (b.price === null ? 0 : 1) : b.price === null ? -1 : new Decimal(a.price).cmp(b.price),
      );
      return { number: digits, type, routes: out };
    },

    /** Sets an own voice route's endpoint priorities in the order given (1 first): the failover order between them. */
    async reorderEndpoints(sellerId: string, id: string, endpointIds: string[]) {
      const r = await own(sellerId, id);
      if (r.type !== 'voice') throw ruleError('Only voice routes have SIP endpoints');
      const have = await sql<{ id: string }[]>`select id from route_endpoints where route_id = ${id}`;
      const set = new Set(have.map((e) => e.id));
      if (
        endpointIds.length !== set.size ||
        !endpointIds.every((e) => set.has(e)) ||
        new Set(endpointIds).size !== set.size
      )
        throw validationError([{ path: '/endpointIds', message: "must list each of the route's endpoints once" }]);
      await sql.begin(async (tx) => {
        for (const [i, e] of endpointIds.entries())
          await tx`update route_endpoints set priority = ${Math.min(i + 1, 100)} where id = ${e} and route_id = ${id}`;
      });
      await changed([id]);
      return routes.listEndpoints(sellerId, { routeId: id, limit: 100, offset: 0 });
    },
  };
}

export type SellerTools = ReturnType<typeof createSellerTools>;

/** Measured figures of one listing per window (1, 7 and 30 days) from real buyer calls. */
export async function qualityWindows(sql: Sql, routeId: string, now: Date, showAll: boolean) {
  const rows = await sql<
    { days: number; calls: number; answered: number; buyers: number; talkSeconds: string; medianPddMs: number | null }[]
  >`
    select w.days, count(c.id)::int as calls, count(c.id) filter (where c.answered_at is not null)::int as answered,
      count(distinct c.account_id)::int as buyers,
      coalesce(sum(c.duration_seconds) filter (where c.answered_at is not null), 0)::text as talk_seconds,
      (percentile_disc(0.5) within group (order by c.pdd_ms))::int as median_pdd_ms
    from (values (1), (7), (30)) as w(days)
    left join cdrs c on c.route_id = ${routeId} and c.kind = 'voice' and not c.is_probe and not c.simulated
      and c.created_at >= ${now}::timestamptz - make_interval(days => w.days)
    group by w.days order by w.days`;
  return rows.map((r) => {
    // Figures are public once 50 calls from 2 buyers back them (spec "Market records"); the seller sees all.
    const enough = showAll || (r.calls >= 50 && r.buyers >= 2);
    return {
      days: r.days,
      calls: enough ? r.calls : null,
      asr: enough && r.calls > 0 ? Math.round((r.answered / r.calls) * 10_000) / 100 : null,
      acd: enough && r.answered > 0 ? Math.round((Number(r.talkSeconds) / r.answered) * 100) / 100 : null,
      medianPddMs: enough ? r.medianPddMs : null,
      enoughData: r.calls >= 50 && r.buyers >= 2,
    };
  });
}
