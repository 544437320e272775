/**
 * Caller-ID tests (spec "CLI tests", resource "Caller-ID test"): the exchange calls a test handset
 * through the route with the requested caller ID and records what arrived. Single tests with a
 * schedule and recurrence, route liveness batches; 0.50 per test only when the call rang.
 */
import { Decimal } from 'decimal.js';
import { getCountryCallingCode, type CountryCode } from 'libphonenumber-js/max';
import type { Logger } from 'pino';
import type { Config } from '../../config/schema.js';
import type { Sql } from '../../db/connection.js';
import { AppError, conflict, notFound, ruleError, validationError } from '../../http/errors.js';
import type { Ledger } from '../../ledger/index.js';
import { toMoney } from '../../rating/index.js';
import type { ApplicationService } from '../application/service.js';
import type { RoutesService } from '../marketplace/listings/service.js';
import { chargeMarkup, markupOn, markupPctOn, type PayerMarkups } from '../cdrs/index.js';
import type { Clock } from '../../platform/clock.js';
import { isE164 } from '../../platform/e164.js';
import { newId } from '../../platform/ids.js';
import type { LegOutcome } from '../../telephony/calls/sip-dialer.js';
import type { CallEngine } from '../../telephony/engine.js';
import type { RouteChecksService } from '../route-checks/service.js';
import type { ApiAdmission } from '../sip-trunks/service.js';
import type { CliObserver } from './observer.js';
import { createCliTestsRepo, FINAL, type BatchRow, type HandsetRow, type NewTest, type TestRow } from './repo.js';
import { countryName as englishName } from '../../platform/country-names.js';

export interface Tester {
  accountId: string;
  mode: 'live' | 'test';
}

export interface CliTestsDeps {
  sql: Sql;
  log: Logger;
  clock: Clock;
  config: Readonly<Config>;
  ledger: Ledger;
  routeChecks: Pick<RouteChecksService, 'target'>;
  /** Route blends: a blend's owner tests it member by member. */
  blends: {
    get(viewerId: string, id: string): Promise<{ own: boolean; members: { routeId: string | null }[] }>;
  };
  calls: { engine(): CallEngine | null; takeLeg(callId: string): LegOutcome | undefined };
  /** The calls module's counters (route capacity and CPS, the account's API calls). */
  admission: {
    admitApiCall(o: { payer: string; maxApiCalls: number; routeIds: readonly string[] }): Promise<ApiAdmission>;
    releaseApiCall(slots: string[]): Promise<void>;
  };
  observer: CliObserver;
  /** The listing health the marketplace keeps: a test that rang (or was refused) is counted there. */
  checkResults: Pick<RoutesService, 'recordCheckResult'>;
  /** The reseller markup a sub-account's tests carry (its markup on the route first). */
  application: Pick<ApplicationService, 'payerMarkups'>;
}

export const MIN_BATCH_ROUTES = 2;
/** Setup and ringing allowance of one test call before it is given up on. */
const CALL_TIMEOUT_MS = 30_000;

const countryName = (iso: string): string => englishName(iso) ?? iso;
const digits = (n: string) =>
  n
    .replace(/[\s\-().]/g, '')
    .replace(/^\+/, '')
    .replace(/^00/, '');
