import { Decimal } from 'decimal.js';
import type { Logger } from 'pino';
import type { Sql } from '../../../db/connection.js';
import { notFound, validationError } from '../../../http/errors.js';
import type { Clock } from '../../../platform/clock.js';
import { createBillingRepo } from '../../billing/repo.js';
import { createBillingExports, type ExportParams } from '../../billing/exports.js';
import { parseFilter, type ExportBody, type RecordFilter, type RecordQuery } from './filters.js';
import { createRecordsRepo, type RecordRow, type Sums } from './repo.js';

/** Spec "Switch": analytics default to the 30 days before `to`; customer usage to 24 hours, at most 92 days. */
const ANALYTICS_DEFAULT_DAYS = 30;
export const USAGE_MAX_DAYS = 92;
const USAGE_DEFAULT_HOURS = 24;
const DAY_MS = 86_400_000;
const EXPORT_BATCH = 2000;

/** The export kind Switch record exports are stored under in billing_exports. */
export const SWITCH_EXPORT_KIND = 'switch_cdrs' as const;

const round = (d: Decimal, places: number) => d.toDecimalPlaces(places, Decimal.ROUND_HALF_UP).toNumber();

/** Keeps the first digits (country and area) and the last two; the rest is starred. */
export function maskNumber(n: string | null): string | null {
  if (n === null || n.length <= 4) return n;
  const keep = Math.min(5, n.length - 4);
  return `${n.slice(0, keep)}${'*'.repeat(n.length - keep - 2)}${n.slice(-2)}`;
}

/** The figures every analytics answer shares. */
function metrics(s: Sums) {
  const revenue = new Decimal(s.revenue);
  const margin = new Decimal(s.margin);
  return {
    revenue: s.revenue,
    cost: s.cost,
    margin: s.margin,
    marginPct: revenue.isZero() ? null : round(margin.div(revenue).times(100), 2),
    calls: s.calls,
    answered: s.answered,
    messages: s.messages,
    minutes: round(new Decimal(s.billedSeconds).div(60), 2),
    asr: s.calls === 0 ? null : round(new Decimal(s.answered).div(s.calls).times(100), 2),
  };
}

function rating(s: Sums) {
  return {
    unratedBilled: s.unratedBilled,
    billedCalls: s.billedRecords,
    unratedPct: s.billedRecords === 0 ? null : round(new Decimal(s.unratedBilled).div(s.billedRecords).times(100), 2),
    unratedRevenue: s.unratedRevenue,
    unratedMinutes: round(new Decimal(s.unratedSeconds).div(60), 2),
  };
}

const CSV_COLUMNS = [
  'id',
  'createdAt',
  'callId',
  'kind',
  'direction',
  'status',
  'subAccountId',
  'customer',
  'vendorTrunkId',
  'vendorTrunk',
  'supplierId',
  'from',
  'to',
  'cli',
  'sipCode',
  'hangupCause',
  'releaseParty',
  'durationSeconds',
  'billedSeconds',
  'segments',
  'pddMs',
  'mediaMode',
  'ratePerUnit',
  'revenue',
  'cost',
  'margin',
  'rated',
  'simulated',
  'answeredAt',
  'endedAt',
] as const;
const CSV_NUMERIC = [
  'sipCode',
  'durationSeconds',
  'billedSeconds',
  'segments',
  'pddMs',
  'ratePerUnit',
  'revenue',
  'cost',
  'margin',
] as const;

/** Who ended a call, from the B2BUA's hang-up cause (null when no cause was recorded). */
export function releaseParty(cause: string | null): 'caller' | 'callee' | 'system' | null {
  if (cause === null) return null;
  if (cause === 'caller-bye' || cause === 'caller-cancel') return 'caller';
  if (cause === 'callee-bye') return 'callee';
  return 'system';
}

/** A record as the API and the CSV show it; numbers masked unless the caller holds `cdr:numbers`. */
export function presentRecord(r: RecordRow, masked: boolean) {
  const n = (v: string | null) => (masked ? maskNumber(v) : v);
  return {
    id: r.id,
    callId: r.callGroupId,
    kind: r.kind,
    direction: r.direction,
    source: r.source,
    status: r.status,
    subAccountId: r.subAccountId,
    customerLabel: r.customerLabel,
    vendorTrunkId: r.vendorTrunkId,
    vendorTrunkName: r.vendorTrunkName,
    supplierId: r.supplierId,
    from: n(r.fromNumber),
    to: n(r.toNumber),
    cli: n(r.cli),
    sipCode: r.sipCode,
    hangupCause: r.hangupCause,
    releaseParty: r.kind === 'voice' ? releaseParty(r.hangupCause) : null,
    durationSeconds: r.durationSeconds,
    billedSeconds: r.billedSeconds,
    segments: r.segments,
    pddMs: r.pddMs,
    mediaMode: r.mediaMode,
    ratePerUnit: r.ratePerUnit,
    revenue: r.revenue,
    cost: r.cost,
    margin: r.margin,
    rated: r.ratePerUnit !== null,
    billed: r.billed,
    isProbe: r.isProbe,
    simulated: r.simulated,
    answeredAt: r.answeredAt?.toISOString() ?? null,
    endedAt: r.endedAt?.toISOString() ?? null,
    createdAt: r.createdAt.toISOString(),
  };
}

