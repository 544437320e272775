import type { Logger } from 'pino';
import type { Config } from '../../config/schema.js';
import type { Sql } from '../../db/connection.js';
import { conflict, notFound, ruleError, validationError } from '../../http/errors.js';
import type { Clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import {
  createPlatformFee, parseIncrement, parseRateSheetCsv, parseRateSheetJson, planRateChanges,
} from '../../rating/index.js';
import type { PlatformFee, SheetResult } from '../../rating/index.js';
import * as repo from './repo.js';
import type { EndpointRow, RouteRow } from './repo.js';
import { createDeckCache } from './deck-cache.js';
import type { DeckCache } from './deck-cache.js';

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
  | { kind: 'http'; url: string; authorization?: string };

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
  endpoints?: EndpointInput[];
  smsDelivery?: SmsDeliveryInput;
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

/** The platform fee as configured in `[billing]`. */
export function platformFeeFrom(config: Readonly<Config>): PlatformFee {
  const b = config.billing;
  if (b.platform_fee_mode === 'percent') return createPlatformFee({ kind: 'percent', percent: b.platform_fee_percent });
  return createPlatformFee({ kind: 'absolute', perMinute: b.platform_fee_voice_per_minute, perMessage: b.platform_fee_sms_per_message });
}

/** Listings, delivery details, rate decks (spec "Routes"); owns routes, route_endpoints, rate_* and route_access. */
export function createRoutesService(deps: { sql: Sql; clock: Clock; log: Logger; config: Readonly<Config>; decks?: DeckCache }) {
  const { sql, clock, log } = deps;
  const decks = deps.decks ?? createDeckCache({ sql, clock, log });

  const present = (r: RouteRow, viewerId: string, endpoints: EndpointRow[] = []) => {
    const own = r.sellerId === viewerId;
    return {
      id: r.id,
      type: r.type,
      name: r.name,
      country: r.country,
      visibility: r.visibility,
      status: r.status,
      own,
      expectedAsr: num(r.expectedAsr),
      expectedAcd: num(r.expectedAcd),
      expectedPdd: r.expectedPdd,
      cliType: r.cliType,
      billingIncrement: r.billingIncrement,
      capacity: r.capacity,
      maxCps: r.maxCps,
      noticeDays: r.noticeDays,
      rateCount: Number(r.rateCount),
      lowestRate: r.lowestRate,
      // Quality measured on buyer calls comes from CDRs (issue 4 note: filled in once the call path records them).
      measured: null,
      routeChecks: null,
      // Delivery details only for the seller, and never the secrets.
      endpoints: own
        ? endpoints.map((e) => ({
            id: e.id, host: e.host, port: e.port, transport: e.transport, techPrefix: e.techPrefix, username: e.username,
            hasPassword: e.password !== null && e.password !== '', priority: e.priority, weight: e.weight, label: e.label,
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
      if (!input.endpoints || input.endpoints.length === 0) errors.push({ path: '/endpoints', message: 'a voice route needs at least one SIP endpoint' });
      if (input.smsDelivery) errors.push({ path: '/smsDelivery', message: 'only SMS routes have SMS delivery' });
    } else {
      if (!input.smsDelivery) errors.push({ path: '/smsDelivery', message: 'an SMS route needs SMPP or HTTPS delivery' });
      if (input.endpoints && input.endpoints.length > 0) errors.push({ path: '/endpoints', message: 'only voice routes have SIP endpoints' });
      if (input.smsDelivery?.kind === 'http' && !/^https:\/\//i.test(input.smsDelivery.url)) {
        errors.push({ path: '/smsDelivery/url', message: 'must be an https URL' });
      }
    }
    if (errors.length > 0) throw validationError(errors);
  };

  return {
    decks,

    async createRoute(sellerId: string, input: RouteInput) {
      checkInput(input);
      const id = newId();
      const endpoints = (input.endpoints ?? []).map((e) => ({
        id: newId(), host: e.host, port: e.port ?? 5060, transport: e.transport ?? 'udp', techPrefix: e.techPrefix ?? '',
        username: e.username ?? null, password: e.password ?? null, priority: e.priority ?? 1, weight: e.weight ?? 100,
        label: e.label === undefined || e.label === '' ? null : e.label,
      }));
      await sql.begin(async (tx) => {
        await repo.insertRoute(tx, {
          id, sellerId, type: input.type, name: input.name, country: input.country ?? null, visibility: input.visibility ?? 'public',
          expectedAsr: input.expectedAsr === undefined ? null : String(input.expectedAsr),
          expectedAcd: input.expectedAcd === undefined ? null : String(input.expectedAcd),
          expectedPdd: input.expectedPdd ?? null, cliType: input.cliType ?? null,
          billingIncrement: parseIncrement(input.billingIncrement ?? '60/60')!.text,
          capacity: input.capacity ?? null, maxCps: input.maxCps ?? null, noticeDays: input.noticeDays ?? 7,
          smsDelivery: input.smsDelivery ? { ...input.smsDelivery } : null,
        }, endpoints);
        await repo.bumpDeck(tx, id);
      });
      await decks.reload(id);
      return this.getRoute(id, sellerId);
    },

    async getRoute(id: string, viewerId: string) {
      const r = await repo.findVisibleRoute(sql, id, viewerId);
      if (r === undefined) throw notFound('Route');
      const endpoints = r.sellerId === viewerId ? await repo.endpointsFor(sql, [id]) : [];
      return present(r, viewerId, endpoints);
    },

    async listRoutes(f: repo.ListFilter) {
      const { rows, total } = await repo.listRoutes(sql, f);
      return { rows: rows.map((r) => present(r, f.viewerId)), total, limit: f.limit, offset: f.offset };
    },

    /** Validates a sheet; throws VALIDATION_ERROR listing every bad row (`path` is `line <n>`). */
    parseSheet(route: { type: 'voice' | 'sms'; billingIncrement: string }, upload: SheetUpload): SheetResult {
      const opts = { type: route.type, defaultIncrement: parseIncrement(route.billingIncrement)! };
      let result: SheetResult;
      if (upload.format === 'csv') {
        if (typeof upload.csv !== 'string') throw validationError([{ path: '/csv', message: 'required when format is csv' }]);
        result = parseRateSheetCsv(upload.csv, opts);
      } else {
        if (!Array.isArray(upload.rows)) throw validationError([{ path: '/rows', message: 'required when format is json' }]);
        result = parseRateSheetJson(upload.rows, opts);
      }
      if (result.errors.length > 0) {
        const shown = result.errors.slice(0, MAX_REPORTED_ERRORS).map((e) => ({ path: `line ${e.line}`, message: e.reason }));
        throw validationError(shown, `Rate sheet has ${result.errors.length} bad row${result.errors.length === 1 ? '' : 's'}`);
      }
      return result;
    },

    /**
     * Replaces the route's deck with a sheet, atomically: decreases, new destinations and
     * harmless updates now, increases and removals at `increaseEffectiveAt` or after the
     * route's notice period (rating/rate-changes.ts). The index is rebuilt here and on every peer.
     */
    async uploadSheet(sellerId: string, routeId: string, upload: SheetUpload) {
      const route = await repo.findOwnRoute(sql, routeId, sellerId);
      if (route === undefined) throw notFound('Route');
      const sheet = this.parseSheet(route, upload);
      const now = clock.now();
      let increaseAt: Date | null = null;
      if (upload.increaseEffectiveAt !== undefined) {
        increaseAt = new Date(upload.increaseEffectiveAt);
        if (Number.isNaN(increaseAt.getTime())) throw validationError([{ path: '/increaseEffectiveAt', message: 'must be a date-time' }]);
      }
      const result = await sql.begin(async (tx) => {
        const live = await repo.lockDeckForUpload(tx, routeId, now);
        const idByKey = new Map(live.map((r) => [`${r.prefix}|${r.mccMnc}`, r.id]));
        const active = live.map((r) => ({
          prefix: r.prefix, destination: r.destination, rate: r.rate, increment: parseIncrement(r.increment)!, mccMnc: r.mccMnc === '' ? null : r.mccMnc,
        }));
        const plan = planRateChanges(active, sheet.rows, { now: () => now, noticeDays: route.noticeDays, increaseEffectiveAt: increaseAt });
        const write: repo.DeckWrite = { closeIds: [], closeAt: [], insert: [], changes: [] };
        const counts = { increase: 0, decrease: 0, new: 0, removal: 0, update: 0, unchanged: 0 };
        for (const c of plan.changes) {
          counts[c.kind]++;
          if (c.kind === 'unchanged') continue;
          const mcc = c.mccMnc ?? '';
          if (c.before !== null) {
            write.closeIds.push(idByKey.get(`${c.prefix}|${mcc}`)!);
            write.closeAt.push(c.effectiveAt);
          }
          if (c.after !== null) {
            write.insert.push({ prefix: c.prefix, mccMnc: mcc, destination: c.after.destination, rate: c.after.rate, increment: c.after.increment.text, effectiveFrom: c.effectiveAt });
          }
          if ((c.kind === 'increase' || c.kind === 'removal') && c.effectiveAt.getTime() > now.getTime()) {
            write.changes.push({ id: newId(), prefix: c.prefix, mccMnc: mcc, kind: c.kind, oldRate: c.before?.rate ?? null, newRate: c.after?.rate ?? null, effectiveAt: c.effectiveAt });
          }
        }
        const version = await repo.writeDeck(tx, routeId, write, now, sheet.rows.length);
        return { version, counts, scheduled: write.changes.length };
      });
      await decks.reload(routeId);
      log.info({ routeId, rows: sheet.rows.length, version: result.version }, 'rate sheet applied');
      return {
        routeId,
        version: Number(result.version),
        rows: sheet.rows.length,
        increases: result.counts.increase,
        decreases: result.counts.decrease,
        newDestinations: result.counts.new,
        removals: result.counts.removal,
        updates: result.counts.update,
        unchanged: result.counts.unchanged,
        scheduledChanges: result.scheduled,
      };
    },

    async rates(routeId: string, viewerId: string, q: { prefix?: string; limit: number; offset: number }) {
      const r = await repo.findVisibleRoute(sql, routeId, viewerId);
      if (r === undefined) throw notFound('Route');
      const page = await repo.ratesPage(sql, routeId, clock.now(), q);
      return {
        rows: page.rows.map((x) => ({
          prefix: x.prefix, destination: x.destination, rate: x.rate, billingIncrement: x.increment,
          mccMnc: x.mccMnc === '' ? null : x.mccMnc, effectiveFrom: iso(x.effectiveFrom)!,
        })),
        total: page.total, limit: q.limit, offset: q.offset,
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

    /** Scheduled changes of a route the caller bought (the caller checks the purchase). */
    async upcomingChanges(routeId: string) {
      const rows = await repo.scheduledChanges(sql, routeId, clock.now());
      return rows.map((c) => ({
        id: c.id, prefix: c.prefix, mccMnc: c.mccMnc === '' ? null : c.mccMnc, kind: c.kind, oldRate: c.oldRate, newRate: c.newRate,
        effectiveAt: iso(c.effectiveAt)!, status: c.status,
      }));
    },

    /** Public destinations with live routes, for the markets reads. */
    marketDestinations: () => repo.marketDestinations(sql, clock.now()),

    /** Makes a private route visible to and buyable by another account. */
    async grantAccess(sellerId: string, routeId: string, accountId: string) {
      const r = await repo.findOwnRoute(sql, routeId, sellerId);
      if (r === undefined) throw notFound('Route');
      if (accountId === sellerId) throw ruleError('The seller always has access to its own route');
      const [acct] = await sql`select 1 from accounts where id = ${accountId}`;
      if (acct === undefined) throw notFound('Account');
      await sql`insert into route_access (route_id, account_id) values (${routeId}, ${accountId}) on conflict do nothing`;
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

    endpointsFor: (routeIds: readonly string[]) => repo.endpointsFor(sql, routeIds),
    smsDeliveryFor: (routeIds: readonly string[]) => repo.smsDeliveryFor(sql, routeIds),
    conflictIfOwn(route: RouteRow, accountId: string) {
      if (route.sellerId === accountId) throw conflict('Own routes need no purchase: they are used as they are');
    },
  };
}

export type RoutesService = ReturnType<typeof createRoutesService>;
