/**
 * Route checks (spec "Route checks", resource "Route check"): one short real call per route to a
 * self-answering test line, a light `accepts` check where none covers the destination, ring-me to
 * the caller's own phone; billed per connected leg from test credit first, then balance.
 */
import { randomInt } from 'node:crypto';
import { Decimal } from 'decimal.js';
import type { Logger } from 'pino';
import type { Config } from '../../config/schema.js';
import type { Sql, TransactionSql } from '../../db/connection.js';
import { AppError, conflict, notFound, ruleError, validationError } from '../../http/errors.js';
import type { Ledger } from '../../ledger/index.js';
import type { Clock } from '../../platform/clock.js';
import { isE164 } from '../../platform/e164.js';
import { newId } from '../../platform/ids.js';
import type { TargetGuard } from '../../platform/outbound-guard.js';
import { buyerRate, type PrefixIndex } from '../../rating/index.js';
import type { LegOutcome } from '../../telephony/calls/sip-dialer.js';
import type { CallEngine, RouteEndpoint } from '../../telephony/engine.js';
import { orderEndpoints } from '../../telephony/sip/b2bua/index.js';
import { chargeLeg, markupPctOn, type SellPrice } from '../cdrs/index.js';
import { belowSellRate } from '../switch/customers/below-cost.js';
import type { SellRateLookup } from '../switch/customers/deck-cache.js';
import type { RouteRow } from '../marketplace/listings/repo.js';
import { platformFeeFrom, type RoutesService } from '../marketplace/listings/service.js';
import type { PurchasesService } from '../marketplace/purchases/service.js';
import type { ApplicationService } from '../application/service.js';
import type { ApiAdmission } from '../sip-trunks/service.js';
import type { SmsService } from '../sms/service.js';
import { chargeTestCreditFirst, requireFunded, type CheckPayer } from './billing.js';
import { createSmsCheck } from './sms-check.js';
import { dialOnce, type DialKind } from './dial.js';
import { destinationRefusal, lineTypeOf } from './destinations.js';
import type { CheckLimiter } from './limiter.js';
import { createRouteChecksRepo, type CheckRow, type LegRow, type NewLeg, type TestLineRow } from './repo.js';
import { verdictOf, type LegResult } from './verdict.js';

export interface Checker {
  accountId: string;
  parentId: string | null;
  mode: 'live' | 'test';
}

export interface RouteChecksDeps {
  sql: Sql;
  log: Logger;
  clock: Clock;
  config: Readonly<Config>;
  ledger: Ledger;
  routes: RoutesService;
  purchases: PurchasesService;
  /** The supplier guard: a check call goes only where a purchased call could. */
  guard: TargetGuard;
  /** The API calls' engine on the shared SIP plane; null while it is not listening. */
  calls: { engine(): CallEngine | null; takeLeg(callId: string): LegOutcome | undefined };
  /** The calls module's counters: a check call takes a slot of the route's capacity and CPS like any call. */
  admission: {
    admitApiCall(o: { payer: string; maxApiCalls: number; routeIds: readonly string[] }): Promise<ApiAdmission>;
    releaseApiCall(slots: string[]): Promise<void>;
  };
  limiter: CheckLimiter;
  /** The SMS plane's test send (exactly one listing, receipts back to the check). */
  sms: Pick<SmsService, 'sendTest' | 'onStoredTestReceipt'>;
  /** Route blends: never route-checked (spec "Errors"); their member routes are. */
  blends: { isBlend(routeId: string): Promise<boolean> };
  /** The reseller markup a sub-account's checks carry (its markup on the route first), as its calls and messages do. */
  application: Pick<ApplicationService, 'payerMarkups'>;
  /** The caller's Do-Not-Contact list: no test message goes to a number on it (spec "Route checks"). */
  dnc: { isBlocked(accountId: string, e164: string): Promise<boolean> };
  /** Switch customers' sell-rate decks: a customer's check call is billed at its sell rate (docs/switch.md). */
  sellRates?: SellRateLookup | undefined;
}

/** Spec "Limits", route checks: ring-me numbers. */
export const RING_ME_PER_NUMBER_HOUR = 3;
export const RING_ME_NUMBERS_PER_DAY = 3;

/** A check older than this that is still running was left by a daemon that stopped (checks take under a minute). */
const ABANDONED_AFTER_MS = 10 * 60_000;