function csvRow(r: RecordRow, masked: boolean): Record<(typeof CSV_COLUMNS)[number], unknown> {
  const p = presentRecord(r, masked);
  return {
    id: p.id,
    createdAt: p.createdAt,
    callId: p.callId,
    kind: p.kind,
    direction: p.direction,
    status: p.status,
    subAccountId: p.subAccountId,
    customer: p.customerLabel,
    vendorTrunkId: p.vendorTrunkId,
    vendorTrunk: p.vendorTrunkName,
    supplierId: p.supplierId,
    from: p.from,
    to: p.to,
    cli: p.cli,
    sipCode: p.sipCode,
    hangupCause: p.hangupCause,
    releaseParty: p.releaseParty,
    durationSeconds: p.durationSeconds,
    billedSeconds: p.billedSeconds,
    segments: p.segments,
    pddMs: p.pddMs,
    mediaMode: p.mediaMode,
    ratePerUnit: p.ratePerUnit,
    revenue: p.revenue,
    cost: p.cost,
    margin: p.margin,
    rated: p.rated,
    simulated: p.simulated,
    answeredAt: p.answeredAt,
    endedAt: p.endedAt,
  };
}

/** What an export stores as its `requestedScope`: the filters as sent, and whether numbers are masked. */
interface StoredScope extends ExportParams {
  filters: ExportBody;
  /** The resolved window, so the file is the same whenever it is written. */
  window: { from: string; to: string };
  numbersMasked: boolean;
}

/**
 * Switch call records and analytics (spec "Switch", call records and analytics): the Switch
 * account's customers' records, their revenue, cost and margin, exports, and customer usage.
 */
