import { isIP } from 'node:net';
import type { Logger } from 'pino';
import type { Config } from '../../../config/schema.js';
import type { Db, Sql } from '../../../db/connection.js';
import { AppError, conflict, notFound, ruleError, validationError } from '../../../http/errors.js';
import type { Clock } from '../../../platform/clock.js';
import { newId } from '../../../platform/ids.js';
import {
  REFUSED_MESSAGE,
  supplierGuardFrom,
  TargetRefusedError,
  type TargetGuard,
} from '../../../platform/outbound-guard.js';
import type { SelfAddresses } from '../../../platform/self-addresses.js';
import { bindFieldProblems } from '../../../messaging/bind-fields.js';
import { Decimal } from 'decimal.js';
import {
  countCsvRows,
  createPlatformFee,
  parseIncrement,
  parseRateSheetCsvSliced,
  parseRateSheetJsonSliced,
  planRateChangesSteps,
  rowKey,
  round6,
  toMoney,
} from '../../../rating/index.js';
import type { NewSheetEntry, PlatformFee, SheetResult } from '../../../rating/index.js';
import { runSliced, STEP_ITEMS, type Slicing, type Steps } from '../../../platform/cooperative.js';
import { emit } from '../../../webhooks/emit.js';
import * as jobs from '../rate-sheets/sheet-jobs.js';
import type { SheetJob } from '../rate-sheets/sheet-jobs.js';
import * as repo from './repo.js';
import type { EndpointRow, RouteRow, SheetVersionKind } from './repo.js';
import { createDeckCache } from '../routing/deck-cache.js';
import type { DeckCache } from '../routing/deck-cache.js';
import type { QualitySource } from '../routing/smart-routing.js';
import type { RoutingCache } from '../routing/routing-cache.js';
import { qualityScore } from '../routing/smart-routing.js';
import type { MeasuredQuality } from '../routing/smart-routing.js';

export interface EndpointInput {
  host: string;
  port?: number;
  transport?: 'udp' | 'tcp' | 'tls';
  techPrefix?: string;
  username?: string;
  password?: string;
  priority?: number;
  weight?: number;
  label?: string;
}

export type SmsDeliveryInput =
  | { kind: 'smpp'; host: string; port: number; systemId: string; password: string; systemType?: string; tls?: boolean }
  | { kind: 'http'; url: string; authorization?: string; signingSecret?: string };

export interface RouteInput {
  type: 'voice' | 'sms';
  name: string;
  country?: string | null;
  visibility?: 'public' | 'private';
  expectedAsr?: number;
  expectedAcd?: number;
  expectedPdd?: number;
  cliType?: string;
  billingIncrement?: string;
  capacity?: number;
  maxCps?: number;
  noticeDays?: number;
  mediaMode?: 'direct' | 'proxy';
  endpoints?: EndpointInput[];
  smsDelivery?: SmsDeliveryInput;
}

export interface RoutePatch {
  name?: string;
  expectedAsr?: number | null;
  expectedAcd?: number | null;
  expectedPdd?: number | null;
  cliType?: string | null;
  capacity?: number | null;
  maxCps?: number | null;
  mediaMode?: 'direct' | 'proxy';
}

export interface SheetUpload {
  format: 'csv' | 'json';
  csv?: string;
  rows?: unknown[];
  increaseEffectiveAt?: string;
}

const iso = (d: Date | string | null): string | null => (d === null ? null : new Date(d).toISOString());
const num = (s: string | null): number | null => (s === null ? null : Number(s));
const MAX_REPORTED_ERRORS = 10_000;
/** How often a sheet job's progress is written while it runs. */
const PROGRESS_MS = 250;
const MAX_SORTED = 10_000;
/** Spec: bulk endpoint operations touch up to 5,000 routes. */
export const MAX_BULK_ROUTES = 5000;
const MAX_ENDPOINTS_PER_ROUTE = 10;
const LOW_MEASURED_ASR = 0.2;
/** `failing_checks`: at least this many route checks and caller-ID tests in 30 days, under half passed. */
const FAILING_CHECKS_MIN = 3;
const FAILING_CHECKS_SHARE = 0.5;

/** A listing's route-check and caller-ID test results over 30 days, by kind and in all. */
function checksView(rows: readonly { kind: 'call' | 'sms' | 'cli'; checks: number; passed: number }[]) {
  const of = (kind: 'call' | 'sms' | 'cli') => {
    const r = rows.find((x) => x.kind === kind);
    return { checks: r?.checks ?? 0, passed: r?.passed ?? 0 };
  };
  const calls = of('call');
  const sms = of('sms');
  const cli = of('cli');
  return {
    checks: calls.checks + sms.checks + cli.checks,
    passed: calls.passed + sms.passed + cli.passed,
    calls,
    sms,
    cliTests: cli,
  };
}
const HOSTNAME_RE =
  /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/** Whether a SIP or SMPP target is well formed: an IP address (IPv6 bare or in brackets) or a DNS name, and a port. */
export function targetProblems(host: string, port: number, path: string): { path: string; message: string }[] {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const out: { path: string; message: string }[] = [];
  if (isIP(bare) === 0 && (bare !== host || !HOSTNAME_RE.test(host) || /^[\d.]+$/.test(host)))
    out.push({ path: `${path}/host`, message: 'must be an IP address or a DNS name' });
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    out.push({ path: `${path}/port`, message: 'must be 1 to 65535' });
  return out;
}
const cmpStr = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** A SIP OPTIONS probe's answer (the calls module's, as `POST /routes/{id}/test` reports it). */
export interface SipProbeResult {
  ok: boolean;
  status: number | null;
  rttMs: number;
}
/**
 * Sends one OPTIONS to a UDP, TCP or TLS endpoint; null when this daemon's SIP plane is not running
 * (not listening yet, or a daemon built without one).
 */
export type SipProbe = (target: {
  host: string;
  port: number;
  transport: 'udp' | 'tcp' | 'tls';
}) => Promise<SipProbeResult> | null;

/** Why a probe result refuses a bulk write, in words for the seller. */
const probeProblem = (r: SipProbeResult): string =>
  r.status === null ? 'did not answer SIP OPTIONS' : `answered SIP OPTIONS with ${r.status}`;

/** Sorts of GET /routes; the measured ones are ordered in memory (see listRoutes). */
export const ROUTE_SORTS = [
  'newest',
  'price_asc',
  'price_desc',
  'stated_asr_desc',
  'measured_asr_desc',
  'measured_asr_asc',
  'measured_acd_desc',
  'measured_acd_asc',
  'ner_desc',
  'ner_asc',
  'quality_desc',
] as const;
export type RouteSort = (typeof ROUTE_SORTS)[number];
const MEASURED_SORTS: ReadonlySet<RouteSort> = new Set(ROUTE_SORTS.slice(4));
export type ListFilterIn = Omit<repo.ListFilter, 'sort'> & { sort: RouteSort };

/** The platform fee as configured in `[billing]`. */
/** A row in force (or of a snapshot) as an entry of a new sheet that keeps it as it is. */
export const liveEntry = (r: {
  prefix: string;
  mccMnc: string;
  origin: string;
  destination: string;
  rate: string;
  increment: string;
}): NewSheetEntry => ({
  prefix: r.prefix,
  destination: r.destination,
  rate: r.rate,
  increment: parseIncrement(r.increment)!,
  mccMnc: r.mccMnc === '' ? null : r.mccMnc,
  origin: r.origin === '' ? null : r.origin,
  effectiveAt: null,
});

