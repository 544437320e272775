import { Decimal } from 'decimal.js';
import type { Logger } from 'pino';
import postgres from 'postgres';
import type { Config } from '../../config/schema.js';
import type { Sql } from '../../db/connection.js';
import { SqlState } from '../../http/errors.js';
import type { Ledger } from '../../ledger/index.js';
import { isRefusal, refusalError, type Refusal } from '../../ledger/ledger.js';
import type { Clock } from '../../platform/clock.js';
import { sipCallsRefusedTotal } from '../../platform/registered-metrics.js';
import type { CallPlan, PlanCallInput } from '../../telephony/sip/b2bua/index.js';
import type { RoutingCache } from '../marketplace/routing/routing-cache.js';
import { affordableSeconds, holdFor, type CdrsService, type PricedRoute, type RouteTerms } from '../cdrs/index.js';
import type { LiveCall, LiveCalls } from './live-calls.js';
import type { PayerHints } from './payer-hints.js';
import { createPayerTermsCache } from './payer-terms.js';
import type { CallsRepo, ConnectionGate, OrphanPricing, TrunkCallInsert, TrunkHeld, TrunkHoldInput } from './repo.js';
import type { Slots } from './slots.js';
import { createWindowBatcher } from './window-batcher.js';

/** What admitting an API call took, or which limit refused it. */
export type ApiAdmission =
  | { ok: true; slots: string[]; routeIds: string[] }
  | {
      ok: false;
      cause: 'sub-account-calls' | 'api-calls' | 'campaign-calls' | 'capacity' | 'cps';
      limit: number | null;
    };

/** A trunk call turned away before any supplier is tried. */
export type CallRefusal = Extract<CallPlan, { reject: unknown }>;

/** Status, operator, markup and concurrency cap of the paying account. */
export interface PayerTerms {
  status: string;
  parentId: string | null;
  markupPct: Decimal;
  /** Replaces `markupPct` on these routes (a sub-account's route markups). */
  routeMarkups: ReadonlyMap<string, Decimal>;
  maxConcurrentCalls: number | null;
}

const NO_ROUTE_MARKUPS: ReadonlyMap<string, Decimal> = new Map();

/** A connection point without a concurrency limit still counts its live calls (GET /connections). */
const UNCAPPED = Number.MAX_SAFE_INTEGER;

/** The shared counter of a connection point's live calls, across daemons. */
export const connectionCallsKey = (pointId: string): string => `conn:${pointId}`;
/** The shared calls-per-second window of a connection point. */
export const connectionCpsKey = (pointId: string): string => `conn-cps:${pointId}`;

/**
 * Admission of trunk and API calls: the payer's terms (status, markup, caps), its daily spend cap,
 * the concurrency and calls-per-second limits, and the hold that bounds a trunk call, batched with
 * other calls' holds of the same few ms. Refusals are counted by cause.
 */
