import type { Logger } from 'pino';
import type { Db, Sql } from '../../../db/connection.js';
import { conflict, forbidden, notFound, validationError } from '../../../http/errors.js';
import type { Clock } from '../../../platform/clock.js';
import { newId } from '../../../platform/ids.js';
import { emit } from '../../../webhooks/emit.js';
import { cdrEvidence, type CdrEvidence } from '../listings/quality.js';
import { bumpDeck } from '../listings/repo.js';
import type { RoutesService } from '../listings/service.js';
import type { RoutingCache } from '../routing/routing-cache.js';

export const REPORT_CATEGORIES = [
  'cli_not_delivered',
  'false_answer_supervision',
  'poor_quality',
  'fraud',
  'no_delivery_receipts',
  'other',
] as const;
export type ReportCategory = (typeof REPORT_CATEGORIES)[number];
export type ReportStatus = 'open' | 'answered' | 'escalated' | 'resolved' | 'upheld' | 'rejected' | 'withdrawn';
/** Categories about traffic that was carried: they need the reporter's records as evidence. */
const NEEDS_EVIDENCE: ReadonlySet<ReportCategory> = new Set([
  'cli_not_delivered',
  'false_answer_supervision',
  'poor_quality',
  'no_delivery_receipts',
]);
export const MAX_EVIDENCE = 20;
const OPEN: readonly ReportStatus[] = ['open', 'answered', 'escalated'];

interface ReportRow {
  id: string;
  routeId: string;
  routeName: string;
  reporterId: string;
  sellerId: string;
  category: ReportCategory;
  description: string;
  status: ReportStatus;
  answer: string | null;
  answeredAt: Date | null;
  outcomeNote: string | null;
  decidedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
  evidence: CdrEvidence[];
}

type Viewer = { accountId: string; admin: boolean };
type Role = 'reporter' | 'seller' | 'operator';

const iso = (d: Date | null) => (d === null ? null : new Date(d).toISOString());

/**
 * Route reports (spec group "Route reports"): a buyer reports a problem on a route it used, with
 * its own CDRs as evidence; the seller answers; the reporter accepts the answer (resolved),
 * escalates it to the operator, or withdraws; the operator upholds or rejects. Upheld reports count
 * against the listing's health (`GET /routes/my/listing-health`), and the operator may suspend a
 * listing, which stops its traffic at once. The reporter's account is never shown to the seller.
 */