export function createSwitchRecords(deps: { sql: Sql; clock: Clock; log: Logger; stateDir: string }) {
  const { clock } = deps;
  const repo = createRecordsRepo(deps.sql);

  // The billing export machinery (table, 3-running limit, files, download path, expiry), with
  // this kind's rows; billing's own instance expires the files and fails exports a restart cut.
  const exports = createBillingExports({
    sql: deps.sql,
    clock,
    log: deps.log,
    stateDir: deps.stateDir,
    repo: createBillingRepo(deps.sql),
    cdrs: { listCdrs: () => Promise.resolve([]) },
    sources: {
      [SWITCH_EXPORT_KIND]: {
        columns: CSV_COLUMNS,
        numeric: CSV_NUMERIC,
        async *rows(e) {
          const scope = e.params as StoredScope;
          const f: RecordFilter = {
            ...parseFilter(scope.filters, clock.now()),
            from: new Date(scope.window.from),
            to: new Date(scope.window.to),
          };
          for await (const r of repo.each(e.accountId, f, EXPORT_BATCH)) yield csvRow(r, scope.numbersMasked);
        },
      },
    },
  });

  function presentExport(e: Awaited<ReturnType<typeof exports.get>>) {
    const scope = e.requestedScope as StoredScope;
    return {
      ...e,
      requestedScope: scope.filters,
      window: scope.window,
      numbersMasked: scope.numbersMasked,
      // Records keep no signalling addresses; nothing else could be shown.
      addressesMasked: scope.numbersMasked,
      queryId: e.id,
    };
  }

  /** The analytics window: `to` default now, `from` default 30 days before it. */
  function window(q: { from?: string | undefined; to?: string | undefined }) {
    const to = q.to ? new Date(q.to) : clock.now();
    const from = q.from ? new Date(q.from) : new Date(to.getTime() - ANALYTICS_DEFAULT_DAYS * DAY_MS);
    if (from >= to) throw validationError([{ path: 'from', message: 'must be before "to"' }]);
    const label =
      !q.from && !q.to
        ? `Last ${ANALYTICS_DEFAULT_DAYS} days`
        : `${from.toISOString().slice(0, 10)} to ${to.toISOString().slice(0, 10)}`;
    return { from, to, label };
  }

  return {
    exports,

    async list(op: string, q: RecordQuery, masked: boolean) {
      const f = parseFilter(q, clock.now());
      const limit = q.limit ?? 50;
      const offset = q.offset ?? 0;
      const { rows, total } = await repo.list(op, f, limit, offset);
      return {
        rows: rows.map((r) => presentRecord(r, masked)),
        total,
        limit,
        offset,
        window: { from: f.from.toISOString(), to: f.to.toISOString() },
        numbersMasked: masked,
      };
    },

    async totals(op: string, q: { from?: string | undefined; to?: string | undefined }) {
      const w = window(q);
      const [s, latest] = await Promise.all([repo.totals(op, w.from, w.to), repo.latestRecordAt(op)]);
      return {
        ...metrics(s),
        window: { from: w.from.toISOString(), to: w.to.toISOString(), label: w.label },
        freshness: { asOf: clock.now().toISOString(), latestRecordAt: latest?.toISOString() ?? null },
        rating: rating(s),
      };
    },

    async daily(op: string, q: { from?: string | undefined; to?: string | undefined }) {
      const w = window(q);
      return (await repo.daily(op, w.from, w.to)).map((d) => ({ day: d.day, ...metrics(d), rating: rating(d) }));
    },

    async breakdown(
      op: string,
      q: {
        from?: string | undefined;
        to?: string | undefined;
        by?: 'customer' | 'supplier' | 'destination' | undefined;
      },
    ) {
      const w = window(q);
      const by = q.by ?? 'customer';
      const items = await repo.breakdown(op, w.from, w.to, by);
      return {
        by,
        window: { from: w.from.toISOString(), to: w.to.toISOString(), label: w.label },
        items: items.map((i) => ({ key: i.key, label: i.label, external: i.external, ...metrics(i) })),
      };
    },

    async startExport(op: string, body: ExportBody, masked: boolean) {
      const f = parseFilter(body, clock.now());
      const scope: StoredScope = {
        filters: body,
        window: { from: f.from.toISOString(), to: f.to.toISOString() },
        numbersMasked: masked,
      };
      return presentExport(await exports.create(op, SWITCH_EXPORT_KIND, scope));
    },

    listExports: async (op: string) => (await exports.list(op, [SWITCH_EXPORT_KIND])).map(presentExport),

    getExport: async (op: string, id: string) => presentExport(await exports.get(op, id, [SWITCH_EXPORT_KIND])),

    async usage(
      op: string,
      q: { subAccountId: string; since?: string | undefined; until?: string | undefined; destinations?: boolean },
      live: (subId: string) => Promise<number>,
    ) {
      const sub = await repo.subAccount(op, q.subAccountId);
      if (!sub) throw notFound('Customer');
      const asked = q.until ? new Date(q.until) : clock.now();
      const since = q.since ? new Date(q.since) : new Date(asked.getTime() - USAGE_DEFAULT_HOURS * 3_600_000);
      if (since >= asked) throw validationError([{ path: 'since', message: 'must be before "until"' }]);
      // A longer window is clamped to its first 92 days; the next page starts at `nextSince`.
      const clamped = asked.getTime() - since.getTime() > USAGE_MAX_DAYS * DAY_MS;
      const until = clamped ? new Date(since.getTime() + USAGE_MAX_DAYS * DAY_MS) : asked;
      const [u, concurrentCalls] = await Promise.all([
        repo.usage(op, sub.id, since, until),
        live(sub.id).catch((err: unknown) => {
          deps.log.warn({ err, subAccountId: sub.id }, 'live call count unavailable');
          return null;
        }),
      ]);
      const sums = (s: Sums) => ({
        calls: s.calls,
        answered: s.answered,
        messages: s.messages,
        minutes: round(new Decimal(s.billedSeconds).div(60), 2),
        revenue: s.revenue,
        cost: s.cost,
        margin: s.margin,
      });
      return {
        window: {
          subAccountId: sub.id,
          since: since.toISOString(),
          until: until.toISOString(),
          requestedUntil: asked.toISOString(),
          nextSince: until.toISOString(),
          clamped,
          maxWindowDays: USAGE_MAX_DAYS,
        },
        customer: { id: sub.id, label: sub.label },
        // Calls refused at the customer's concurrency cap are counted only in the process metric
        // svc_sip_calls_refused_total{cause="concurrency"}, per cause and not per account: not recorded here.
        totals: { ...sums(u.totals), rejectedAtCapacity: null },
        daily: u.daily.map((d) => ({ day: d.day, ...sums(d) })),
        ...(q.destinations
          ? { destinations: u.destinations.map((d) => ({ key: d.key, label: d.label, ...sums(d) })) }
          : {}),
        live: { concurrentCalls },
      };
    },

    openCalls: (subId: string) => repo.openCalls(subId),

    stop: () => exports.stop(),
  };
}

export type SwitchRecords = ReturnType<typeof createSwitchRecords>;