export function createAdmission(deps: {
  sql: Sql;
  log: Logger;
  clock: Clock;
  config: Readonly<Config>;
  ledger: Ledger;
  repo: CallsRepo;
  cdrs: CdrsService;
  routingCache?: Pick<RoutingCache, 'routeTerms'> | undefined;
  live: LiveCalls;
  slots: Slots;
  hints: PayerHints;
  /** How long holds (and the other call-path writes) wait for others to share their commit. */
  batchWindowMs: number;
  node: string;
}) {
  const { sql, log, clock, config, ledger, repo, live, slots, hints } = deps;

  // Refused trunk calls by cause: a call over a limit is refused and counted, so the limit that
  // turns calls away shows.
  const refused = new Map<string, number>();
  const refusedMetric = sipCallsRefusedTotal();
  const refuse = (cause: string, status: number, reason: string): CallRefusal => {
    refused.set(cause, (refused.get(cause) ?? 0) + 1);
    refusedMetric.inc({ cause });
    return { reject: { status, reason } };
  };

  // Kept in process with NOTIFY invalidation (migration 041): read for every call.
  const termsCache = createPayerTermsCache({
    sql,
    log,
    load: (id) => repo.payerTerms(id),
    now: () => clock.now().getTime(),
  });
  const routeTerms = (ids: readonly string[]): Promise<RouteTerms[]> =>
    deps.routingCache?.routeTerms(ids) ?? deps.cdrs.routeTerms(ids);

  // One query on the call path when not cached (it was four: account, sub-account, and the operator's settings twice).
  const payerTerms = async (accountId: string): Promise<PayerTerms | null> => {
    const t = await termsCache.get(accountId);
    if (!t) return null;
    if (!t.parentId)
      return {
        status: t.status,
        parentId: null,
        markupPct: new Decimal(0),
        routeMarkups: NO_ROUTE_MARKUPS,
        maxConcurrentCalls: null,
      };
    return {
      status: t.status,
      parentId: t.parentId,
      markupPct: new Decimal(t.markupPct ?? t.defaultMarkupPct ?? 0),
      routeMarkups: t.routeMarkups
        ? new Map(t.routeMarkups.map((m) => [m.routeId, new Decimal(m.markupPct)]))
        : NO_ROUTE_MARKUPS,
      maxConcurrentCalls: t.maxConcurrentCalls ?? null,
    };
  };

  /**
   * Admits a call placed through the API in the same counters as trunk calls: the paying
   * sub-account's `maxConcurrentCalls`, the account's cap on concurrent API calls (`api:`), then
   * each route's capacity and calls per second. The slots count in `liveSlots` until released.
   */
  async function admitApiCall(o: {
    payer: string;
    maxApiCalls: number;
    routeIds: readonly string[];
    /** Whose account cap `maxApiCalls` is: API calls' (default) or dialer campaigns' own. */
    pool?: 'api' | 'campaign' | undefined;
  }): Promise<ApiAdmission> {
    const pool = o.pool ?? 'api';
    const account = await payerTerms(o.payer);
    const wanted: { key: string; limit: number }[] = [];
    if (account?.maxConcurrentCalls !== null && account?.maxConcurrentCalls !== undefined)
      wanted.push({ key: `acct:${o.payer}`, limit: account.maxConcurrentCalls });
    if (o.maxApiCalls > 0) wanted.push({ key: `${pool}:${o.payer}`, limit: o.maxApiCalls });
    const taken: string[] = [];
    try {
      for (const w of wanted) {
        const got = await slots.acquireAll([w]);
        if (!got.ok) {
          await slots.release(taken);
          const cause = w.key.startsWith('acct:')
            ? 'sub-account-calls'
            : pool === 'api'
              ? 'api-calls'
              : 'campaign-calls';
          return { ok: false, cause, limit: w.limit };
        }
        taken.push(...got.slots);
      }
      const terms = new Map((await routeTerms(o.routeIds)).map((t) => [t.id, t]));
      const routes = await slots.takeRoutes(
        o.routeIds.map((routeId) => ({ routeId })),
        terms,
        taken,
      );
      if (routes.usable.length === 0) {
        await slots.release(taken);
        return { ok: false, cause: routes.full > 0 ? 'capacity' : 'cps', limit: null };
      }
      return { ok: true, slots: taken, routeIds: routes.usable.map((u) => u.routeId) };
    } catch (err) {
      await slots.release(taken);
      throw err;
    }
  }

  /** The paying account's terms, or why it may not call now (closed, suspended, capped today). */
  async function payerFor(payer: string): Promise<PayerTerms | CallRefusal> {
    // The hold refuses a capped payer anyway; the cap is read first only for payers seen capped
    // today, so their calls are refused before routing as ever, without a read for everyone else.
    const suspect = hints.capSuspect(payer);
    const [account, capped] = await Promise.all([payerTerms(payer), suspect ? ledger.capSuspended(payer) : false]);
    if (suspect && !capped) hints.capLifted(payer);
    if (!account || account.status === 'closed') return refuse('account', 403, 'Account closed');
    if (account.status === 'suspended') return refuse('suspended', 403, 'Account suspended');
    // Counted apart from an operator's suspension: the cap lifts itself at the next UTC day.
    if (capped) return refuse('daily-cap', 403, 'Daily spend cap reached until the next UTC day');
    return account;
  }

  /**
   * The connection point's calls per second and concurrency, the payer's and the routing account's
   * concurrency slots, then each candidate route's capacity and calls per second: the routes still
   * usable and every slot taken, or the refusal (nothing held).
   */
  async function takeLimits<T extends { routeId: string }>(
    account: PayerTerms,
    payer: string,
    routingAccount: string,
    candidates: readonly T[],
    terms: ReadonlyMap<string, RouteTerms>,
    point?: ConnectionGate,
  ): Promise<{ usable: T[]; slots: string[] } | CallRefusal> {
    const wanted: { key: string; limit: number }[] = [];
    if (point) {
      if (point.maxCps !== null && !(await slots.rate(connectionCpsKey(point.id), point.maxCps)))
        return refuse('connection-cps', 503, 'Connection calls-per-second limit reached');
      wanted.push({ key: connectionCallsKey(point.id), limit: point.maxConcurrentCalls ?? UNCAPPED });
    }
    if (account.maxConcurrentCalls !== null && account.maxConcurrentCalls !== undefined) {
      wanted.push({ key: `acct:${payer}`, limit: account.maxConcurrentCalls });
    }
    if (config.sip.max_calls_per_account > 0)
      wanted.push({ key: `acct-all:${routingAccount}`, limit: config.sip.max_calls_per_account });
    const taken = await slots.acquireAll(wanted);
    if (!taken.ok)
      return taken.key.startsWith('conn:')
        ? refuse('connection-calls', 503, 'Connection concurrent call limit reached')
        : refuse('concurrency', 503, 'Concurrent call limit reached');

    const held = [...taken.slots];
    const { usable } = await slots.takeRoutes(candidates, terms, held);
    if (usable.length === 0) {
      await slots.release(held);
      return refuse('capacity', 503, 'Route capacity or calls-per-second limit reached');
    }
    return { usable, slots: held };
  }

  // Holds of a few ms share one statement: each held its payer's ledger row from the hold to its
  // own commit, so one busy payer's calls queued one commit (a WAL flush) apart, however idle the
  // CPU. A batch locks each payer's row once (ledger_hold_many) and writes the call rows in the same
  // statement, which commits on its own. The outcome of each call is its own: a refused hold is that
  // call's SVC01 or SVC04, as ledger_hold throws it.
  interface HoldJob {
    call: TrunkCallInsert;
    hold: TrunkHoldInput;
    out?: TrunkHeld | Refusal | Error;
  }
  const holdJobs = createWindowBatcher<HoldJob>({
    windowMs: deps.batchWindowMs,
    maxBatch: 100,
    async run(jobs) {
      if (jobs.length === 1) {
        jobs[0]!.out = await repo.insertCallWithHold(jobs[0]!.call, jobs[0]!.hold).catch((err: Error) => err);
        return;
      }
      try {
        const out = await repo.insertCallsWithHolds(jobs, clock.now());
        jobs.forEach((j, i) => (j.out = out[i]));
      } catch (err) {
        log.debug({ err, calls: jobs.length }, 'hold batch rolled back: calls held one by one');
        for (const j of jobs) j.out = await repo.insertCallWithHold(j.call, j.hold).catch((e: Error) => e);
      }
    },
  });
  async function holdBatched(call: TrunkCallInsert, hold: TrunkHoldInput): Promise<TrunkHeld> {
    const job: HoldJob = { call, hold };
    await holdJobs.add(job);
    if (job.out instanceof Error) throw job.out;
    if (isRefusal(job.out!)) throw refusalError(job.out);
    return job.out!;
  }

  /**
   * Makes `call` live and holds what its longest affordable duration may cost, writing its call row
   * with the hold; sets its hold id, maximum duration and hold expiry. Returns the refusal (the call
   * no longer live, its slots released), or null once held.
   */
  const callRow = (
    call: LiveCall,
    input: PlanCallInput,
    seconds: number,
    pricing: OrphanPricing,
    now: Date,
  ): TrunkCallInsert => ({
    id: call.id,
    accountId: call.payer,
    operatorId: call.operatorId,
    toNumber: input.to,
    fromNumber: input.from,
    maxDurationSeconds: seconds,
    pricing,
    ownerNode: deps.node,
    now,
  });

  async function hold(
    call: LiveCall,
    input: PlanCallInput,
    routesPriced: readonly PricedRoute[],
    pricing: OrphanPricing,
  ): Promise<CallRefusal | null> {
    const { id: callGroupId, payer, markupPct } = call;
    const longest = config.sip.max_call_seconds;
    const holdKey = `call:${callGroupId}:hold`;
    // In `live` before the row exists, so a concurrent orphan reconcile never takes it for a dead daemon's call.
    live.set(callGroupId, call);
    // The available balance the payer's last hold left: when it pays for the longest call, that hold
    // is tried without reading the balance first (the hold checks it; refused, the balance is read
    // and the hold tried again). Otherwise the balance is read, so the call gets all it affords.
    const hint = hints.available(payer);
    let exact = hint === undefined || affordableSeconds(hint, routesPriced, markupPct, longest) < longest;
    try {
      for (;;) {
        const available = exact ? new Decimal((await ledger.balanceOf(payer)).available) : hint!;
        // A hint that paid for the longest call above needs no second count.
        const seconds = exact ? affordableSeconds(available, routesPriced, markupPct, longest) : longest;
        if (seconds <= 0) {
          live.delete(callGroupId);
          await slots.release(call.slots);
          return refuse('balance', 402, 'Insufficient balance');
        }
        const ttlSeconds = seconds + 600;
        const now = clock.now();
        const amount = holdFor(seconds, routesPriced, markupPct);
        if (new Decimal(amount).isZero()) {
          // Free minutes (a rented number whose inbound minutes cost nothing): the call row alone,
          // nothing to hold or settle; holdId stays empty.
          await repo.insertTrunkCalls(sql, [{ call: callRow(call, input, seconds, pricing, now), holdId: null }]);
          call.maxDurationSeconds = seconds;
          return null;
        }
        try {
          // The hold and the call row together (never a hold without the call row the orphan
          // reconcile settles it from), batched with other calls' in one commit.
          const held = await holdBatched(callRow(call, input, seconds, pricing, now), {
            postingKey: holdKey,
            amount,
            ttlSeconds,
            reference: `SIP call to ${input.to.slice(0, 4)}…`,
          });
          Object.assign(call, {
            holdId: held.holdId,
            maxDurationSeconds: seconds,
            holdUntil: now.getTime() + ttlSeconds * 1000,
          });
          hints.setAvailable(payer, held.available);
          return null;
        } catch (err) {
          // A statement that failed wrote nothing (the posting key's claim included): tried again from the balance.
          if (!exact && err instanceof postgres.PostgresError && err.code === SqlState.INSUFFICIENT_BALANCE) {
            exact = true;
            continue;
          }
          throw err;
        }
      }
    } catch (err) {
      live.delete(callGroupId);
      await slots.release(call.slots);
      if (err instanceof postgres.PostgresError && err.code === SqlState.DAILY_CAP) {
        hints.capReached(payer);
        return refuse('daily-cap', 403, 'Daily spend cap reached until the next UTC day');
      }
      if (err instanceof postgres.PostgresError && err.code === SqlState.INSUFFICIENT_BALANCE) {
        hints.forgetAvailable(payer);
        return refuse('balance', 402, 'Insufficient balance');
      }
      throw err;
    }
  }

  return {
    /** Started with the module (LISTEN), stopped with it. */
    termsCache,
    routeTerms,
    refuse,
    /** Trunk calls refused before routing since start, by cause. */
    refusals: (): Record<string, number> => Object.fromEntries(refused),
    payerFor,
    takeLimits,
    hold,
    admitApiCall,
  };
}

export type Admission = ReturnType<typeof createAdmission>;