export function createReportsService(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  routes: RoutesService;
  routingCache?: RoutingCache;
}) {
  const { sql, clock, log } = deps;

  const roleOf = (r: ReportRow, v: Viewer): Role | null =>
    r.reporterId === v.accountId ? 'reporter' : r.sellerId === v.accountId ? 'seller' : v.admin ? 'operator' : null;

  const present = (r: ReportRow, role: Role) => ({
    id: r.id,
    routeId: r.routeId,
    routeName: r.routeName,
    role,
    // The seller learns what happened, never who reported it.
    reporterId: role === 'seller' ? null : r.reporterId,
    category: r.category,
    description: r.description,
    status: r.status,
    evidence: r.evidence,
    answer: r.answer,
    answeredAt: iso(r.answeredAt),
    outcomeNote: r.outcomeNote,
    decidedAt: iso(r.decidedAt),
    createdAt: iso(r.createdAt)!,
    updatedAt: iso(r.updatedAt)!,
  });

  const SELECT = (db: Db) => db`
    select p.*, r.name as route_name,
      coalesce((select json_agg(e.facts order by e.cdr_id) from route_report_evidence e where e.report_id = p.id), '[]'::json) as evidence
    from route_reports p join routes r on r.id = p.route_id`;

  const load = async (db: Db, id: string, lock = false): Promise<ReportRow | undefined> => {
    if (lock) await db`select 1 from route_reports where id = ${id} for update`;
    const [row] = await db<ReportRow[]>`${SELECT(db)} where p.id = ${id}`;
    return row;
  };

  /** The report as `role` may act on it, in one of `from` states; locked in `tx`. */
  const acting = async (tx: Db, v: Viewer, id: string, role: Role, from: readonly ReportStatus[]) => {
    const r = await load(tx, id, true);
    if (r === undefined || roleOf(r, v) === null) throw notFound('Report');
    if (role === 'operator' ? !v.admin : roleOf(r, v) !== role)
      throw forbidden(role === 'operator' ? 'Only the operator decides reports' : `Only the ${role} may do this`);
    if (!from.includes(r.status)) throw conflict(`The report is ${r.status}`);
    return r;
  };

  const move = async (tx: Db, id: string, set: Record<string, string | Date | null>) => {
    await tx`update route_reports set ${tx({ ...set, updated_at: clock.now() })} where id = ${id}`;
  };

  const routeRow = async (id: string) => {
    const [r] = await sql<{ id: string; sellerId: string; name: string; status: string }[]>`
      select id, seller_id, name, status from routes where id = ${id} and status <> 'deleted'`;
    return r;
  };

  const closeByReporter = async (
    v: Viewer,
    id: string,
    status: 'resolved' | 'withdrawn',
    from: readonly ReportStatus[],
  ) => {
    await sql.begin(async (tx) => {
      const r = await acting(tx, v, id, 'reporter', from);
      await move(tx, id, { status, decided_at: clock.now() });
      await emit(tx, {
        accountId: r.sellerId,
        event: 'route.report_resolved',
        data: { reportId: id, routeId: r.routeId, outcome: status },
      });
    });
    return present((await load(sql, id))!, 'reporter');
  };

  /**
   * Writes a listing's suspension (or its end) and tells the seller and every buyer holding a
   * purchase (`route.suspended`); this daemon's caches see it at once, peers on the routes trigger's
   * NOTIFY and the deck notification (the deck's listing facts carry the status).
   */
  const setSuspension = async (
    route: { id: string; sellerId: string; name: string },
    s: { status: 'suspended' | 'active'; reason: string | null; at: Date | null },
    operatorId: string,
  ) => {
    await sql.begin(async (tx) => {
      // The listing's change history names the operator, not the seller (migration 287).
      await tx`select set_config('svc.actor', ${operatorId}, true)`;
      await tx`
        update routes set status = ${s.status}, suspended_reason = ${s.reason}, suspended_at = ${s.at}, updated_at = ${clock.now()}
        where id = ${route.id}`;
      await bumpDeck(tx, route.id);
      const buyers = await tx<{ accountId: string }[]>`
        select distinct account_id from purchases where route_id = ${route.id} and status in ('active', 'paused')`;
      for (const accountId of [route.sellerId, ...buyers.map((b) => b.accountId)])
        await emit(tx, {
          accountId,
          event: 'route.suspended',
          data: {
            routeId: route.id,
            routeName: route.name,
            suspended: s.status === 'suspended',
            ...(s.reason === null ? {} : { reason: s.reason }),
          },
        });
    });
    deps.routingCache?.routeChanged(route.id);
    await deps.routes.decks.reload(route.id);
  };

  return {
    async create(
      reporterId: string,
      routeId: string,
      input: { category: ReportCategory; description: string; cdrIds?: string[] },
    ) {
      const route = await deps.routes.visibleRoute(routeId, reporterId);
      if (route === undefined) throw notFound('Route');
      if (route.sellerId === reporterId) throw conflict('A seller does not report its own route');
      const ids = [...new Set(input.cdrIds ?? [])];
      const evidence = await cdrEvidence(sql, reporterId, routeId, ids);
      const found = new Set(evidence.map((e) => e.cdrId));
      const problems = ids
        .map((id, i) => ({ id, i }))
        .filter((x) => !found.has(x.id))
        .map((x) => ({ path: `/cdrIds/${x.i}`, message: 'not one of your records on this route' }));
      if (problems.length > 0) throw validationError(problems);
      if (NEEDS_EVIDENCE.has(input.category) && evidence.length === 0)
        throw validationError([
          { path: '/cdrIds', message: `a ${input.category} report needs your records as evidence` },
        ]);
      const id = newId();
      await sql.begin(async (tx) => {
        const [open] = await tx`
          select 1 from route_reports where route_id = ${routeId} and reporter_id = ${reporterId}
            and category = ${input.category} and status in ('open', 'answered', 'escalated')`;
        if (open !== undefined) throw conflict('An open report of this kind on this route exists');
        await tx`insert into route_reports ${tx({
          id,
          route_id: routeId,
          reporter_id: reporterId,
          seller_id: route.sellerId,
          category: input.category,
          description: input.description,
        })}`;
        for (const e of evidence)
          await tx`insert into route_report_evidence (report_id, cdr_id, facts) values (${id}, ${e.cdrId}, ${tx.json(e as never)})`;
        await emit(tx, {
          accountId: route.sellerId,
          event: 'route.report_received',
          data: { reportId: id, routeId, routeName: route.name, category: input.category, evidence: evidence.length },
        });
      });
      log.info({ reportId: id, routeId, category: input.category }, 'route reported');
      return present((await load(sql, id))!, 'reporter');
    },

    async list(v: Viewer, q: { role?: Role; status?: ReportStatus; routeId?: string; cursor?: string; limit: number }) {
      if (q.role === 'operator' && !v.admin) throw forbidden('Only the operator lists every report');
      const who =
        q.role === 'operator'
          ? sql`true`
          : q.role === 'reporter'
            ? sql`p.reporter_id = ${v.accountId}`
            : q.role === 'seller'
              ? sql`p.seller_id = ${v.accountId}`
              : sql`(p.reporter_id = ${v.accountId} or p.seller_id = ${v.accountId})`;
      const rows = await sql<ReportRow[]>`
        ${SELECT(sql)} where ${who}
          ${q.status ? sql`and p.status = ${q.status}` : sql``}
          ${q.routeId ? sql`and p.route_id = ${q.routeId}` : sql``}
          ${q.cursor ? sql`and p.id < ${q.cursor}` : sql``}
        order by p.id desc limit ${q.limit + 1}`;
      return rows.map((r) => present(r, roleOf(r, v) ?? 'operator'));
    },

    async get(v: Viewer, id: string) {
      const r = await load(sql, id);
      const role = r === undefined ? null : roleOf(r, v);
      if (r === undefined || role === null) throw notFound('Report');
      return present(r, role);
    },

    /** The seller answers (again, until the report is decided); the reporter is told. */
    async answer(v: Viewer, id: string, answer: string) {
      await sql.begin(async (tx) => {
        const r = await acting(tx, v, id, 'seller', ['open', 'answered', 'escalated']);
        await move(tx, id, {
          answer,
          answered_at: clock.now(),
          status: r.status === 'escalated' ? 'escalated' : 'answered',
        });
        await emit(tx, {
          accountId: r.reporterId,
          event: 'route.report_answered',
          data: { reportId: id, routeId: r.routeId, routeName: r.routeName, category: r.category },
        });
      });
      return this.get(v, id);
    },

    /** The reporter accepts the seller's answer: resolved; the seller is told. */
    resolve: (v: Viewer, id: string) => closeByReporter(v, id, 'resolved', ['answered']),
    /** The reporter withdraws an open report; the seller is told. */
    withdraw: (v: Viewer, id: string) => closeByReporter(v, id, 'withdrawn', OPEN),

    /** The reporter asks the operator to decide (unanswered, or not satisfied with the answer). */
    async escalate(v: Viewer, id: string, note: string | null) {
      await sql.begin(async (tx) => {
        await acting(tx, v, id, 'reporter', ['open', 'answered']);
        await move(tx, id, { status: 'escalated', ...(note === null ? {} : { outcome_note: note }) });
      });
      log.info({ reportId: id }, 'route report escalated');
      return this.get(v, id);
    },

    /** The operator upholds or rejects an open report; both sides are told. Upheld reports count against the listing's health. */
    async decide(v: Viewer, id: string, outcome: 'upheld' | 'rejected', note: string | null) {
      await sql.begin(async (tx) => {
        const r = await acting(tx, v, id, 'operator', OPEN);
        await move(tx, id, { status: outcome, outcome_note: note, decided_at: clock.now() });
        for (const accountId of [r.reporterId, r.sellerId])
          await emit(tx, {
            accountId,
            event: 'route.report_resolved',
            data: { reportId: id, routeId: r.routeId, outcome, note },
          });
      });
      return this.get(v, id);
    },

    /**
     * The operator suspends a listing: no new call or message goes over it (calls in progress end
     * as they started), it leaves the marketplace, and the seller and every active buyer are told.
     */
    async suspend(v: Viewer, routeId: string, reason: string) {
      if (!v.admin) throw forbidden('Only the operator suspends listings');
      const route = await routeRow(routeId);
      if (route === undefined) throw notFound('Route');
      if (route.status === 'suspended') throw conflict('The listing is already suspended');
      const now = clock.now();
      await setSuspension(route, { status: 'suspended', reason, at: now }, v.accountId);
      log.warn({ routeId }, 'listing suspended by the operator');
      return { routeId, status: 'suspended' as const, reason, suspendedAt: now.toISOString() };
    },

    /** The operator lifts a suspension; the listing is active again and the same accounts are told. */
    async reinstate(v: Viewer, routeId: string) {
      if (!v.admin) throw forbidden('Only the operator reinstates listings');
      const route = await routeRow(routeId);
      if (route === undefined) throw notFound('Route');
      if (route.status !== 'suspended') throw conflict('The listing is not suspended');
      await setSuspension(route, { status: 'active', reason: null, at: null }, v.accountId);
      return { routeId, status: 'active' as const, reason: null, suspendedAt: null };
    },
  };
}

export type ReportsService = ReturnType<typeof createReportsService>;