/** The platform fee of the daemon's billing settings, made once per settings object. */
const feesBySettings = new WeakMap<Readonly<Config>['billing'], PlatformFee>();
export function platformFeeFrom(config: Readonly<Config>): PlatformFee {
  const b = config.billing;
  // Asked at every call and message: the settings are read only at start, and the fee is frozen.
  const known = feesBySettings.get(b);
  if (known !== undefined) return known;
  const fee =
    b.platform_fee_mode === 'percent'
      ? createPlatformFee({ kind: 'percent', percent: b.platform_fee_percent })
      : createPlatformFee({
          kind: 'absolute',
          perMinute: b.platform_fee_voice_per_minute,
          perMessage: b.platform_fee_sms_per_message,
        });
  feesBySettings.set(b, fee);
  return fee;
}

/** Listings, delivery details, rate decks (spec "Routes"); owns routes, route_endpoints, rate_* and route_access. */
export function createRoutesService(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  config: Readonly<Config>;
  decks?: DeckCache;
  quality?: QualitySource;
  routingCache?: RoutingCache;
  self?: SelfAddresses;
  guard?: TargetGuard;
  /** Bulk SIP endpoint changes probe the endpoint once with it; without it they check the form only. */
  sipProbe?: SipProbe;
}) {
  const { sql, clock, log } = deps;
  const guard = deps.guard ?? supplierGuardFrom(deps.config, deps.self ? { isSelf: deps.self.isSelf } : {});
  const decks = deps.decks ?? createDeckCache({ sql, clock, log });

  const quality: QualitySource = deps.quality ?? (async () => new Map());
  const sipProbe: SipProbe | null = deps.sipProbe ?? null;
  const r2 = (x: number): number => Math.round(x * 100) / 100;
  /** The listing's `measured` object: percentages and seconds as display numbers. */
  const measuredView = (m: MeasuredQuality | null | undefined) =>
    m === null || m === undefined
      ? null
      : {
          asr: r2(m.asr * 100),
          acd: r2(m.acd),
          ner: r2(m.ner * 100),
          medianPddMs: m.medianPddMs,
          calls: m.calls,
          buyers: m.buyers,
          window: m.window,
        };

  const present = (
    r: RouteRow,
    viewerId: string,
    endpoints: EndpointRow[] = [],
    measured: MeasuredQuality | null = null,
  ) => {
    const own = r.sellerId === viewerId;
    return {
      id: r.id,
      type: r.type,
      name: r.name,
      country: r.country,
      visibility: r.visibility,
      status: r.status,
      own,
      blend: r.blend,
      expectedAsr: num(r.expectedAsr),
      expectedAcd: num(r.expectedAcd),
      expectedPdd: r.expectedPdd,
      cliType: r.cliType,
      billingIncrement: r.billingIncrement,
      capacity: r.capacity,
      maxCps: r.maxCps,
      noticeDays: r.noticeDays,
      mediaMode: r.mediaMode,
      rateCount: Number(r.rateCount),
      lowestRate: r.lowestRate,
      measured: measuredView(measured),
      routeChecks: null,
      // Delivery details only for the seller, and never the secrets.
      endpoints: own
        ? endpoints.map((e) => ({
            id: e.id,
            host: e.host,
            port: e.port,
            transport: e.transport,
            techPrefix: e.techPrefix,
            username: e.username,
            hasPassword: e.password !== null && e.password !== '',
            priority: e.priority,
            weight: e.weight,
            label: e.label,
          }))
        : null,
      smsDeliveryKind: own ? r.smsDeliveryKind : null,
      createdAt: iso(r.createdAt)!,
    };
  };

  const checkInput = (input: RouteInput): void => {
    const errors: { path: string; message: string }[] = [];
    if (input.billingIncrement !== undefined && parseIncrement(input.billingIncrement) === null) {
      errors.push({ path: '/billingIncrement', message: 'must be <first>/<next> in seconds, e.g. 60/60 or 30/6' });
    }
    if (input.type === 'voice') {
      if (!input.endpoints || input.endpoints.length === 0)
        errors.push({ path: '/endpoints', message: 'a voice route needs at least one SIP endpoint' });
      if (input.smsDelivery) errors.push({ path: '/smsDelivery', message: 'only SMS routes have SMS delivery' });
    } else {
      if (!input.smsDelivery)
        errors.push({ path: '/smsDelivery', message: 'an SMS route needs SMPP or HTTPS delivery' });
      if (input.mediaMode === 'proxy') errors.push({ path: '/mediaMode', message: 'only voice routes carry media' });
      if (input.endpoints && input.endpoints.length > 0)
        errors.push({ path: '/endpoints', message: 'only voice routes have SIP endpoints' });
      if (input.smsDelivery?.kind === 'http' && !/^https:\/\//i.test(input.smsDelivery.url)) {
        errors.push({ path: '/smsDelivery/url', message: 'must be an https URL' });
      }
    }
    if (errors.length > 0) throw validationError(errors);
  };

  /**
   * Supplier targets a seller saves must be public addresses (or in the operator's private
   * networks), and never the exchange itself: checked here, and again at every connection (DNS
   * can change). A name that does not resolve now is left to the connection's check.
   */
  const targetRefusals = async (
    endpoints: readonly { host: string; port?: number | undefined }[],
    sms: SmsDeliveryInput | undefined,
    at: { endpoints: (i: number) => string; sms: string },
  ) => {
    const out: { path: string; message: string }[] = [];
    const refused = async (host: string, port: number): Promise<boolean> => {
      try {
        await guard.resolve(host, port);
        return false;
      } catch (err) {
        return err instanceof TargetRefusedError;
      }
    };
    for (const [i, e] of endpoints.entries()) {
      if (await refused(e.host, e.port ?? 5060))
        out.push({ path: `${at.endpoints(i)}/host`, message: REFUSED_MESSAGE });
    }
    if (sms?.kind === 'smpp') {
      if (await refused(sms.host, sms.port)) out.push({ path: `${at.sms}/host`, message: REFUSED_MESSAGE });
      for (const f of bindFieldProblems(sms))
        out.push({ path: `${at.sms}/${f}`, message: 'must not hold control characters' });
    } else if (sms?.kind === 'http') {
      let u: URL | null;
      try {
        u = new URL(sms.url);
      } catch {
        u = null;
      }
      if (u && (await refused(u.hostname, u.port ? Number(u.port) : 443)))
        out.push({ path: `${at.sms}/url`, message: REFUSED_MESSAGE });
    }
    return out;
  };
  const refuseTargets = async (...args: Parameters<typeof targetRefusals>) => {
    const problems = await targetRefusals(...args);
    if (problems.length > 0) throw validationError(problems);
  };

  const parseWhen = (text: string | undefined): Date | null => {
    if (text === undefined) return null;
    const d = new Date(text);
    if (Number.isNaN(d.getTime()))
      throw validationError([{ path: '/increaseEffectiveAt', message: 'must be a date-time' }]);
    return d;
  };

  // The rows are already made: steps that end at once.
  const asSteps = (rows: readonly NewSheetEntry[]) =>
    // eslint-disable-next-line require-yield
    function* (): Steps<readonly NewSheetEntry[]> {
      return rows;
    };

  // Turning the rows in force and a sheet into the deck's writes: steps, so a 500,000-row deck
  // never holds the event loop for more than a slice.
  function* planWrite(
    route: RouteRow,
    live: repo.LiveRateRow[],
    rows: readonly NewSheetEntry[],
    now: Date,
    increaseAt: Date | null,
  ) {
    const idByKey = new Map<string, string>();
    const active: NewSheetEntry[] = [];
    for (let i = 0; i < live.length; i++) {
      const r = live[i]!;
      const entry = liveEntry(r);
      idByKey.set(rowKey(entry), r.id);
      active.push(entry);
      if (i % STEP_ITEMS === STEP_ITEMS - 1) yield;
    }
    const plan = yield* planRateChangesSteps(active, rows, {
      now: () => now,
      noticeDays: route.noticeDays,
      increaseEffectiveAt: increaseAt,
    });
    const write: repo.DeckWrite = { closeIds: [], closeAt: [], insert: [], changes: [] };
    const counts = { increase: 0, decrease: 0, new: 0, removal: 0, update: 0, unchanged: 0 };
    let step = 0;
    for (const c of plan.changes) {
      if (++step % STEP_ITEMS === 0) yield;
      counts[c.kind]++;
      if (c.kind === 'unchanged') continue;
      const mcc = c.mccMnc ?? '';
      const origin = c.origin ?? '';
      if (c.before !== null) {
        write.closeIds.push(idByKey.get(rowKey(c))!);
        write.closeAt.push(c.effectiveAt);
      }
      if (c.after !== null) {
        write.insert.push({
          prefix: c.prefix,
          mccMnc: mcc,
          origin,
          destination: c.after.destination,
          rate: c.after.rate,
          increment: c.after.increment.text,
          effectiveFrom: c.effectiveAt,
        });
      }
      if ((c.kind === 'increase' || c.kind === 'removal') && c.effectiveAt.getTime() > now.getTime()) {
        write.changes.push({
          id: newId(),
          prefix: c.prefix,
          mccMnc: mcc,
          origin,
          kind: c.kind,
          oldRate: c.before?.rate ?? null,
          newRate: c.after?.rate ?? null,
          effectiveAt: c.effectiveAt,
        });
      }
    }
    return { write, counts };
  }

  /**
   * Buyers holding a purchase of the route are told of increases and removals scheduled by a sheet
   * or a flat change (`route.rate_increase_scheduled`), in the transaction that schedules them: the
   * notice period runs from then. The seller's identity is not in the event.
   */
  const noticeBuyers = async (tx: Db, route: RouteRow, changes: repo.DeckWrite['changes']) => {
    if (changes.length === 0) return;
    const buyers = await tx<{ accountId: string; purchaseId: string }[]>`
      select account_id, id as purchase_id from purchases where route_id = ${route.id} and status in ('active', 'paused')`;
    if (buyers.length === 0) return;
    const increases = changes.filter((c) => c.kind === 'increase').length;
    const first = changes.reduce((m, c) => (c.effectiveAt < m ? c.effectiveAt : m), changes[0]!.effectiveAt);
    for (const b of buyers)
      await emit(tx, {
        accountId: b.accountId,
        event: 'route.rate_increase_scheduled',
        data: {
          routeId: route.id,
          routeName: route.name,
          purchaseId: b.purchaseId,
          increases,
          removals: changes.length - increases,
          firstEffectiveAt: first.toISOString(),
          noticeDays: route.noticeDays,
        },
      });
  };

  /**
   * Replaces a deck with the rows `next` makes from the rows in force, in one transaction under the
   * deck's lock: decreases, new destinations and harmless updates now, increases and removals at
   * `increaseAt` or after the route's notice period (rating/rate-changes.ts). The index is rebuilt
   * here and on every peer.
   */
  const applyPlan = async (
    route: RouteRow,
    next: (live: repo.LiveRateRow[]) => Steps<readonly NewSheetEntry[]>,
    increaseAt: Date | null,
    load: Slicing & { onLoaded?: (rows: number) => void; kind?: SheetVersionKind; restoredFrom?: number } = {},
  ) => {
    const routeId = route.id;
    const now = clock.now();
    const result = await sql.begin(async (tx) => {
      const live = await repo.lockDeckForUpload(tx, routeId, now);
      const rows = await runSliced(next(live), { sliceMs, ...load });
      const { write, counts } = await runSliced(planWrite(route, live, rows, now, increaseAt), { sliceMs, ...load });
      const version = await repo.writeDeck(tx, routeId, write, now, rows.length, load);
      await noticeBuyers(tx, route, write.changes);
      const sheetVersion = await repo.recordSheetVersion(tx, routeId, {
        kind: load.kind ?? 'upload',
        at: now,
        rows: rows.length,
        counts,
        scheduled: write.changes.length,
        firstScheduledAt: write.changes.reduce<Date | null>(
          (m, c) => (m === null || c.effectiveAt < m ? c.effectiveAt : m),
          null,
        ),
        restoredFrom: load.restoredFrom ?? null,
      });
      return { version, sheetVersion, counts, scheduled: write.changes.length, rows: rows.length };
    });
    await decks.reload(routeId);
    log.info({ routeId, rows: result.rows, version: result.version }, 'rate sheet applied');
    return {
      routeId,
      version: Number(result.version),
      sheetVersion: result.sheetVersion,
      rows: result.rows,
      increases: result.counts.increase,
      decreases: result.counts.decrease,
      newDestinations: result.counts.new,
      removals: result.counts.removal,
      updates: result.counts.update,
      unchanged: result.counts.unchanged,
      scheduledChanges: result.scheduled,
    };
  };
  type UploadResult = Awaited<ReturnType<typeof applyPlan>>;

  const settings = deps.config.rate_sheets;
  const sliceMs = settings.slice_ms;
  const gate = jobs.createUploadGate({ perAccount: settings.uploads_per_account, total: settings.uploads_total });
  const running = new Map<string, Promise<void>>();
  const stopping = new AbortController();
  let heartbeatTimer: NodeJS.Timeout | undefined;

  type SheetSource = { format: 'csv'; csv: string } | { format: 'json'; rows: unknown[] };
  const sheetSource = (upload: SheetUpload): SheetSource => {
    if (upload.format === 'csv') {
      if (typeof upload.csv !== 'string')
        throw validationError([{ path: '/csv', message: 'required when format is csv' }]);
      return { format: 'csv', csv: upload.csv };
    }
    if (!Array.isArray(upload.rows))
      throw validationError([{ path: '/rows', message: 'required when format is json' }]);
    return { format: 'json', rows: upload.rows };
  };

  /** Parses and checks a sheet a slice at a time (see platform/cooperative.ts). */
  const parseSheet = (
    route: RouteRow,
    source: SheetSource,
    extra: { onProgress?: (rows: number) => void },
  ): Promise<SheetResult> => {
    const opts = { type: route.type, defaultIncrement: parseIncrement(route.billingIncrement)!, ...extra };
    const slicing = { sliceMs, signal: stopping.signal };
    return source.format === 'csv'
      ? parseRateSheetCsvSliced(source.csv, opts, slicing)
      : parseRateSheetJsonSliced(source.rows, opts, slicing);
  };

  /** VALIDATION_ERROR listing every bad row (`path` is `line <n>`). */
  const sheetErrors = (sheet: SheetResult) => {
    const shown = sheet.errors
      .slice(0, MAX_REPORTED_ERRORS)
      .map((e) => ({ path: `line ${e.line}`, message: e.reason }));
    return validationError(
      shown,
      `Rate sheet has ${sheet.errors.length} bad row${sheet.errors.length === 1 ? '' : 's'}`,
    );
  };

  /**
   * Writes a job's progress at most every PROGRESS_MS, one write at a time, so a fast parse does
   * not queue thousands of updates; `flush` waits for the last one.
   */
  const progressWriter = (jobId: string) => {
    let latest: jobs.JobProgress = {};
    let writing: Promise<void> = Promise.resolve();
    let last = 0;
    const write = () => {
      const p = latest;
      latest = {};
      last = Date.now();
      writing = writing
        .then(() => jobs.updateJob(sql, jobId, p))
        .catch((err: unknown) => log.error({ err, jobId }, 'rate sheet job progress not saved'));
    };
    return {
      report(p: jobs.JobProgress, now = false) {
        latest = { ...latest, ...p };
        if (now || Date.now() - last >= PROGRESS_MS) write();
      },
      async flush() {
        if (Object.keys(latest).length > 0) write();
        await writing;
      },
    };
  };

  const runJob = async (
    jobId: string,
    route: RouteRow,
    source: SheetSource,
    increaseAt: Date | null,
  ): Promise<void> => {
    const progress = progressWriter(jobId);
    const jobLog = log.child({ jobId, routeId: route.id });
    try {
      progress.report({ status: 'parsing' }, true);
      const sheet = await parseSheet(route, source, { onProgress: (rows) => progress.report({ rowsParsed: rows }) });
      if (sheet.errors.length > 0) {
        await progress.flush();
        await jobs.finishJob(
          sql,
          jobId,
          { ok: false, errors: sheet.errors, errorCount: sheet.errors.length },
          clock.now(),
        );
        jobLog.info({ errors: sheet.errors.length }, 'rate sheet job refused bad rows');
        return;
      }
      progress.report({ status: 'loading', rowsTotal: sheet.rows.length, rowsParsed: sheet.rows.length }, true);
      const result = await applyPlan(route, asSteps(sheet.rows), increaseAt, {
        signal: stopping.signal,
        onLoaded: (rows) => progress.report({ rowsLoaded: rows }),
      });
      await progress.flush();
      await jobs.finishJob(sql, jobId, { ok: true, result, rows: result.rows }, clock.now());
    } catch (err) {
      await progress.flush();
      const reason =
        err instanceof AppError
          ? err.message
          : stopping.signal.aborted
            ? 'interrupted: the daemon stopped; upload the sheet again'
            : 'internal error';
      if (!(err instanceof AppError) && !stopping.signal.aborted) jobLog.error({ err }, 'rate sheet job failed');
      await jobs
        .finishJob(sql, jobId, { ok: false, errors: [{ line: 0, reason }], errorCount: 1 }, clock.now())
        .catch((e: unknown) => jobLog.error({ err: e }, 'rate sheet job outcome not saved'));
    }
  };

  const endpointOf = (e: EndpointInput, id: string, routeId: string): EndpointRow => ({
    id,
    routeId,
    host: e.host,
    port: e.port ?? 5060,
    transport: e.transport ?? 'udp',
    techPrefix: e.techPrefix ?? '',
    username: e.username === undefined || e.username === '' ? null : e.username,
    password: e.password === undefined || e.password === '' ? null : e.password,
    priority: e.priority ?? 1,
    weight: e.weight ?? 100,
    label: e.label === undefined || e.label === '' ? null : e.label,
  });
  const endpointView = (e: EndpointRow) => ({
    id: e.id,
    routeId: e.routeId,
    host: e.host,
    port: e.port,
    transport: e.transport,
    techPrefix: e.techPrefix,
    username: e.username,
    hasPassword: e.password !== null && e.password !== '',
    priority: e.priority,
    weight: e.weight,
    label: e.label,
  });
  const bulkTargets = async (sellerId: string, type: 'voice' | 'sms', ids: string[] | undefined) => {
    if (ids !== undefined && new Set(ids).size !== ids.length) throw ruleError('A route appears twice');
    const rows = await repo.ownRoutesOfType(sql, sellerId, type, ids ?? null);
    if (rows.length > MAX_BULK_ROUTES) throw ruleError(`At most ${MAX_BULK_ROUTES} routes at once: pass routeIds`);
    const found = rows.map((r) => r.id);
    const have = new Set(found);
    return { found, notFoundIds: (ids ?? []).filter((id) => !have.has(id)) };
  };

  return {
    decks,

    async createRoute(sellerId: string, input: RouteInput) {
      checkInput(input);
      await refuseTargets(input.endpoints ?? [], input.smsDelivery, {
        endpoints: (i) => `/endpoints/${i}`,
        sms: '/smsDelivery',
      });
      const id = newId();
      const endpoints = (input.endpoints ?? []).map((e) => ({
        id: newId(),
        host: e.host,
        port: e.port ?? 5060,
        transport: e.transport ?? 'udp',
        techPrefix: e.techPrefix ?? '',
        username: e.username ?? null,
        password: e.password ?? null,
        priority: e.priority ?? 1,
        weight: e.weight ?? 100,
        label: e.label === undefined || e.label === '' ? null : e.label,
      }));
      await sql.begin(async (tx) => {
        await repo.insertRoute(
          tx,
          {
            id,
            sellerId,
            type: input.type,
            name: input.name,
            country: input.country ?? null,
            visibility: input.visibility ?? 'public',
            expectedAsr: input.expectedAsr === undefined ? null : String(input.expectedAsr),
            expectedAcd: input.expectedAcd === undefined ? null : String(input.expectedAcd),
            expectedPdd: input.expectedPdd ?? null,
            cliType: input.cliType ?? null,
            billingIncrement: parseIncrement(input.billingIncrement ?? '60/60')!.text,
            capacity: input.capacity ?? null,
            maxCps: input.maxCps ?? null,
            noticeDays: input.noticeDays ?? 7,
            mediaMode: input.mediaMode ?? 'direct',
            smsDelivery: input.smsDelivery ? { ...input.smsDelivery } : null,
          },
          endpoints,
        );
        await repo.bumpDeck(tx, id);
      });
      // A new own route joins the seller's usable set: seen by this daemon's next request, not only after NOTIFY.
      deps.routingCache?.routeChanged(id);
      await decks.reload(id);
      return this.getRoute(id, sellerId);
    },

    /** The seller's own route, some of its terms changed; 404 for anyone else's. */
    async updateRoute(sellerId: string, id: string, patch: RoutePatch) {
      const r = await repo.findOwnRoute(sql, id, sellerId);
      if (r === undefined) throw notFound('Route');
      if (patch.mediaMode === 'proxy' && r.type !== 'voice')
        throw validationError([{ path: '/mediaMode', message: 'only voice routes carry media' }]);
      const text = (v: number | null | undefined) => (v === undefined ? undefined : v === null ? null : String(v));
      const fields = Object.fromEntries(
        Object.entries({
          name: patch.name,
          expected_asr: text(patch.expectedAsr),
          expected_acd: text(patch.expectedAcd),
          expected_pdd: patch.expectedPdd,
          cli_type: patch.cliType,
          capacity: patch.capacity,
          max_cps: patch.maxCps,
          media_mode: patch.mediaMode,
        }).filter(([, v]) => v !== undefined),
      ) as Record<string, string | number | null>;
      if (Object.keys(fields).length > 0) await repo.updateRoute(sql, id, fields);
      // The call path's route terms: this daemon's next call sees the change, not only after NOTIFY.
      deps.routingCache?.routeChanged(id);
      return this.getRoute(id, sellerId);
    },

    async getRoute(id: string, viewerId: string) {
      const r = await repo.findVisibleRoute(sql, id, viewerId);
      if (r === undefined) throw notFound('Route');
      const endpoints = r.sellerId === viewerId ? await repo.endpointsFor(sql, [id]) : [];
      const measured = (await quality([id])).get(id) ?? null;
      return present(r, viewerId, endpoints, measured);
    },

    /**
     * Listing with filters. Measured sorts (`measured_*`, `ner_*`) put routes without measured
     * figures last in both directions; `quality_desc` sorts by the Smart Routing quality score
     * (measured, else stated × 0.8). These sorts read up to 10,000 matching routes and page in memory.
     */
    async listRoutes(f: ListFilterIn) {
      if (!MEASURED_SORTS.has(f.sort)) {
        const { rows, total } = await repo.listRoutes(sql, { ...f, sort: f.sort as repo.ListFilter['sort'] });
        const m = await quality(rows.map((r) => r.id));
        return {
          rows: rows.map((r) => present(r, f.viewerId, [], m.get(r.id) ?? null)),
          total,
          limit: f.limit,
          offset: f.offset,
        };
      }
      const { rows, total } = await repo.listRoutes(sql, { ...f, sort: 'newest', limit: MAX_SORTED, offset: 0 });
      const m = await quality(rows.map((r) => r.id));
      const key = (r: RouteRow): number | null => {
        const q = m.get(r.id) ?? null;
        if (f.sort === 'quality_desc') {
          return qualityScore(q, {
            expectedAsr: num(r.expectedAsr),
            expectedAcd: num(r.expectedAcd),
            expectedPdd: r.expectedPdd,
          });
        }
        if (q === null) return null;
        return f.sort.startsWith('measured_asr') ? q.asr : f.sort.startsWith('measured_acd') ? q.acd : q.ner;
      };
      const desc = f.sort.endsWith('_desc');
      const keyed = rows.map((r) => ({ r, k: key(r) }));
      keyed.sort((a, b) => {
        if (a.k === null || b.k === null) return a.k === b.k ? cmpStr(a.r.id, b.r.id) : a.k === null ? 1 : -1;
        return (desc ? b.k - a.k : a.k - b.k) || cmpStr(a.r.id, b.r.id);
      });
      const page = keyed.slice(f.offset, f.offset + f.limit);
      return {
        rows: page.map(({ r }) => present(r, f.viewerId, [], m.get(r.id) ?? null)),
        total,
        limit: f.limit,
        offset: f.offset,
      };
    },

    /**
     * Replaces the route's deck with a sheet, atomically: decreases, new destinations and
     * harmless updates now, increases and removals at `increaseEffectiveAt` or after the
     * route's notice period (rating/rate-changes.ts). The index is rebuilt here and on every peer.
     * A sheet of more than `[rate_sheets] async_rows` rows becomes a job (`kind: 'job'`, 202) whose
     * progress `sheetJob` reports; smaller sheets are applied before this returns. Uploads in
     * progress are bounded per account and in all (429): `slot` is one taken by
     * `acquireUploadSlot`, released here whatever the outcome; without it one is taken here.
     */
    async uploadSheet(
      sellerId: string,
      routeId: string,
      upload: SheetUpload,
      slot?: () => void,
    ): Promise<{ kind: 'applied'; result: UploadResult } | { kind: 'job'; job: SheetJob }> {
      const release = slot ?? gate.acquire(sellerId);
      let route: RouteRow | undefined;
      let source: SheetSource;
      let increaseAt: Date | null;
      try {
        route = await repo.findOwnRoute(sql, routeId, sellerId);
        if (route === undefined) throw notFound('Route');
        source = sheetSource(upload);
        increaseAt = parseWhen(upload.increaseEffectiveAt);
      } catch (err) {
        release();
        throw err;
      }
      const rowsTotal = source.format === 'csv' ? countCsvRows(source.csv) : source.rows.length;
      if (rowsTotal <= settings.async_rows) {
        try {
          const sheet = await parseSheet(route, source, {});
          if (sheet.errors.length > 0) throw sheetErrors(sheet);
          return { kind: 'applied', result: await applyPlan(route, asSteps(sheet.rows), increaseAt) };
        } finally {
          release();
        }
      }
      let job: SheetJob;
      try {
        job = await jobs.createJob(sql, { id: newId(), routeId, accountId: sellerId, rowsTotal, now: clock.now() });
      } catch (err) {
        release();
        throw err;
      }
      const run = runJob(job.jobId, route, source, increaseAt).finally(() => {
        release();
        running.delete(job.jobId);
      });
      running.set(job.jobId, run);
      return { kind: 'job', job };
    },

    /**
     * What an upload would do, without saving: every bad row, or the counts of the changes it would
     * make against the rates in force now (increases and removals scheduled per the notice rule).
     * Under the same upload slot as an upload, and never a job: large sheets are parsed a slice at a time.
     */
    async validateSheet(sellerId: string, routeId: string, upload: SheetUpload, slot: () => void) {
      try {
        const route = await repo.findOwnRoute(sql, routeId, sellerId);
        if (route === undefined) throw notFound('Route');
        const source = sheetSource(upload);
        const increaseAt = parseWhen(upload.increaseEffectiveAt);
        const sheet = await parseSheet(route, source, {});
        const errors = sheet.errors.slice(0, MAX_REPORTED_ERRORS).map((e) => ({ line: e.line, reason: e.reason }));
        if (sheet.errors.length > 0)
          return {
            valid: false,
            rows: sheet.rows.length + sheet.errors.length,
            errorCount: sheet.errors.length,
            errors,
            changes: null,
          };
        const now = clock.now();
        const live = await repo.liveRows(sql, routeId, now);
        const { write, counts } = await runSliced(planWrite(route, live, sheet.rows, now, increaseAt), { sliceMs });
        const firstIncreaseAt = write.changes.reduce<Date | null>(
          (m, c) => (m === null || c.effectiveAt < m ? c.effectiveAt : m),
          null,
        );
        return {
          valid: true,
          rows: sheet.rows.length,
          errorCount: 0,
          errors,
          changes: {
            increases: counts.increase,
            decreases: counts.decrease,
            newDestinations: counts.new,
            removals: counts.removal,
            updates: counts.update,
            unchanged: counts.unchanged,
            scheduledChanges: write.changes.length,
            firstScheduledAt: iso(firstIncreaseAt),
          },
        };
      } finally {
        slot();
      }
    },

    /**
     * Takes one of the account's upload slots or throws 429 RATE_LIMITED; the route takes it before
     * the body is read, so a refused upload never holds a sheet in memory. `uploadSheet` releases it.
     */
    acquireUploadSlot(accountId: string): () => void {
      return gate.acquire(accountId);
    },

    /** A sheet job of the seller's own route, or 404. */
    async sheetJob(sellerId: string, routeId: string, jobId: string): Promise<SheetJob> {
      const job = await jobs.findJob(sql, routeId, jobId, sellerId);
      if (job === undefined) throw notFound('Rate sheet job');
      return job;
    },

    /** Fails the jobs that a dead daemon left behind, and keeps this daemon's jobs alive. */
    async startSheetJobs(): Promise<void> {
      const failed = await jobs.failStaleJobs(sql, clock.now());
      if (failed > 0) log.warn({ jobs: failed }, 'rate sheet jobs of a stopped daemon marked failed');
      heartbeatTimer = setInterval(() => {
        jobs
          .heartbeat(sql, [...running.keys()])
          .catch((err: unknown) => log.error({ err }, 'rate sheet job heartbeat failed'));
      }, jobs.JOB_HEARTBEAT_MS);
      heartbeatTimer.unref();
    },

    /** Stops running jobs at their next slice (their transaction rolls back) and waits for them. */
    async stopSheetJobs(): Promise<void> {
      clearInterval(heartbeatTimer);
      stopping.abort(new Error('daemon stopping'));
      await Promise.allSettled([...running.values()]);
    },

    /**
     * A flat change of every rate in force (country and per-network rows): `amount` added (may be
     * negative) or `percent` applied, rounded half-up to 6 places. It goes through the same rules as
     * a sheet: increases wait for `increaseEffectiveAt` or the notice period, decreases apply at once;
     * like any new sheet it supersedes changes scheduled earlier. A rate may not go below zero.
     */
    async flatRateChange(
      sellerId: string,
      routeId: string,
      input: { amount?: string; percent?: number; increaseEffectiveAt?: string },
    ) {
      const route = await repo.findOwnRoute(sql, routeId, sellerId);
      if (route === undefined) throw notFound('Route');
      if ((input.amount === undefined) === (input.percent === undefined))
        throw ruleError('Give exactly one of amount or percent');
      const increaseAt = parseWhen(input.increaseEffectiveAt);
      const amount = input.amount === undefined ? null : new Decimal(input.amount);
      const factor = input.percent === undefined ? null : new Decimal(input.percent).div(100).plus(1);
      if ((amount !== null && amount.isZero()) || (factor !== null && factor.eq(1)))
        throw ruleError('A flat change of zero changes nothing');
      return applyPlan(
        route,
        function* (live) {
          const rows: NewSheetEntry[] = [];
          for (const r of live) {
            if (rows.length % STEP_ITEMS === STEP_ITEMS - 1) yield;
            const old = new Decimal(r.rate);
            const next = round6(amount !== null ? old.plus(amount) : old.times(factor!));
            if (next.isNegative()) throw ruleError(`The change would make the rate of prefix ${r.prefix} negative`);
            rows.push({
              prefix: r.prefix,
              destination: r.destination,
              rate: toMoney(next),
              increment: parseIncrement(r.increment)!,
              mccMnc: r.mccMnc === '' ? null : r.mccMnc,
              origin: r.origin === '' ? null : r.origin,
              effectiveAt: null,
            });
          }
          return rows;
        },
        increaseAt,
        { kind: 'flat' },
      );
    },

    /**
     * Applies a sheet made from the rows in force (`next` gets them, returns the whole new sheet)
     * to an own route under the same rules as an upload: row edits, restores and bulk uploads.
     */
    async applySheet(
      sellerId: string,
      routeId: string,
      next: (live: repo.LiveRateRow[]) => readonly NewSheetEntry[],
      o: { increaseEffectiveAt?: string; kind: SheetVersionKind; restoredFrom?: number },
    ) {
      const route = await repo.findOwnRoute(sql, routeId, sellerId);
      if (route === undefined) throw notFound('Route');
      const increaseAt = parseWhen(o.increaseEffectiveAt);
      return applyPlan(
        route,
        // eslint-disable-next-line require-yield
        function* (live) {
          return next(live);
        },
        increaseAt,
        { kind: o.kind, ...(o.restoredFrom === undefined ? {} : { restoredFrom: o.restoredFrom }) },
      );
    },

    /** Parses rows given as an upload's JSON rows against an own route (for row edits and bulk uploads). */
    async parseRows(sellerId: string, routeId: string, upload: SheetUpload) {
      const route = await repo.findOwnRoute(sql, routeId, sellerId);
      if (route === undefined) throw notFound('Route');
      const sheet = await parseSheet(route, sheetSource(upload), {});
      return { route, rows: sheet.rows, errors: sheet.errors };
    },

    async rates(routeId: string, viewerId: string, q: { prefix?: string; limit: number; offset: number }) {
      const r = await repo.findVisibleRoute(sql, routeId, viewerId);
      if (r === undefined) throw notFound('Route');
      const page = await repo.ratesPage(sql, routeId, clock.now(), q);
      return {
        rows: page.rows.map((x) => ({
          prefix: x.prefix,
          destination: x.destination,
          rate: x.rate,
          billingIncrement: x.increment,
          mccMnc: x.mccMnc === '' ? null : x.mccMnc,
          origin: x.origin === '' ? null : x.origin,
          effectiveFrom: iso(x.effectiveFrom)!,
        })),
        total: page.total,
        limit: q.limit,
        offset: q.offset,
      };
    },

    async rateChanges(routeId: string, sellerId: string) {
      const r = await repo.findOwnRoute(sql, routeId, sellerId);
      if (r === undefined) throw notFound('Route');
      return this.upcomingChanges(routeId);
    },

    /** Seller withdraws a scheduled increase or removal; the current rate stays. */
    async cancelRateChange(sellerId: string, routeId: string, changeId: string) {
      const r = await repo.findOwnRoute(sql, routeId, sellerId);
      if (r === undefined) throw notFound('Route');
      const done = await sql.begin(async (tx) => {
        await tx`select 1 from rate_decks where route_id = ${routeId} for update`;
        const ok = await repo.cancelScheduledChange(tx, routeId, changeId, clock.now());
        if (ok) await repo.bumpDeck(tx, routeId);
        return ok;
      });
      if (!done) throw notFound('Scheduled rate change');
      await decks.reload(routeId);
      return { id: changeId, status: 'cancelled' as const };
    },

    /** Scheduled changes of a route the caller bought (the caller checks the purchase); `acceptedAt` per purchase. */
    async upcomingChanges(routeId: string, purchaseId: string | null = null) {
      const rows = await repo.scheduledChanges(sql, routeId, clock.now(), purchaseId);
      return rows.map((c) => ({
        id: c.id,
        prefix: c.prefix,
        mccMnc: c.mccMnc === '' ? null : c.mccMnc,
        origin: c.origin === '' ? null : c.origin,
        kind: c.kind,
        oldRate: c.oldRate,
        newRate: c.newRate,
        effectiveAt: iso(c.effectiveAt)!,
        status: c.status,
        acceptedAt: iso(c.acceptedAt),
      }));
    },

    /** Records a buyer's early acceptance (the caller checks the purchase); 404 for an unknown or no longer scheduled change. */
    async acceptChanges(routeId: string, purchaseId: string, changeId: string | null) {
      const rows = await sql.begin((tx) => repo.acceptChanges(tx, routeId, purchaseId, changeId, clock.now()));
      if (changeId !== null && rows.length === 0) throw notFound('Scheduled rate change');
      return rows.map((r) => ({ changeId: r.changeId, acceptedAt: iso(r.acceptedAt)! }));
    },

    /** Public destinations with live routes, for the markets reads. */
    marketDestinations: () => repo.marketDestinations(sql, clock.now()),
    /** Public counts for the markets summary; `since` bounds the new listings counted as movers. */
    marketSummary: (since: Date) => repo.marketSummary(sql, clock.now(), since),
    /** Rows in force of public routes of one country and type, cheapest first. */
    marketRows: (country: string, type: 'voice' | 'sms') => repo.marketRows(sql, country, type, clock.now()),

    /** Makes a private route visible to and buyable by another account. */
    async grantAccess(sellerId: string, routeId: string, accountId: string, db: Db = sql) {
      const r = await repo.findOwnRoute(db, routeId, sellerId);
      if (r === undefined) throw notFound('Route');
      if (accountId === sellerId) throw ruleError('The seller always has access to its own route');
      // A blend holding routes the seller bought is for the seller's own traffic (blends/service.ts).
      const [lent] =
        await db`select 1 from route_blend_members m join routes x on x.id = m.member_id where m.blend_id = ${routeId} and x.seller_id <> ${sellerId} limit 1`;
      if (lent !== undefined)
        throw ruleError('A blend holding routes you bought is for your own traffic: it cannot be granted to others');
      const [acct] = await db`select 1 from accounts where id = ${accountId}`;
      if (acct === undefined) throw notFound('Account');
      await db`insert into route_access (route_id, account_id) values (${routeId}, ${accountId}) on conflict do nothing`;
      return { routeId, accountId };
    },

    async revokeAccess(sellerId: string, routeId: string, accountId: string) {
      const r = await repo.findOwnRoute(sql, routeId, sellerId);
      if (r === undefined) throw notFound('Route');
      const res = await sql`delete from route_access where route_id = ${routeId} and account_id = ${accountId}`;
      if (res.count === 0) throw notFound('Access grant');
      return { routeId, accountId };
    },

    /** Whether `accountId` may see and buy the route (public, own or granted); the route's facts if so. */
    async visibleRoute(routeId: string, accountId: string) {
      return repo.findVisibleRoute(sql, routeId, accountId);
    },

    /** Seller adds a SIP endpoint to an own voice route (at most 10 per route). */
    async addEndpoint(sellerId: string, input: EndpointInput & { routeId: string }) {
      const route = await repo.findOwnRoute(sql, input.routeId, sellerId);
      if (route === undefined) throw notFound('Route');
      if (route.type !== 'voice') throw ruleError('Only voice routes have SIP endpoints');
      const problems = targetProblems(input.host, input.port ?? 5060, '');
      if (problems.length > 0) throw validationError(problems);
      await refuseTargets([input], undefined, { endpoints: () => '', sms: '' });
      const e = endpointOf(input, newId(), route.id);
      await sql.begin(async (tx) => {
        await tx`select 1 from routes where id = ${route.id} for update`;
        if ((await repo.countEndpoints(tx, route.id)) >= MAX_ENDPOINTS_PER_ROUTE)
          throw ruleError(`A route has at most ${MAX_ENDPOINTS_PER_ROUTE} SIP endpoints`);
        await repo.insertEndpoint(tx, e);
      });
      // The call path's endpoint cache: this daemon's next call sees it, not only after NOTIFY.
      deps.routingCache?.routeChanged(route.id);
      return endpointView(e);
    },

    /** The seller's saved SIP endpoints (every own voice route, or one), by route and priority; offset-paged. */
    async listEndpoints(sellerId: string, q: { routeId?: string; limit: number; offset: number }) {
      const rows = await sql<(EndpointRow & { total: string })[]>`
        select e.id, e.route_id, e.host, e.port, e.transport, e.tech_prefix, e.username, e.password, e.priority, e.weight,
          e.label, count(*) over () as total
        from route_endpoints e join routes r on r.id = e.route_id
        where r.seller_id = ${sellerId} and r.status <> 'deleted' ${q.routeId ? sql`and r.id = ${q.routeId}` : sql``}
        order by r.id, e.priority, e.id limit ${q.limit} offset ${q.offset}`;
      return {
        rows: rows.map(endpointView),
        total: rows.length === 0 ? 0 : Number(rows[0]!.total),
        limit: q.limit,
        offset: q.offset,
      };
    },

    async getEndpoint(sellerId: string, id: string) {
      const e = await repo.findOwnEndpoint(sql, id, sellerId);
      if (e === undefined) throw notFound('Endpoint');
      return endpointView(e);
    },

    /**
     * One saved endpoint checked as the bulk operations check theirs: its address through the
     * outbound guard, then one SIP OPTIONS (`method` `options`; `form` when the SIP plane is not running).
     */
    async probeEndpoint(sellerId: string, id: string) {
      const e = await repo.findOwnEndpoint(sql, id, sellerId);
      if (e === undefined) throw notFound('Endpoint');
      const problems = targetProblems(e.host, e.port, '/host');
      if (problems.length === 0)
        problems.push(
          ...(await targetRefusals([{ host: e.host, port: e.port }], undefined, { endpoints: () => '/host', sms: '' })),
        );
      const transport = e.transport as 'udp' | 'tcp' | 'tls';
      const probing =
        problems.length === 0 && sipProbe !== null
          ? sipProbe({
              host: e.host.startsWith('[') && e.host.endsWith(']') ? e.host.slice(1, -1) : e.host,
              port: e.port,
              transport,
            })
          : null;
      if (probing === null)
        return {
          endpointId: e.id,
          routeId: e.routeId,
          ok: problems.length === 0,
          method: 'form' as const,
          status: null,
          rttMs: null,
          problems,
        };
      const r = await probing;
      return {
        endpointId: e.id,
        routeId: e.routeId,
        ok: r.ok,
        method: 'options' as const,
        status: r.status,
        rttMs: r.rttMs,
        problems: r.ok ? [] : [{ path: '/host', message: probeProblem(r) }],
      };
    },

    /** Seller edits an endpoint; an empty label clears it, an empty password removes it. */
    async updateEndpoint(sellerId: string, id: string, patch: Partial<EndpointInput>) {
      const cur = await repo.findOwnEndpoint(sql, id, sellerId);
      if (cur === undefined) throw notFound('Endpoint');
      const next: EndpointRow = {
        ...cur,
        ...(patch.host === undefined ? {} : { host: patch.host }),
        ...(patch.port === undefined ? {} : { port: patch.port }),
        ...(patch.transport === undefined ? {} : { transport: patch.transport }),
        ...(patch.techPrefix === undefined ? {} : { techPrefix: patch.techPrefix }),
        ...(patch.username === undefined ? {} : { username: patch.username === '' ? null : patch.username }),
        ...(patch.password === undefined ? {} : { password: patch.password === '' ? null : patch.password }),
        ...(patch.priority === undefined ? {} : { priority: patch.priority }),
        ...(patch.weight === undefined ? {} : { weight: patch.weight }),
        ...(patch.label === undefined ? {} : { label: patch.label === '' ? null : patch.label }),
      };
      const problems = targetProblems(next.host, next.port, '');
      if (problems.length > 0) throw validationError(problems);
      await refuseTargets([next], undefined, { endpoints: () => '', sms: '' });
      await repo.updateEndpoint(sql, next);
      deps.routingCache?.routeChanged(next.routeId);
      return endpointView(next);
    },

    /**
     * One SIP endpoint onto many own voice routes (all of them when `routeIds` is omitted; at most
     * 5,000): `replace` their endpoints (default) or `add` it beside them. The endpoint is checked
     * once before anything is written: its form, then one OPTIONS probe over UDP or TCP through the
     * calls module's SIP stack (`check.method` `options`). A bad form is reported with nothing
     * written; an endpoint that fails the probe refuses the write with an error, and a dry run
     * reports it instead. A daemon without a running SIP plane gives the form check only
     * (`method` `form`). `dryRun` writes nothing.
     */
    async bulkSipEndpoint(
      sellerId: string,
      input: { routeIds?: string[]; endpoint: EndpointInput; mode?: 'replace' | 'add'; dryRun?: boolean },
    ) {
      const host = input.endpoint.host;
      const port = input.endpoint.port ?? 5060;
      const transport = input.endpoint.transport ?? 'udp';
      const problems = targetProblems(host, port, '/endpoint');
      if (problems.length === 0)
        problems.push(
          ...(await targetRefusals([{ host, port }], undefined, { endpoints: () => '/endpoint', sms: '' })),
        );
      const { found, notFoundIds } = await bulkTargets(sellerId, 'voice', input.routeIds);
      let check: {
        ok: boolean;
        method: 'form' | 'options';
        problems: { path: string; message: string }[];
        status?: number | null;
        rttMs?: number;
      } = { ok: problems.length === 0, method: 'form', problems };
      const probing =
        check.ok && sipProbe !== null
          ? sipProbe({ host: host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host, port, transport })
          : null;
      if (probing !== null) {
        const r = await probing;
        check = {
          ok: r.ok,
          method: 'options',
          status: r.status,
          rttMs: r.rttMs,
          problems: r.ok ? [] : [{ path: '/endpoint', message: probeProblem(r) }],
        };
        if (!r.ok && !input.dryRun) {
          log.info({ sellerId, status: r.status }, 'bulk SIP endpoint refused: probe failed');
          throw new AppError(
            'VALIDATION_ERROR',
            `The endpoint ${probeProblem(r)}; no route was changed`,
            check.problems,
          );
        }
      }
      const mode = input.mode ?? 'replace';
      if (check.ok && !input.dryRun && found.length > 0) {
        const e = endpointOf(input.endpoint, '', '');
        await sql.begin((tx) =>
          repo.setEndpointOnRoutes(
            tx,
            found,
            e,
            mode,
            found.map(() => newId()),
          ),
        );
        for (const id of found) deps.routingCache?.routeChanged(id);
        log.info({ sellerId, routes: found.length, mode, check: check.method }, 'bulk SIP endpoint applied');
      }
      return {
        dryRun: input.dryRun ?? false,
        mode,
        check,
        matched: found.length,
        updated: check.ok && !input.dryRun ? found.length : 0,
        routeIds: found,
        notFound: notFoundIds,
      };
    },

    /** SMS delivery onto many own SMS routes; same rules as bulkSipEndpoint (form checked once, dry run). */
    async bulkSmsDelivery(
      sellerId: string,
      input: { routeIds?: string[]; smsDelivery: SmsDeliveryInput; dryRun?: boolean },
    ) {
      const d = input.smsDelivery;
      const problems =
        d.kind === 'smpp'
          ? targetProblems(d.host, d.port, '/smsDelivery')
          : (() => {
              try {
                const u = new URL(d.url);
                return u.protocol === 'https:' && u.hostname !== ''
                  ? []
                  : [{ path: '/smsDelivery/url', message: 'must be an https URL' }];
              } catch {
                return [{ path: '/smsDelivery/url', message: 'must be an https URL' }];
              }
            })();
      if (problems.length === 0)
        problems.push(...(await targetRefusals([], d, { endpoints: () => '', sms: '/smsDelivery' })));
      const check = { ok: problems.length === 0, method: 'form' as const, problems };
      const { found, notFoundIds } = await bulkTargets(sellerId, 'sms', input.routeIds);
      if (check.ok && !input.dryRun && found.length > 0) {
        await sql.begin((tx) => repo.setSmsDelivery(tx, found, { ...d }, clock.now()));
        for (const id of found) deps.routingCache?.routeChanged(id);
        log.info({ sellerId, routes: found.length, kind: d.kind }, 'bulk SMS delivery applied');
      }
      return {
        dryRun: input.dryRun ?? false,
        check,
        matched: found.length,
        updated: check.ok && !input.dryRun ? found.length : 0,
        routeIds: found,
        notFound: notFoundIds,
      };
    },

    /**
     * The seller's listings with what keeps each from selling well: `no_rates`, `no_delivery`
     * (voice without SIP endpoints, SMS without delivery), `paused`, `no_stated_asr`, and
     * `low_measured_asr` (measured ASR under 20%). `healthy` when none applies.
     */
    async listingHealth(sellerId: string) {
      const rows = await repo.listingHealth(sql, sellerId, clock.now());
      const m = await quality(rows.map((r) => r.id));
      const results = await repo.checkResults(
        sql,
        rows.map((r) => r.id),
        clock.now(),
      );
      const out = rows.map((r) => {
        const measured = m.get(r.id) ?? null;
        const checks = checksView(results.filter((x) => x.routeId === r.id));
        const issues: string[] = [];
        if (checks.checks >= FAILING_CHECKS_MIN && checks.passed / checks.checks < FAILING_CHECKS_SHARE) {
          issues.push('failing_checks');
        }
        if (r.rateCount === 0) issues.push('no_rates');
        if (r.type === 'voice' ? r.endpoints === 0 : !r.hasSmsDelivery) issues.push('no_delivery');
        if (r.status === 'paused') issues.push('paused');
        if (r.status === 'suspended') issues.push('suspended');
        // Route reports (marketplace/reports): still open, and upheld by the operator in the last 90 days.
        if (r.openReports > 0) issues.push('open_reports');
        if (r.upheldReports > 0) issues.push('upheld_reports');
        if (r.expectedAsr === null) issues.push('no_stated_asr');
        if (measured !== null && measured.asr < LOW_MEASURED_ASR) issues.push('low_measured_asr');
        return {
          routeId: r.id,
          name: r.name,
          type: r.type,
          status: r.status,
          visibility: r.visibility,
          rateCount: r.rateCount,
          endpoints: r.endpoints,
          activePurchases: r.purchases,
          scheduledChanges: r.scheduledChanges,
          openReports: r.openReports,
          upheldReports: r.upheldReports,
          ratesUploadedAt: iso(r.uploadedAt),
          measured: measuredView(measured),
          checks,
          issues,
          healthy: issues.length === 0,
        };
      });
      return {
        routes: out.length,
        healthy: out.filter((r) => r.healthy).length,
        withIssues: out.filter((r) => !r.healthy).length,
        listings: out,
      };
    },

    /**
     * A route check, test message or caller-ID test said whether the route works: counted in its
     * listing health (`checks`, `failing_checks`), in the caller's transaction. Nobody's account
     * is kept; checks of one's own listing are not recorded by the callers.
     */
    recordCheckResult: (db: Db, r: { routeId: string; kind: 'call' | 'sms' | 'cli'; passed: boolean }) =>
      repo.recordCheckResult(db, { ...r, at: clock.now() }),

    endpointsFor: (routeIds: readonly string[]) =>
      deps.routingCache?.endpointsFor(routeIds) ?? repo.endpointsFor(sql, routeIds),
    /** A seller's SMS routes (not deleted): the binds its SMSC delivers messages to its numbers over. */
    ownSmsRouteIds: async (sellerId: string): Promise<string[]> =>
      (await repo.ownRoutesOfType(sql, sellerId, 'sms', null)).map((r) => r.id),
    smsDeliveryFor: (routeIds: readonly string[]) =>
      deps.routingCache?.smsDeliveryFor(routeIds) ?? repo.smsDeliveryFor(sql, routeIds),
    conflictIfOwn(route: RouteRow, accountId: string) {
      if (route.sellerId === accountId) throw conflict('Own routes need no purchase: they are used as they are');
    },
  };
}

export type RoutesService = ReturnType<typeof createRoutesService>;