const PASSED: ReadonlySet<LegResult> = new Set(['working', 'accepts', 'delivered']);
const FAILED: ReadonlySet<LegResult> = new Set(['no_capacity', 'not_delivered', 'false_answer', 'refused']);

/** Whether a verdict says the route works (listing health); null when it says nothing of the route. */
export const verdictCounts = (r: LegResult): boolean | null => (PASSED.has(r) ? true : FAILED.has(r) ? false : null);
const OPEN: ReadonlySet<LegResult> = new Set(['pending', 'checking']);

interface PlannedLeg extends NewLeg {
  kind: DialKind | null;
  target: string | null;
  endpoint: RouteEndpoint | null;
  price: Decimal;
  sellerRate: Decimal;
  increment: ReturnType<PrefixIndex['row']>['increment'] | null;
  sellerId: string;
  /** A Switch customer's sell rate for the target: billed instead of price plus markup. */
  sell?: SellPrice | undefined;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** Listing names as sellers type them may carry their own name or contact details: shown without them. */
export function cleanRouteName(name: string): string {
  return (
    name
      .replace(/\S+@\S+/g, '')
      .replace(/https?:\/\/\S+|www\.\S+/gi, '')
      .replace(/\+?\d[\d\s().-]{6,}\d/g, '')
      .replace(/\s{2,}/g, ' ')
      .trim() || 'Route'
  );
}

export function createRouteChecksService(deps: RouteChecksDeps) {
  const { sql, log, clock, config, ledger, routes } = deps;
  const repo = createRouteChecksRepo(sql);
  const fee = platformFeeFrom(config);
  const running = new Set<Promise<unknown>>();
  const shutdown = new AbortController();
  let stopping = false;

  const payerOf = async (accountId: string, routeId: string): Promise<CheckPayer> => {
    const m = await deps.application.payerMarkups(accountId);
    return { accountId, operatorId: m.operatorId, markupPct: markupPctOn(m, routeId) };
  };

  const blendRefused = (routeId: string) =>
    ruleError(`Route ${routeId} is a route blend: blends cannot be route-checked; check its member routes`);
  const digitsOf = (n: string) => n.replace(/[\s\-().]/g, '').replace(/^\+/, '');

  async function visible(routeId: string, accountId: string): Promise<RouteRow> {
    const r = await routes.visibleRoute(routeId, accountId);
    if (r === undefined || r.status === 'deleted') throw notFound('Route');
    if (await deps.blends.isBlend(routeId)) throw blendRefused(routeId);
    return r;
  }

  /** Test lines of the destination the route's deck covers, the same line type as the number first. */
  function linesFor(all: readonly TestLineRow[], route: RouteRow, index: PrefixIndex, narrow: string | null) {
    const covered = all.filter(
      (l) =>
        (narrow !== null ? l.number.startsWith(narrow) : route.country === null || l.country === route.country) &&
        index.lookup(l.number) !== undefined,
    );
    const wanted = narrow !== null && narrow.length >= 7 ? lineTypeOf(narrow) : null;
    const same = wanted ? covered.filter((l) => l.lineType === wanted) : [];
    return same.length > 0 ? same : covered;
  }

  async function endpointOf(routeId: string): Promise<RouteEndpoint | null> {
    const rows = (await routes.endpointsFor([routeId])).filter(
      (e) => e.routeId === routeId && (e.transport === 'udp' || e.transport === 'tcp'),
    );
    const checked = [];
    for (const e of rows) {
      try {
        checked.push({ ...e, host: (await deps.guard.resolve(e.host, e.port)).address });
      } catch {
        continue;
      }
    }
    const [first] = orderEndpoints(
      checked.map((e) => ({
        host: e.host,
        port: e.port,
        transport: e.transport as 'udp' | 'tcp',
        priority: e.priority,
        weight: e.weight,
        ...(e.techPrefix ? { techPrefix: e.techPrefix } : {}),
        ...(e.username ? { username: e.username } : {}),
        ...(e.password ? { password: e.password } : {}),
      })),
    );
    if (!first) return null;
    return {
      host: first.host,
      port: first.port,
      transport: first.transport === 'tcp' ? 'tcp' : 'udp',
      ...(first.techPrefix ? { techPrefix: first.techPrefix } : {}),
      ...(first.username ? { username: first.username } : {}),
      ...(first.password ? { password: first.password } : {}),
    };
  }

  async function plan(
    who: Checker,
    routeIds: readonly string[],
    mode: 'network' | 'ring_me',
    number: string | null,
  ): Promise<PlannedLeg[]> {
    await routes.decks.ensureLoaded();
    const lines = mode === 'network' ? await repo.testLines() : [];
    const out: PlannedLeg[] = [];
    for (const [position, routeId] of routeIds.entries()) {
      const route = await visible(routeId, who.accountId);
      if (route.type !== 'voice')
        throw ruleError(`Route ${routeId} is an SMS listing: check it with POST /routes/check/sms`);
      if (route.status !== 'active') throw ruleError(`Route ${routeId} is not active`);
      const index = routes.decks.registry.get(routeId);
      if (index === undefined) throw ruleError(`Route ${routeId} has no rates to check against`);
      const base = {
        position,
        routeId,
        routeName: cleanRouteName(route.name),
        country: route.country,
        ownRoute: route.sellerId === who.accountId || (who.parentId !== null && route.sellerId === who.parentId),
        sellerId: route.sellerId,
        price: new Decimal(0),
        sellerRate: new Decimal(0),
        increment: null,
        endpoint: null,
      };
      let kind: DialKind | null;
      let target: string | null = null;
      let testLineId: string | null = null;
      let lineType: 'fixed' | 'mobile' | null = null;
      if (mode === 'ring_me') {
        if (index.lookup(number!) === undefined) throw ruleError(`Route ${routeId} does not serve this number`);
        kind = 'ring_me';
        target = number!;
        lineType = lineTypeOf(number!);
      } else {
        const candidates = linesFor(lines, route, index, number);
        if (candidates.length > 0) {
          const line = candidates[randomInt(candidates.length)]!;
          kind = 'full';
          target = line.number;
          testLineId = line.id;
          lineType = line.lineType;
        } else if (number !== null && number.length >= 7 && index.lookup(number) !== undefined) {
          kind = 'light';
          target = number;
          lineType = lineTypeOf(number);
        } else {
          kind = null;
        }
      }
      if (kind === null || target === null) {
        out.push({
          ...base,
          kind: null,
          target: null,
          result: 'inconclusive',
          message:
            'No test line covers this destination and no full number was given; check it with mode ring_me on your own phone.',
          checkType: null,
        });
        continue;
      }
      const m = index.lookup(target)!;
      const price = buyerRate(m.rateDecimal, fee, 'min');
      // A billed leg of a Switch customer: its sell rate, and never a route its operator would pay for.
      const sell =
        kind !== 'light' && !base.ownRoute && who.parentId && deps.sellRates
          ? await deps.sellRates.match(who.accountId, 'voice', target)
          : null;
      if (sell && price.gt(sell.rate)) throw belowSellRate();
      const endpoint = who.mode === 'test' ? null : await endpointOf(routeId);
      const planned: PlannedLeg = {
        ...base,
        kind,
        target,
        endpoint,
        price,
        sellerRate: m.rateDecimal,
        increment: m.increment,
        ...(sell ? { sell: { rate: sell.rate, increment: sell.increment } } : {}),
        result: 'pending',
        message: 'Waiting to be checked.',
        checkType: kind,
        destination: m.destination,
        lineType,
        ...(testLineId ? { testLineId } : {}),
      };
      if (who.mode !== 'test' && endpoint === null) {
        planned.kind = null;
        planned.result = 'no_capacity';
        planned.message = 'The route has no reachable SIP endpoint.';
        planned.completedAt = clock.now();
      }
      out.push(planned);
    }
    return out;
  }

  function legView(l: LegRow) {
    return {
      position: l.position,
      role: l.position === 0 ? ('primary' as const) : ('backup' as const),
      routeId: l.routeId,
      routeName: l.routeName,
      country: l.country ?? '',
      ownRoute: l.ownRoute,
      result: l.result,
      message: l.message,
      checkType: l.checkType,
      destination: l.destination,
      lineType: l.lineType,
      rang: l.rang,
      answered: l.answered,
      pddMs: l.pddMs,
      sipCode: l.sipCode,
      billableSeconds: l.billableSeconds,
      cost: new Decimal(l.cost).toFixed(6),
      paidFrom: l.paidFrom,
      answerMs: l.answerMs,
      completedAt: iso(l.completedAt),
      messageRef: l.messageRef,
      sender: l.sender,
      errorCode: l.errorCode,
      carrierStatus: l.carrierStatus,
      carrierError: l.carrierError,
      acceptedAt: iso(l.acceptedAt),
      receiptAt: iso(l.receiptAt),
      routeReturnsReceipts: l.routeReturnsReceipts,
    };
  }

  function checkView(c: CheckRow, legs: LegRow[]) {
    return {
      id: c.id,
      status: c.status,
      mode: c.mode,
      simulated: c.simulated,
      number: c.number === null ? null : /^\d+$/.test(c.number) ? `+${c.number}` : c.number,
      createdAt: c.createdAt.toISOString(),
      completedAt: iso(c.completedAt),
      // The legs' sum, not the check row's copy: the two are read by separate statements, and a
      // receipt refunding a test message between them made the total disagree with its leg (the
      // test SMS test's intermittent failure under load).
      totalCost: legs.reduce((sum, l) => sum.plus(l.cost), new Decimal(0)).toFixed(6),
      routes: legs.map(legView),
      working: legs.filter((l) => PASSED.has(l.result)).map((l) => l.routeId),
    };
  }

  /** A connected leg's charge (rule 4): the route rate plus fee for its billable seconds; own listings free. */
  async function chargeLegOf(tx: TransactionSql, who: Checker, checkId: string, leg: PlannedLeg, seconds: number) {
    const c = chargeLeg(
      { price: leg.price, sellerRate: leg.sellerRate, increment: leg.increment!, sell: leg.sell },
      seconds,
      new Decimal(0),
    );
    const billed = leg.ownRoute
      ? { cost: '0.000000', paidFrom: null }
      : await chargeTestCreditFirst({ ledger, log }, tx, {
          payer: await payerOf(who.accountId, leg.routeId),
          key: `routecheck:${checkId}:${leg.position}`,
          // The route's own price (seller and fee); a sell rate's margin over it is the operator's.
          total: new Decimal(c.seller).plus(c.fee),
          seller: new Decimal(c.seller),
          ...(leg.sell ? { markup: new Decimal(c.markup) } : {}),
          sellerId: leg.sellerId,
          reference: 'Route check call',
          checkId,
        });
    return { billableSeconds: c.billableSeconds, cost: billed.cost, paidFrom: billed.paidFrom };
  }

  /** What a check costs when every billable leg answered and held `hold_ms`, at the payer's price. */
  async function heldCost(who: Checker, legs: readonly PlannedLeg[]): Promise<Decimal> {
    const markups = await deps.application.payerMarkups(who.accountId);
    const heldSeconds = Math.ceil(config.route_checks.hold_ms / 1000);
    return legs
      .filter((l) => (l.kind === 'full' || l.kind === 'ring_me') && !l.ownRoute)
      .reduce((sum, l) => {
        const route = { price: l.price, sellerRate: l.sellerRate, increment: l.increment!, sell: l.sell };
        return sum.plus(chargeLeg(route, heldSeconds, markupPctOn(markups, l.routeId)).total);
      }, new Decimal(0));
  }

  async function finishLeg(checkId: string, update: Parameters<typeof repo.updateLeg>[3], position: number) {
    await sql.begin(async (tx) => {
      await repo.updateLeg(tx, checkId, position, update);
      await repo.finishIfDone(tx, checkId, clock.now());
    });
  }

  async function runLeg(who: Checker, checkId: string, leg: PlannedLeg): Promise<void> {
    const engine = deps.calls.engine();
    if (!engine) {
      await finishLeg(
        checkId,
        {
          result: 'inconclusive',
          message: 'The check was interrupted: the voice plane is not running.',
          completedAt: clock.now(),
        },
        leg.position,
      );
      return;
    }
    let slots: string[];
    try {
      const admitted = await deps.admission.admitApiCall({
        payer: who.accountId,
        maxApiCalls: config.voice.max_api_calls_per_account,
        routeIds: [leg.routeId],
      });
      if (!admitted.ok) {
        const route = admitted.cause === 'capacity' || admitted.cause === 'cps';
        await finishLeg(
          checkId,
          {
            result: route ? 'no_capacity' : 'inconclusive',
            message: route
              ? 'The route is carrying its maximum calls right now.'
              : 'Your account is at its limit of calls in progress; nothing is counted against the route.',
            completedAt: clock.now(),
          },
          leg.position,
        );
        return;
      }
      slots = admitted.slots;
    } catch (err) {
      log.warn({ err, checkId }, 'route check: call limiter unreachable');
      await finishLeg(
        checkId,
        {
          result: 'inconclusive',
          message: 'The check was interrupted: the call limiter cannot be reached.',
          completedAt: clock.now(),
        },
        leg.position,
      );
      return;
    }
    try {
      await repo.updateLeg(sql, checkId, leg.position, { result: 'checking', message: 'Calling.' });
      const o = await dialOnce({
        engine,
        takeLeg: (id) => deps.calls.takeLeg(id),
        legId: `rc-${checkId}.${leg.position}`,
        to: leg.target!,
        from: config.route_checks.caller_id || leg.target!,
        endpoint: leg.endpoint!,
        kind: leg.kind!,
        holdMs: config.route_checks.hold_ms,
        ringTimeoutMs: config.route_checks.ring_timeout_ms,
        ringMeMs: config.route_checks.ring_me_ring_ms,
        now: () => clock.now(),
        signal: shutdown.signal,
      });
      const v = verdictOf(leg.kind!, o);
      const pdd = o.ringMs ?? o.answerMs;
      await sql.begin(async (tx) => {
        const billed = v.billable ? await chargeLegOf(tx, who, checkId, leg, o.connectedSeconds) : null;
        const passed = verdictCounts(v.result);
        if (passed !== null && !leg.ownRoute) {
          await routes.recordCheckResult(tx, { routeId: leg.routeId, kind: 'call', passed });
        }
        await repo.updateLeg(tx, checkId, leg.position, {
          result: v.result,
          message: v.message,
          rang: o.rang,
          answered: o.answered,
          pddMs: pdd,
          sipCode: o.sipStatus,
          answerMs: o.answerMs,
          billableSeconds: billed?.billableSeconds ?? 0,
          cost: billed?.cost ?? '0.000000',
          paidFrom: billed?.paidFrom ?? null,
          completedAt: o.endedAt,
        });
        await repo.finishIfDone(tx, checkId, clock.now());
      });
    } finally {
      await deps.admission.releaseApiCall(slots).catch((err: unknown) => log.warn({ err }, 'check slots not released'));
    }
  }

  async function run(who: Checker, checkId: string, legs: PlannedLeg[]) {
    await Promise.all(
      legs
        .filter((l) => l.kind !== null && l.result === 'pending')
        .map((l) =>
          runLeg(who, checkId, l).catch(async (err: unknown) => {
            log.error({ err, checkId, position: l.position }, 'route check leg failed');
            await finishLeg(
              checkId,
              { result: 'inconclusive', message: 'The check was interrupted.', completedAt: clock.now() },
              l.position,
            ).catch(() => undefined);
          }),
        ),
    );
  }

  async function get(accountId: string, id: string) {
    const c = await repo.check(id);
    if (!c || c.accountId !== accountId) throw notFound('Route check');
    return checkView(c, await repo.legs([id]));
  }

  const smsCheck = createSmsCheck({
    sql,
    log,
    clock,
    config,
    ledger,
    routes,
    repo,
    sms: deps.sms,
    dnc: deps.dnc,
    payerOf,
    visible: async (routeId, accountId) => {
      if (await deps.blends.isBlend(routeId)) throw blendRefused(routeId);
      return routes.visibleRoute(routeId, accountId);
    },
    cleanName: cleanRouteName,
    track: (p) => {
      running.add(p);
      void p.finally(() => running.delete(p));
    },
  });

  return {
    repo,

    /** POST /routes/check/sms. */
    startSms: (who: Checker, body: { routeId: string; number: string }) => smsCheck.start(who, body),

    /**
     * A route the account may use, as a check call sees it: the listing (404 when not visible),
     * whether its deck covers a number, and the endpoint a call would go to. Caller-ID tests call through it.
     */
    async target(accountId: string, routeId: string) {
      await routes.decks.ensureLoaded();
      const route = await visible(routeId, accountId);
      return {
        route,
        name: cleanRouteName(route.name),
        covers: (digits: string): boolean => routes.decks.registry.get(routeId)?.lookup(digits) !== undefined,
        destination: (digits: string): string | null =>
          routes.decks.registry.get(routeId)?.lookup(digits)?.destination ?? null,
        endpoint: (): Promise<RouteEndpoint | null> => endpointOf(routeId),
      };
    },

    /** POST /routes/check. */
    async start(
      who: Checker,
      body: { routeIds: string[]; number?: string | undefined; mode?: 'network' | 'ring_me' | undefined },
    ): Promise<{ checkId: string }> {
      if (stopping) throw new AppError('SERVICE_UNAVAILABLE', 'Route checks are paused while the service restarts');
      const mode = body.mode ?? 'network';
      if (new Set(body.routeIds).size !== body.routeIds.length) {
        throw validationError([{ path: 'routeIds', message: 'a route appears twice' }]);
      }
      let number: string | null = null;
      if (body.number !== undefined && body.number.trim() !== '') {
        number = digitsOf(body.number);
        if (!/^\d{1,15}$/.test(number)) {
          throw validationError([{ path: 'number', message: 'must be a dial code or an E.164 number' }]);
        }
      }
      if (mode === 'ring_me') {
        if (number === null || !isE164(number)) {
          throw validationError([{ path: 'number', message: 'ring_me needs your own phone number in E.164' }]);
        }
        const refused = destinationRefusal(number);
        if (refused) throw ruleError(refused);
      }
      const test = who.mode === 'test';
      const legs = await plan(who, body.routeIds, mode, number);
      if (!test) await requireFunded(ledger, who.accountId, await heldCost(who, legs), 'this check');
      await deps.limiter.take(who.accountId);

      const id = newId();
      const now = clock.now();
      if (test) {
        for (const l of legs) {
          if (l.kind === null) continue;
          l.result = l.kind === 'light' ? 'accepts' : 'working';
          l.message = 'Simulated (test key): no call was placed and nothing was charged.';
          l.checkType = 'simulated';
          l.completedAt = now;
          l.kind = null;
        }
      }
      const rows: NewLeg[] = legs.map(
        ({
          kind: _k,
          target: _t,
          endpoint: _e,
          price: _p,
          sellerRate: _s,
          increment: _i,
          sellerId: _x,
          sell: _y,
          ...row
        }) => row,
      );
      const open = rows.some((l) => OPEN.has(l.result));
      await sql.begin(async (tx) => {
        if (mode === 'ring_me' && !test) {
          await repo.lockNumber(tx, number!);
          const counts = await repo.ringMeCounts(tx, who.accountId, number!, now);
          if (counts.perNumber >= RING_ME_PER_NUMBER_HOUR) {
            throw new AppError(
              'RATE_LIMITED',
              'This number has been rung by checks 3 times in the last hour',
              { limit: 'ring_me_number' },
              { 'retry-after': '3600' },
            );
          }
          if (!counts.rungToday && counts.numbersToday >= RING_ME_NUMBERS_PER_DAY) {
            throw new AppError(
              'RATE_LIMITED',
              'Your account has rung 3 different numbers with checks today',
              { limit: 'ring_me_numbers' },
              { 'retry-after': '86400' },
            );
          }
        }
        await repo.insertCheck(
          tx,
          {
            id,
            accountId: who.accountId,
            mode,
            status: open ? 'running' : 'done',
            simulated: test,
            number,
            createdAt: now,
          },
          rows,
        );
        if (!open) await tx`update route_checks set completed_at = ${now} where id = ${id}`;
      });
      if (open) {
        const p = run(who, id, legs).finally(() => running.delete(p));
        running.add(p);
      }
      return { checkId: id };
    },

    get,

    /** GET /routes/checks: newest first, test SMS included. */
    async list(accountId: string, q: { cursor?: string | undefined; mode?: string | undefined; limit: number }) {
      const checks = await repo.list(accountId, { ...q, limit: q.limit + 1 });
      const legs = checks.length ? await repo.legs(checks.map((c) => c.id)) : [];
      return checks.map((c) =>
        checkView(
          c,
          legs.filter((l) => l.checkId === c.id),
        ),
      );
    },

    /** GET /routes/check/coverage: whether a registered test line exists for each route's destination. */
    async coverage(accountId: string, routeIds: readonly string[], number: string | null) {
      await routes.decks.ensureLoaded();
      const lines = await repo.testLines();
      const narrow = number === null ? null : digitsOf(number);
      if (narrow !== null && !/^\d{1,15}$/.test(narrow)) {
        throw validationError([{ path: 'number', message: 'must be a dial code or an E.164 number' }]);
      }
      const out = [];
      for (const routeId of routeIds) {
        const route = await visible(routeId, accountId);
        const index = routes.decks.registry.get(routeId);
        out.push({
          routeId,
          testLine: route.type === 'voice' && index !== undefined && linesFor(lines, route, index, narrow).length > 0,
        });
      }
      return out;
    },

    /**
     * POST /routes/check/{id}/purchase: buys the routes that passed (own routes need no purchase)
     * and puts them at the top of the routing order, primary first.
     */
    async purchase(accountId: string, id: string) {
      const check = await get(accountId, id);
      if (check.status !== 'done') throw conflict('The check is still running');
      if (check.simulated) throw ruleError('A simulated check cannot be used to buy routes');
      const passed = check.routes.filter((r) => PASSED.has(r.result));
      if (passed.length === 0) throw ruleError('No route passed this check');
      const purchased = [];
      for (const r of passed) {
        if (r.ownRoute) continue;
        const { purchase, created } = await deps.purchases.buy(accountId, r.routeId);
        purchased.push({ routeId: r.routeId, purchaseId: purchase.id, created });
      }
      const top = passed.map((r) => r.routeId);
      const current = (await deps.purchases.routingOrder(accountId)).map((o) => o.routeId);
      const order = await deps.purchases.setRoutingOrder(accountId, [
        ...top,
        ...current.filter((r) => !top.includes(r)),
      ]);
      return { checkId: id, purchased, routingOrder: order };
    },

    /** GET /routes/check/limits: what the account has left under the route-check limits. */
    async limits(accountId: string) {
      const windows = await deps.limiter.usage(accountId);
      const [row] = await sql<{ numbers: string }[]>`
        select count(distinct number) as numbers from route_checks where mode = 'ring_me' and account_id = ${accountId}
          and not simulated and created_at > ${clock.now()}::timestamptz - interval '1 day'`;
      return {
        checks: windows,
        ringMe: {
          perNumberPerHour: RING_ME_PER_NUMBER_HOUR,
          numbersPerDay: RING_ME_NUMBERS_PER_DAY,
          numbersUsedToday: Number(row!.numbers),
        },
      };
    },

    /** Operator: test lines. */
    async addTestLine(input: { number: string; country: string; lineType: string; label?: string | null }) {
      const number = digitsOf(input.number);
      const problems = [];
      if (!isE164(number)) problems.push({ path: 'number', message: 'must be an E.164 number' });
      if (!/^[A-Z]{2}$/.test(input.country)) problems.push({ path: 'country', message: 'must be ISO 3166 alpha-2' });
      if (input.lineType !== 'fixed' && input.lineType !== 'mobile') {
        problems.push({ path: 'lineType', message: 'must be fixed or mobile' });
      }
      if (problems.length) throw validationError(problems);
      const existing = (await repo.testLines()).find((l) => l.number === number);
      if (existing) throw conflict('A test line with this number exists');
      return repo.addTestLine(
        {
          id: newId(),
          number,
          country: input.country,
          lineType: input.lineType as 'fixed' | 'mobile',
          label: input.label ?? null,
        },
        clock.now(),
      );
    },
    testLines: () => repo.testLines(),
    async removeTestLine(idOrNumber: string) {
      const row = await repo.removeTestLine(idOrNumber);
      if (!row) throw notFound('Test line');
      return row;
    },

    /** Closes checks a stopped daemon left running (module start). */
    closeAbandoned: () => repo.closeAbandoned(sql, new Date(clock.now().getTime() - ABANDONED_AFTER_MS), clock.now()),

    /** Ends the check calls in progress and waits for their verdicts and charges. */
    async stop() {
      stopping = true;
      shutdown.abort();
      await Promise.allSettled([...running]);
    },
  };
}

export type RouteChecksService = ReturnType<typeof createRouteChecksService>;
export type TestLine = TestLineRow;