const iso = (d: Date | null) => (d ? d.toISOString() : null);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function createCliTestsService(deps: CliTestsDeps) {
  const { sql, log, clock, config, ledger } = deps;
  const repo = createCliTestsRepo(sql);
  const cfg = config.cli_tests;
  const costPerTest = new Decimal(cfg.cost_per_test);
  /** One call at a time per handset: the observer waits for one arrival per number. */
  const handsetChains = new Map<string, Promise<unknown>>();
  const running = new Set<Promise<unknown>>();
  const batchRuns = new Set<Promise<unknown>>();
  let stopping = false;

  /** A test country given as ISO alpha-2 or as an English country name. */
  function countryCode(input: string): string | null {
    const t = input.trim();
    if (/^[A-Za-z]{2}$/.test(t)) return t.toUpperCase();
    for (const code of countryCodes()) if (countryName(code).toLowerCase() === t.toLowerCase()) return code;
    return null;
  }

  const perTestSeconds = () => Math.ceil((cfg.ring_ms + 5000) / 1000) + cfg.gap_seconds;

  function view(t: TestRow, routeView?: { country: string; destinationName: string }) {
    return {
      id: t.id,
      routeId: t.routeId,
      blendRouteId: t.blendRouteId,
      displayCli: t.displayCli,
      testCountry: t.testCountry,
      testNumber: t.testNumber === null ? null : `+${t.testNumber}`,
      status: t.status,
      recurrence: t.recurrence,
      scheduledAt: iso(t.scheduledAt),
      reportedCli: t.reportedCli,
      displayedCorrectly: t.displayedCorrectly,
      resultNotes: t.resultNotes,
      dispatchedAt: iso(t.dispatchedAt),
      completedAt: iso(t.completedAt),
      createdAt: t.createdAt.toISOString(),
      rang: t.rang,
      ringMs: t.ringMs,
      answerMs: t.answerMs,
      sipCode: t.sipCode,
      failureCause: t.failureCause,
      cost: new Decimal(t.cost).toFixed(6),
      batchId: t.batchId,
      ...(routeView ? { route: routeView } : {}),
    };
  }

  /** One test on `routeId` at the payer's price: a sub-account pays its reseller markup on that route on top. */
  function priceOn(markups: PayerMarkups, routeId: string | null) {
    const markup = markups.operatorId ? markupOn(costPerTest, markupPctOn(markups, routeId)) : new Decimal(0);
    return { markup, total: costPerTest.plus(markup) };
  }

  /** `GET /cli-tests/quota`: `costPerTest` is what the caller pays (on `routeId` when given). */
  async function quota(accountId: string, routeId: string | null = null) {
    const [used, markups] = await Promise.all([
      repo.usedThisHour(accountId, clock.now()),
      deps.application.payerMarkups(accountId),
    ]);
    return {
      costPerTest: priceOn(markups, routeId).total.toNumber(),
      usedThisHour: used,
      limitPerHour: cfg.hourly_cap,
      remaining: Math.max(0, cfg.hourly_cap - used),
    };
  }

  /** Quota and money for a test on each of `routeIds`, refused before anything is written. */
  async function admit(who: Tester, routeIds: readonly (string | null)[]) {
    const n = routeIds.length;
    const q = await quota(who.accountId);
    if (q.remaining < n) {
      throw new AppError(
        'RATE_LIMITED',
        `Caller-ID test quota reached: ${q.limitPerHour} tests an hour (${q.remaining} left)`,
        { limit: 'cli_tests_hourly' },
        { 'retry-after': '3600' },
      );
    }
    if (who.mode === 'live') {
      const [b, markups] = await Promise.all([
        ledger.balanceOf(who.accountId),
        deps.application.payerMarkups(who.accountId),
      ]);
      const most = routeIds.reduce((sum, r) => sum.plus(priceOn(markups, r).total), new Decimal(0));
      if (new Decimal(b.available).lt(most)) {
        throw new AppError(
          'VALIDATION_ERROR',
          `Insufficient balance: ${n} caller-ID test(s) may cost ${most.toFixed(6)}`,
        );
      }
    }
  }

  /** Runs `fn` when the handset is free, after the gap the previous call on it left. */
  function onHandset<T>(handsetId: string, fn: () => Promise<T>): Promise<T> {
    const prev = handsetChains.get(handsetId) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.then(
      () => sleep(cfg.gap_seconds * 1000),
      () => sleep(cfg.gap_seconds * 1000),
    );
    handsetChains.set(handsetId, tail);
    void tail.then(() => {
      if (handsetChains.get(handsetId) === tail) handsetChains.delete(handsetId);
    });
    return next;
  }

  /** `checkResult`: whether the test says the route works, counted in its listing health; null when it says nothing. */
  async function finish(
    t: TestRow,
    update: Parameters<typeof repo.updateTest>[2],
    charge: boolean,
    checkResult: boolean | null = null,
  ) {
    const now = clock.now();
    await sql.begin(async (tx) => {
      if (checkResult !== null && t.routeId !== null && !t.simulated) {
        await deps.checkResults.recordCheckResult(tx, { routeId: t.routeId, kind: 'cli', passed: checkResult });
      }
      let cost = '0.000000';
      if (charge && !t.simulated) {
        const context = { reference: 'Caller-ID test', relatedEntityType: 'cli_test', relatedEntityId: t.id };
        await ledger.charge(
          { postingKey: `clitest:${t.id}:charge`, accountId: t.accountId, amount: costPerTest.toFixed(6), ...context },
          tx,
        );
        // A sub-account's test carries its reseller's markup on the route, as its calls and messages do.
        const markups = await deps.application.payerMarkups(t.accountId);
        const price = priceOn(markups, t.routeId);
        await chargeMarkup(ledger, tx, {
          key: `clitest:${t.id}`,
          payer: t.accountId,
          operatorId: markups.operatorId,
          markup: toMoney(price.markup),
          context,
        });
        cost = toMoney(price.total);
      }
      await repo.updateTest(tx, t.id, { ...update, cost, completedAt: now });
      // A recurring test schedules its next run when this one ends (a cancelled one stops the series).
      if (t.recurrence !== 'none' && update.status !== 'cancelled') {
        const from = t.scheduledAt ?? t.createdAt;
        const days = t.recurrence === 'daily' ? 1 : 7;
        let next = new Date(from.getTime() + days * 86_400_000);
        while (next <= now) next = new Date(next.getTime() + days * 86_400_000);
        await repo.insertTests(tx, [
          {
            id: newId(),
            accountId: t.accountId,
            batchId: null,
            routeId: t.routeId,
            blendRouteId: t.blendRouteId,
            displayCli: t.displayCli,
            testCountry: t.testCountry,
            testNumber: t.testNumber,
            status: 'scheduled',
            recurrence: t.recurrence,
            scheduledAt: next,
            simulated: t.simulated,
            createdAt: now,
          },
        ]);
      }
      if (t.batchId) await repo.finishBatchIfDone(tx, t.batchId, now);
    });
  }

  /** Chooses the handset: the one asked for, else the country's handsets in turn. */
  async function handsetFor(t: TestRow): Promise<HandsetRow | null> {
    const all = await repo.handsets();
    if (t.testNumber) return all.find((h) => h.number === t.testNumber) ?? null;
    const country = countryCode(t.testCountry);
    const inCountry = all.filter((h) => h.country === country);
    if (inCountry.length === 0) return null;
    return (
      inCountry.find((h) => !handsetChains.has(h.id)) ??
      inCountry[Number(BigInt(`0x${t.id.slice(-8)}`) % BigInt(inCountry.length))]!
    );
  }

  async function dispatch(id: string): Promise<void> {
    const t = await repo.claim(id, clock.now());
    if (!t) return;
    try {
      await dispatchClaimed(t);
    } catch (err) {
      log.error({ err, testId: id }, 'caller-ID test failed');
      await finish(
        t,
        { status: 'failed', failureCause: 'INTERNAL', resultNotes: 'The test was interrupted' },
        false,
      ).catch(() => undefined);
    }
  }

  async function dispatchClaimed(t: TestRow): Promise<void> {
    const handset = await handsetFor(t);
    if (!handset) {
      await finish(t, { status: 'not_tested', resultNotes: `No test handset online in ${t.testCountry}` }, false);
      return;
    }
    const target = await deps.routeChecks.target(t.accountId, t.routeId!);
    if (target.route.type !== 'voice' || !target.covers(handset.number)) {
      await finish(
        t,
        { status: 'not_tested', testNumber: handset.number, resultNotes: 'The route does not cover the test handset' },
        false,
      );
      return;
    }
    if (t.simulated) {
      await finish(
        t,
        {
          status: 'completed',
          testNumber: handset.number,
          reportedCli: t.displayCli,
          displayedCorrectly: true,
          resultNotes: 'Simulated (test key): no call was placed and nothing was charged',
        },
        false,
      );
      return;
    }
    const engine = deps.calls.engine();
    const endpoint = await target.endpoint();
    if (!engine || !endpoint) {
      await finish(
        t,
        {
          status: 'failed',
          testNumber: handset.number,
          failureCause: engine ? 'NO_ENDPOINT' : 'VOICE_PLANE_DOWN',
          resultNotes: engine ? 'The route has no reachable SIP endpoint' : 'The voice plane is not running',
        },
        false,
      );
      return;
    }
    await onHandset(handset.id, async () => {
      // A test call takes a slot of the route's capacity and CPS, and of the account's API calls, like any call.
      let slots: string[];
      try {
        const admitted = await deps.admission.admitApiCall({
          payer: t.accountId,
          maxApiCalls: config.voice.max_api_calls_per_account,
          routeIds: [t.routeId!],
        });
        if (!admitted.ok) {
          const route = admitted.cause === 'capacity' || admitted.cause === 'cps';
          await finish(
            t,
            {
              status: 'failed',
              testNumber: handset.number,
              failureCause: route ? 'ROUTE_AT_CAPACITY' : 'ACCOUNT_CALL_LIMIT',
              resultNotes: route
                ? 'The route is carrying its maximum calls right now'
                : 'Your account is at its limit of calls in progress',
            },
            false,
          );
          return;
        }
        slots = admitted.slots;
      } catch (err) {
        log.warn({ err, testId: t.id }, 'caller-ID test: call limiter unreachable');
        await finish(
          t,
          {
            status: 'failed',
            testNumber: handset.number,
            failureCause: 'LIMITER_UNAVAILABLE',
            resultNotes: 'The call limiter cannot be reached',
          },
          false,
        );
        return;
      }
      try {
        await repo.updateTest(sql, t.id, { status: 'in_progress', testNumber: handset.number, handsetId: handset.id });
        let started = clock.now().getTime();
        const arrival = deps.observer.expect(handset.number, CALL_TIMEOUT_MS);
        const legId = `cli-${t.id}`;
        const call = engine.originate({
          callId: legId,
          to: handset.number,
          from: digits(t.displayCli),
          endpoint,
          maxDurationSec: 10,
        });
        let ringMs: number | null = null;
        let answerMs: number | null = null;
        call.on('dialling', (at) => {
          started = at.getTime();
        });
        call.on('ringing', () => {
          ringMs ??= clock.now().getTime() - started;
        });
        call.on('answered', (at) => {
          answerMs = at.getTime() - started;
          void call.hangup().catch(() => undefined);
        });
        const giveUp = setTimeout(() => void call.hangup().catch(() => undefined), CALL_TIMEOUT_MS);
        const end = await call.ended;
        clearTimeout(giveUp);
        const leg = deps.calls.takeLeg(legId);
        // A test of one's own listing is not counted in its health.
        const own = target.route.sellerId === t.accountId;
        const arrived = await Promise.race([arrival, sleep(500).then(() => null)]);
        const rang = ringMs !== null || answerMs !== null || leg?.ringing === true || arrived !== null;
        const sipCode = end.answeredAt ? 200 : (end.sipStatus ?? leg?.sipStatus ?? null);
        if (arrived) {
          const seen = arrived.pai ?? arrived.from;
          const match = seen !== null && seen === digits(t.displayCli);
          await finish(
            t,
            {
              status: 'completed',
              rang: true,
              ringMs: ringMs ?? arrived.at.getTime() - started,
              answerMs,
              sipCode,
              reportedCli: seen === null ? null : `+${seen}`,
              displayedCorrectly: match,
              resultNotes: match
                ? 'The handset showed the caller ID as sent'
                : seen === null
                  ? 'The handset showed no caller ID'
                  : 'The handset showed a different caller ID',
            },
            true,
            own ? null : match,
          );
          return;
        }
        await finish(
          t,
          {
            status: 'failed',
            rang,
            ringMs,
            answerMs,
            sipCode,
            failureCause: rang ? 'CLI_NOT_OBSERVED' : leg?.noResponse ? 'NO_RESPONSE' : 'ROUTE_REFUSED',
            resultNotes: rang
              ? 'The route signalled ringing but the call never reached the handset'
              : sipCode
                ? `The route refused the call (SIP ${sipCode})`
                : 'The route did not respond',
          },
          rang,
          own ? null : false,
        );
      } finally {
        await deps.admission
          .releaseApiCall(slots)
          .catch((err: unknown) => log.warn({ err }, 'test call slots not released'));
      }
    });
  }

  function launch(ids: string[]) {
    for (const id of ids) {
      const p = dispatch(id).finally(() => running.delete(p));
      running.add(p);
    }
  }

  /** A batch's calls, country by country, at most `max_parallel` handsets of a country at once. */
  async function runBatch(tests: TestRow[]) {
    const byCountry = new Map<string, TestRow[]>();
    for (const t of tests) byCountry.set(t.testCountry, [...(byCountry.get(t.testCountry) ?? []), t]);
    const handsets = await repo.handsets();
    await Promise.all(
      [...byCountry.entries()].map(async ([country, queue]) => {
        const lanes = Math.max(1, Math.min(cfg.max_parallel, handsets.filter((h) => h.country === country).length));
        await Promise.all(
          Array.from({ length: lanes }, async () => {
            for (let t = queue.shift(); t && !stopping; t = queue.shift()) await dispatch(t.id);
          }),
        );
      }),
    );
  }

  async function mustOwnTest(accountId: string, id: string): Promise<TestRow> {
    const t = await repo.test(id);
    if (!t || t.accountId !== accountId) throw notFound('Caller-ID test');
    return t;
  }

  async function routeViews(accountId: string, tests: TestRow[]) {
    const out = new Map<string, { country: string; destinationName: string }>();
    for (const id of new Set(tests.map((t) => t.routeId).filter((r): r is string => r !== null))) {
      try {
        const target = await deps.routeChecks.target(accountId, id);
        out.set(id, {
          country: target.route.country ?? '',
          destinationName: `${target.route.country ? countryName(target.route.country) : 'International'} ${target.name} · ref ${id.slice(-6)}`,
        });
      } catch {
        out.set(id, { country: '', destinationName: `Route no longer listed · ref ${id.slice(-6)}` });
      }
    }
    return out;
  }

  /** Whether a route can be tested, and in which country (preview and batch run). */
  async function testability(accountId: string, routeId: string, handsets: HandsetRow[]) {
    let target: Awaited<ReturnType<RouteChecksService['target']>>;
    try {
      target = await deps.routeChecks.target(accountId, routeId);
    } catch {
      return { id: routeId, name: 'Unknown route', country: '', testable: false, reason: 'Route not found' };
    }
    const base = { id: routeId, name: target.name, country: target.route.country ?? '' };
    if (target.route.type !== 'voice') return { ...base, testable: false, reason: 'An SMS listing has no caller ID' };
    if (target.route.status !== 'active') return { ...base, testable: false, reason: 'The route is not active' };
    if (target.route.country === null)
      return { ...base, testable: false, reason: 'An A-Z route has no single test country' };
    const inCountry = handsets.filter((h) => h.country === target.route.country);
    if (inCountry.length === 0) return { ...base, testable: false, reason: 'No test handset in this country' };
    if (!inCountry.some((h) => target.covers(h.number))) {
      return { ...base, testable: false, reason: 'The route’s rates do not cover a test handset' };
    }
    return { ...base, testable: true, reason: null };
  }

  async function preview(who: Tester, routeIds: string[]) {
    const handsets = await repo.handsets();
    const routes = [];
    for (const id of routeIds) routes.push(await testability(who.accountId, id, handsets));
    const testable = routes.filter((r) => r.testable);
    const q = await quota(who.accountId);
    const b = await ledger.balanceOf(who.accountId);
    const markups = await deps.application.payerMarkups(who.accountId);
    const countries = [...new Set(testable.map((r) => r.country))].map((country) => {
      const n = handsets.filter((h) => h.country === country).length;
      const count = testable.filter((r) => r.country === country).length;
      const parallel = Math.max(1, Math.min(cfg.max_parallel, n));
      return { country, routes: count, handsets: n, parallel, seconds: Math.ceil(count / parallel) * perTestSeconds() };
    });
    const queued = await repo.queued();
    return {
      enabled: handsets.length > 0 && deps.calls.engine() !== null,
      routes,
      testableCount: testable.length,
      minRoutes: MIN_BATCH_ROUTES,
      maxRoutes: cfg.max_batch_routes,
      costPerTest: q.costPerTest,
      maxCost: testable.reduce((sum, r) => sum.plus(priceOn(markups, r.id).total), new Decimal(0)).toFixed(2),
      balance: b.available,
      quota: { usedThisHour: q.usedThisHour, capPerHour: q.limitPerHour, remaining: q.remaining },
      countries,
      estimatedSeconds: countries.reduce((m, c) => Math.max(m, c.seconds), 0),
      noHandsetCountries: [
        ...new Set(routes.filter((r) => r.reason === 'No test handset in this country').map((r) => r.country)),
      ],
      handsetWaitMinutes: Math.ceil((queued * perTestSeconds()) / Math.max(1, handsets.length) / 60),
      gapSeconds: cfg.gap_seconds,
      maxParallel: cfg.max_parallel,
      runningBatchId: await repo.runningBatch(who.accountId),
    };
  }

  function checkRouteIds(routeIds: string[]) {
    if (new Set(routeIds).size !== routeIds.length)
      throw validationError([{ path: 'routeIds', message: 'a route appears twice' }]);
    if (routeIds.length < MIN_BATCH_ROUTES || routeIds.length > cfg.max_batch_routes) {
      throw validationError([
        { path: 'routeIds', message: `a batch holds ${MIN_BATCH_ROUTES} to ${cfg.max_batch_routes} routes` },
      ]);
    }
  }

  async function batchView(b: BatchRow) {
    const tests = await repo.testsOfBatch(b.id);
    const rv = await routeViews(b.accountId, tests);
    return {
      id: b.id,
      status: b.status,
      displayCli: b.displayCli,
      routeIds: b.routeIds,
      createdAt: b.createdAt.toISOString(),
      completedAt: iso(b.completedAt),
      summary: {
        tests: tests.length,
        rang: tests.filter((t) => t.rang === true).length,
        displayedCorrectly: tests.filter((t) => t.displayedCorrectly === true).length,
        notTested: tests.filter((t) => t.status === 'not_tested').length,
        open: tests.filter((t) => !FINAL.includes(t.status)).length,
        totalCost: tests.reduce((s, t) => s.plus(t.cost), new Decimal(0)).toFixed(6),
      },
      tests: tests.map((t) => view(t, t.routeId ? rv.get(t.routeId) : undefined)),
    };
  }

  return {
    repo,
    quota,
    preview,

    /** POST /cli-tests: one test, or one per member of a blend. */
    async create(
      who: Tester,
      body: {
        routeId?: string | undefined;
        blendRouteId?: string | undefined;
        displayCli: string;
        testCountry: string;
        testNumber?: string | undefined;
        scheduledAt?: string | undefined;
        recurrence?: 'none' | 'daily' | 'weekly' | undefined;
      },
    ) {
      if ((body.routeId === undefined) === (body.blendRouteId === undefined)) {
        throw validationError([{ path: 'routeId', message: 'give exactly one of routeId and blendRouteId' }]);
      }
      const problems = [];
      if (!isE164(digits(body.displayCli))) problems.push({ path: 'displayCli', message: 'must be an E.164 number' });
      const country = countryCode(body.testCountry);
      if (country === null) problems.push({ path: 'testCountry', message: 'unknown country' });
      let scheduledAt: Date | null = null;
      if (body.scheduledAt !== undefined) {
        scheduledAt = new Date(body.scheduledAt);
        if (Number.isNaN(scheduledAt.getTime())) problems.push({ path: 'scheduledAt', message: 'must be a date-time' });
      }
      if ((body.recurrence ?? 'none') !== 'none' && scheduledAt === null) {
        scheduledAt = clock.now();
      }
      if (problems.length) throw validationError(problems);
      let testNumber: string | null = null;
      if (body.testNumber !== undefined) {
        testNumber = digits(body.testNumber);
        const h = (await repo.handsets()).find((x) => x.number === testNumber);
        if (!h) throw ruleError('testNumber is not a registered test handset');
        if (h.country !== country) throw ruleError('testNumber is not a handset in testCountry');
      }
      // A blend is tested member by member, each over its own route (its owner sees the members).
      let routeIds: string[];
      if (body.blendRouteId !== undefined) {
        const blend = await deps.blends.get(who.accountId, body.blendRouteId);
        const members = blend.members.map((m) => m.routeId);
        if (!blend.own || members.some((m) => m === null)) {
          throw ruleError("Only the blend's owner can test its members; test a route you can see instead");
        }
        routeIds = members as string[];
      } else {
        routeIds = [body.routeId!];
      }
      for (const routeId of routeIds) {
        const target = await deps.routeChecks.target(who.accountId, routeId);
        if (target.route.type !== 'voice') throw ruleError('An SMS listing cannot carry a caller-ID test');
      }
      await admit(who, routeIds);
      const now = clock.now();
      const future = scheduledAt !== null && scheduledAt > now;
      const rows: NewTest[] = routeIds.map((routeId) => ({
        id: newId(),
        accountId: who.accountId,
        batchId: null,
        routeId,
        blendRouteId: body.blendRouteId ?? null,
        displayCli: `+${digits(body.displayCli)}`,
        testCountry: body.testCountry.trim(),
        testNumber,
        status: future ? 'scheduled' : 'pending',
        recurrence: body.recurrence ?? 'none',
        scheduledAt,
        simulated: who.mode === 'test',
        createdAt: now,
      }));
      await repo.insertTests(sql, rows);
      if (!future) launch(rows.map((r) => r.id));
      const tests = [];
      for (const r of rows) tests.push(view((await repo.test(r.id))!));
      return { ...tests[0]!, tests, skippedTrunks: [] as string[] };
    },

    async list(
      accountId: string,
      q: {
        routeId?: string | undefined;
        blendRouteId?: string | undefined;
        status?: string | undefined;
        cursor?: string | undefined;
        limit: number;
      },
    ) {
      const rows = await repo.list(accountId, { ...q, limit: q.limit + 1 });
      const rv = await routeViews(accountId, rows.slice(0, q.limit));
      return rows.map((t) =>
        view(t, t.routeId ? (rv.get(t.routeId) ?? { country: '', destinationName: '' }) : undefined),
      );
    },

    async get(accountId: string, id: string) {
      return view(await mustOwnTest(accountId, id));
    },

    /** Stops a test not yet dispatched (and a recurring series with it). */
    async cancel(accountId: string, id: string) {
      const t = await mustOwnTest(accountId, id);
      if (t.status !== 'scheduled' && t.status !== 'pending') throw conflict(`The test is already ${t.status}`);
      if (!(await repo.cancelTest(id, clock.now()))) throw conflict('The test was dispatched meanwhile');
      return view((await repo.test(id))!);
    },

    /** Runs a finished test again now, with the same route, caller ID and handset country. */
    async retry(who: Tester, id: string) {
      const t = await mustOwnTest(who.accountId, id);
      if (!FINAL.includes(t.status)) throw conflict('The test has not finished');
      await admit(who, [t.routeId]);
      const row: NewTest = {
        id: newId(),
        accountId: who.accountId,
        batchId: null,
        routeId: t.routeId,
        blendRouteId: t.blendRouteId,
        displayCli: t.displayCli,
        testCountry: t.testCountry,
        testNumber: t.handsetId ? t.testNumber : null,
        status: 'pending',
        recurrence: 'none',
        scheduledAt: null,
        simulated: who.mode === 'test',
        createdAt: clock.now(),
      };
      await repo.insertTests(sql, [row]);
      launch([row.id]);
      return view((await repo.test(row.id))!);
    },

    async availability() {
      return { enabled: (await repo.handsets()).length > 0 && deps.calls.engine() !== null };
    },

    async countriesOnline() {
      const handsets = await repo.handsets();
      if (handsets.length === 0 || deps.calls.engine() === null) {
        return { countries: null, dialCodes: null, checkedAt: null };
      }
      const countries = [...new Set(handsets.map((h) => h.country))].sort();
      return {
        countries,
        dialCodes: [
          ...new Set(
            countries.flatMap((c) => {
              try {
                return [`+${getCountryCallingCode(c as CountryCode)}`];
              } catch {
                return [];
              }
            }),
          ),
        ],
        checkedAt: clock.now().toISOString(),
      };
    },

    /** POST /cli-tests/batches: one test per testable route; one running batch per account. */
    async startBatch(who: Tester, body: { routeIds: string[]; displayCli?: string | undefined }) {
      checkRouteIds(body.routeIds);
      const runningId = await repo.runningBatch(who.accountId);
      if (runningId) throw new AppError('CONFLICT', 'A batch is already running', { runningBatchId: runningId });
      const displayCli = body.displayCli ?? (cfg.caller_id || null);
      if (displayCli !== null && !isE164(digits(displayCli))) {
        throw validationError([{ path: 'displayCli', message: 'must be an E.164 number' }]);
      }
      const handsets = await repo.handsets();
      const routes = [];
      for (const id of body.routeIds) routes.push(await testability(who.accountId, id, handsets));
      const testable = routes.filter((r) => r.testable);
      if (testable.length === 0) throw ruleError('No route in the batch can be tested');
      await admit(
        who,
        testable.map((r) => r.id),
      );
      const now = clock.now();
      const batchId = newId();
      const rows: NewTest[] = routes.map((r) => {
        const handset = r.testable ? handsets.find((h) => h.country === r.country) : undefined;
        return {
          id: newId(),
          accountId: who.accountId,
          batchId,
          routeId: r.testable ? r.id : null,
          blendRouteId: null,
          // Without a caller ID named, each call presents the handset's own number.
          displayCli: displayCli ? `+${digits(displayCli)}` : `+${handset?.number ?? ''}`,
          testCountry: r.country || 'unknown',
          testNumber: null,
          status: r.testable ? 'pending' : 'not_tested',
          recurrence: 'none',
          scheduledAt: null,
          simulated: who.mode === 'test',
          createdAt: now,
          ...(r.testable ? {} : { resultNotes: r.reason, completedAt: now }),
        };
      });
      try {
        await sql.begin(async (tx) => {
          await repo.insertBatch(tx, {
            id: batchId,
            accountId: who.accountId,
            status: 'running',
            displayCli: displayCli ? `+${digits(displayCli)}` : '',
            routeIds: body.routeIds,
            createdAt: now,
          });
          await repo.insertTests(tx, rows);
        });
      } catch (err) {
        if ((err as { code?: string }).code === '23505') {
          throw new AppError('CONFLICT', 'A batch is already running', {
            runningBatchId: await repo.runningBatch(who.accountId),
          });
        }
        throw err;
      }
      const tests = await repo.testsOfBatch(batchId);
      const p = runBatch(tests.filter((t) => t.status === 'pending')).finally(() => batchRuns.delete(p));
      batchRuns.add(p);
      return batchView((await repo.batch(batchId))!);
    },

    async batches(accountId: string, limit: number) {
      const rows = await repo.batches(accountId, limit);
      return Promise.all(rows.map(batchView));
    },

    async batch(accountId: string, id: string) {
      const b = await repo.batch(id);
      if (!b || b.accountId !== accountId) throw notFound('Batch');
      return batchView(b);
    },

    /** Stops the routes not yet called; a call in progress finishes (and is charged if it rang). */
    async cancelBatch(accountId: string, id: string) {
      const b = await repo.batch(id);
      if (!b || b.accountId !== accountId) throw notFound('Batch');
      if (b.status !== 'running') throw conflict(`The batch is already ${b.status}`);
      await sql.begin((tx) => repo.cancelBatch(tx, id, clock.now()));
      return batchView((await repo.batch(id))!);
    },

    /**
     * Module start: tests a stopped daemon left mid-call are failed; pending ones (never called)
     * are dispatched again, and batches whose tests are all final complete.
     */
    async recover(): Promise<void> {
      const now = clock.now();
      const batches = await repo.failAbandoned(new Date(now.getTime() - 10 * 60_000), now);
      for (const b of batches) await repo.finishBatchIfDone(sql, b, now);
      const pending = await repo.stalePending(new Date(now.getTime() - 10 * 60_000));
      launch(pending.map((p) => p.id));
    },

    /** Dispatches scheduled tests that are due (the module's loop). */
    async dispatchDue(): Promise<number> {
      if (stopping) return 0;
      const due = await repo.due(clock.now(), 50);
      launch(due.map((t) => t.id));
      return due.length;
    },

    async addHandset(input: { number: string; country: string; label?: string | null }) {
      const number = digits(input.number);
      const problems = [];
      if (!isE164(number)) problems.push({ path: 'number', message: 'must be an E.164 number' });
      if (!/^[A-Z]{2}$/.test(input.country)) problems.push({ path: 'country', message: 'must be ISO 3166 alpha-2' });
      if (problems.length) throw validationError(problems);
      if ((await repo.handsets()).some((h) => h.number === number)) throw conflict('A handset with this number exists');
      return repo.addHandset({ id: newId(), number, country: input.country, label: input.label ?? null }, clock.now());
    },
    handsets: () => repo.handsets(),
    async removeHandset(idOrNumber: string) {
      const h = await repo.removeHandset(idOrNumber);
      if (!h) throw notFound('Handset');
      return h;
    },

    async stop() {
      stopping = true;
      await Promise.allSettled([...running, ...batchRuns]);
    },
  };
}

/**
 * ISO 3166 alpha-2 codes, to read a country given by name. Listed on first use: the 676 name
 * look-ups took tens of milliseconds of CPU at every daemon start.
 */
let countryCodesList: readonly string[] | undefined;
const countryCodes = (): readonly string[] => (countryCodesList ??= listCountryCodes());
function listCountryCodes(): string[] {
  const out: string[] = [];
  for (let a = 65; a <= 90; a++) {
    for (let b = 65; b <= 90; b++) {
      const code = String.fromCharCode(a, b);
      const name = englishName(code);
      if (name && name !== code) out.push(code);
    }
  }
  return out;
}

export type CliTestsService = ReturnType<typeof createCliTestsService>;
