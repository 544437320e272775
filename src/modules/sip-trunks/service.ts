import { isIP } from 'node:net';
import { Decimal } from 'decimal.js';
import type { Logger } from 'pino';
import { LRUCache } from 'lru-cache';
import postgres from 'postgres';
import { Counter, register } from 'prom-client';
import type { Config } from '../../config/schema.js';
import type { Sql } from '../../db/connection.js';
import { AppError, SqlState } from '../../http/errors.js';
import type { Ledger } from '../../ledger/index.js';
import type { Clock } from '../../platform/clock.js';
import type { Counters } from '../../platform/counters.js';
import { newId } from '../../platform/ids.js';
import { createTtlCache } from '../../platform/ttl-cache.js';
import { requireIncrement } from '../../rating/index.js';
import type { CallEndedEvent, CallPlan, PlanCallInput, TrunkPolicy } from '../../telephony/sip/b2bua/index.js';
import { computeHa1, type SipTransportName } from '../../telephony/sip/index.js';
import type { AccountsService } from '../accounts/service.js';
import type { ApplicationService } from '../application/service.js';
import type { Candidate } from '../marketplace/index.js';
import type { RoutingCache } from '../marketplace/routing/routing-cache.js';
import type { Routing } from '../marketplace/routing/routing.js';
import {
  affordableSeconds,
  buildCdr,
  chargeLeg,
  holdFor,
  voiceBilled,
  type CdrInsert,
  type CdrsService,
  type LegCharge,
  type PricedRoute,
  type Settlement,
} from '../cdrs/index.js';
import { createPayerTermsCache } from './payer-terms.js';
import {
  createCallsRepo,
  type FinishRow,
  type OrphanPricing,
  type TrunkCallInsert,
  type TrunkHeld,
  type TrunkHoldInput,
} from './repo.js';
import { createWindowBatcher } from './window-batcher.js';
import { isRefusal, refusalError, type Refusal } from '../../ledger/ledger.js';

/** How long answered marks and call finishes wait for others to share their statement and commit. */
const BATCH_WINDOW_MS = 5;

/** Plain words for the hang-up causes the trunk B2BUA reports. */
const HANGUP_REASONS: Record<string, string> = {
  'caller-bye': 'The caller hung up',
  'callee-bye': 'The called party hung up',
  'max-duration': 'The call reached its maximum duration (balance or limit)',
  'caller-cancel': 'The caller cancelled before answer',
  failed: 'No route could connect the call',
  'no-answer': 'No answer',
  'ack-timeout': 'The caller never confirmed the answer',
  shutdown: 'The exchange was shutting down',
  'session-expired': 'The caller stopped refreshing the session (RFC 4028 session timer)',
  'media-timeout': 'No audio either way through the media relay for the RTP timeout',
  crash: 'The exchange restarted during the call; billed to the last time it was seen',
};

interface LiveCall {
  id: string;
  payer: string;
  operatorId: string | null;
  holdId: string;
  maxDurationSeconds: number;
  slots: string[];
  markupPct: Decimal;
  priced: Map<string, PricedRoute & { sellerId: string; mediaMode: 'direct' | 'proxy' }>;
  /** The answered-mark update in flight: the settlement waits for it rather than finding the row locked. */
  marked?: Promise<unknown>;
  /** When the hold expires unless extended (ms since epoch). */
  holdUntil: number;
}

/**
 * The owner written on calls placed through the API: apart from this node's trunk calls, which the
 * housekeeping reconciles as soon as they are not live here, while the API's own heartbeat keeps these.
 */
export const apiCallOwner = (node: string): string => `${node}:api`;

/** A route endpoint's stored transport as the SIP stack names it (anything unknown goes out over UDP). */
export const sipTransportOf = (t: string): SipTransportName => (t === 'tcp' || t === 'tls' ? t : 'udp');

interface RouteLimits {
  capacity: number | null;
  maxCps: number | null;
}

/** What admitting an API call took, or which limit refused it. */
export type ApiAdmission =
  | { ok: true; slots: string[]; routeIds: string[] }
  | { ok: false; cause: 'sub-account-calls' | 'api-calls' | 'capacity' | 'cps'; limit: number | null };

export interface SipTrunksDeps {
  sql: Sql;
  log: Logger;
  clock: Clock;
  config: Readonly<Config>;
  ledger: Ledger;
  routing: Routing;
  accounts: AccountsService;
  application: ApplicationService;
  counters: Counters;
  /** Settlement and CDRs of ended calls; route terms when there is no routing cache. */
  cdrs: CdrsService;
  node: string;
  /** Route terms (seller, capacity, calls per second) kept in process; read from the table without it. */
  routingCache?: Pick<RoutingCache, 'routeTerms'>;
  /** Endpoints the OPTIONS health checks have marked down (skipped when routing). */
  endpointDown?: (e: { host: string; port: number; transport: string }) => boolean;
}

/**
 * The voice plane's business side: who pays for a trunk call, which routes it may take, the
 * hold that bounds it, and at the end the settlement and one CDR per leg in one transaction.
 */
export function createSipTrunksService(deps: SipTrunksDeps) {
  const { sql, log, clock, config, ledger } = deps;
  // Whitelist and SIP credential answers are reused as briefly as API credentials are (auth.credential_cache_seconds).
  const credentialMs = config.auth.credential_cache_seconds * 1000;
  const repo = createCallsRepo(sql, { ipCacheMs: credentialMs, now: () => clock.now().getTime() });
  const sipUsers = createTtlCache<string, Awaited<ReturnType<TrunkPolicy['lookupSipUser']>>>(credentialMs, clock);
  const live = new Map<string, LiveCall>();
  // Refused trunk calls by cause: a call over a limit is refused and counted, so the limit that
  // turns calls away shows.
  const refused = new Map<string, number>();
  const refusedMetric =
    (register.getSingleMetric('svc_sip_calls_refused_total') as Counter<'cause'> | undefined) ??
    new Counter({
      name: 'svc_sip_calls_refused_total',
      help: 'SIP trunk calls refused before routing, by cause',
      labelNames: ['cause'],
    });
  const refuse = (cause: string, status: number, reason: string): CallPlan => {
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
  const routeTerms = (ids: readonly string[]) => deps.routingCache?.routeTerms(ids) ?? deps.cdrs.routeTerms(ids);

  /** Status, operator, markup and concurrency cap of the paying account. */
  // One query on the call path when not cached (it was four: account, sub-account, and the operator's settings twice).
  const payerTerms = async (accountId: string) => {
    const t = await termsCache.get(accountId);
    if (!t) return null;
    if (!t.parentId)
      return { status: t.status, parentId: null, markupPct: new Decimal(0), maxConcurrentCalls: null as number | null };
    return {
      status: t.status,
      parentId: t.parentId,
      markupPct: new Decimal(t.markupPct ?? t.defaultMarkupPct ?? 0),
      maxConcurrentCalls: t.maxConcurrentCalls ?? null,
    };
  };

  // Every slot this daemon holds, planned calls included: what `Counters.reconcile` rewrites its share to.
  const held = new Map<string, number>();
  const untrack = (key: string) => {
    const n = (held.get(key) ?? 0) - 1;
    if (n > 0) held.set(key, n);
    else held.delete(key);
  };

  async function releaseSlots(slots: string[]) {
    for (const s of slots) {
      untrack(s);
      await deps.counters.release(s).catch((err) => log.warn({ err, slot: s }, 'counter release failed'));
    }
  }

  /** Takes every concurrency slot or none; the key names what refused. */
  async function acquireAll(
    wanted: { key: string; limit: number }[],
  ): Promise<{ ok: true; slots: string[] } | { ok: false; key: string }> {
    const slots: string[] = [];
    for (const w of wanted) {
      if (!(await deps.counters.acquire(w.key, w.limit))) {
        await releaseSlots(slots);
        return { ok: false, key: w.key };
      }
      held.set(w.key, (held.get(w.key) ?? 0) + 1);
      slots.push(w.key);
    }
    return { ok: true, slots };
  }

  /**
   * Routes at capacity are skipped, as a supplier would refuse them anyway; so is a route over its
   * calls per second this second (the next may take the call). Route slots go into `slots` as they
   * are taken, so a caller can give them back even when a counter fails halfway.
   */
  async function takeRoutes<T extends { routeId: string }>(
    candidates: readonly T[],
    terms: ReadonlyMap<string, RouteLimits>,
    slots: string[],
  ) {
    const usable: T[] = [];
    let full = 0;
    let overCps = 0;
    for (const c of candidates) {
      const t = terms.get(c.routeId);
      if (t?.maxCps && !(await deps.counters.rate(`cps:${c.routeId}`, t.maxCps))) {
        overCps++;
        continue;
      }
      if (t?.capacity) {
        const got = await acquireAll([{ key: `route:${c.routeId}`, limit: t.capacity }]);
        if (!got.ok) {
          full++;
          continue;
        }
        slots.push(...got.slots);
      }
      usable.push(c);
    }
    return { usable, full, overCps };
  }

  /**
   * Admits a call placed through the API in the same counters as trunk calls: the paying
   * sub-account's `maxConcurrentCalls`, the account's cap on concurrent API calls (`api:`), then
   * each route's capacity and calls per second. The slots count in `liveSlots` until released.
   */
  async function admitApiCall(o: {
    payer: string;
    maxApiCalls: number;
    routeIds: readonly string[];
  }): Promise<ApiAdmission> {
    const account = await payerTerms(o.payer);
    const wanted: { key: string; limit: number }[] = [];
    if (account?.maxConcurrentCalls !== null && account?.maxConcurrentCalls !== undefined)
      wanted.push({ key: `acct:${o.payer}`, limit: account.maxConcurrentCalls });
    if (o.maxApiCalls > 0) wanted.push({ key: `api:${o.payer}`, limit: o.maxApiCalls });
    const slots: string[] = [];
    try {
      for (const w of wanted) {
        const got = await acquireAll([w]);
        if (!got.ok) {
          await releaseSlots(slots);
          return { ok: false, cause: w.key.startsWith('api:') ? 'api-calls' : 'sub-account-calls', limit: w.limit };
        }
        slots.push(...got.slots);
      }
      const terms = new Map((await routeTerms(o.routeIds)).map((t) => [t.id, t]));
      const taken = await takeRoutes(
        o.routeIds.map((routeId) => ({ routeId })),
        terms,
        slots,
      );
      if (taken.usable.length === 0) {
        await releaseSlots(slots);
        return { ok: false, cause: taken.full > 0 ? 'capacity' : 'cps', limit: null };
      }
      return { ok: true, slots, routeIds: taken.usable.map((u) => u.routeId) };
    } catch (err) {
      await releaseSlots(slots);
      throw err;
    }
  }

  // Payers seen capped on a UTC day (a hold refused or a settlement reached the cap), and the
  // available balance each payer's last hold left: hints only, the ledger functions decide.
  // Bounded against a flood of distinct payers: the least recently used hint goes first.
  const capSuspects = new LRUCache<string, string>({ max: 50_000 });
  const availableHints = new LRUCache<string, Decimal>({ max: 50_000 });
  const utcDay = () => clock.now().toISOString().slice(0, 10);
  const hintAvailable = (payer: string, available: string) => {
    availableHints.set(payer, new Decimal(available));
  };
  const capReachedBy = (payer: string) => {
    capSuspects.set(payer, utcDay());
  };

  async function planTrunkCall(input: PlanCallInput): Promise<CallPlan> {
    const payer = input.subAccountId ?? input.accountId;
    // The hold refuses a capped payer anyway; the cap is read first only for payers seen capped
    // today, so their calls are refused before routing as ever, without a read for everyone else.
    const suspect = capSuspects.get(payer) === utcDay();
    const [account, capped] = await Promise.all([payerTerms(payer), suspect ? ledger.capSuspended(payer) : false]);
    if (suspect && !capped) capSuspects.delete(payer);
    if (!account || account.status === 'closed') return refuse('account', 403, 'Account closed');
    if (account.status === 'suspended') return refuse('suspended', 403, 'Account suspended');
    // Counted apart from an operator's suspension: the cap lifts itself at the next UTC day.
    if (capped) return refuse('daily-cap', 403, 'Daily spend cap reached until the next UTC day');
    const operatorId = account.parentId;
    const routingAccount = operatorId ?? payer;
    let candidates: Candidate[];
    try {
      candidates = await deps.routing.candidatesFor({ accountId: routingAccount, number: input.to, type: 'voice' });
    } catch (err) {
      // Routing refuses a malformed number with a rule error; anything else is ours (500 to the caller).
      if (err instanceof AppError) return refuse('number', 484, 'Address incomplete: E.164 digits expected');
      throw err;
    }
    if (input.purchaseId) {
      // A purchase's own credentials put its route first; the others stay as failover.
      candidates.sort((a, b) => Number(b.purchaseId === input.purchaseId) - Number(a.purchaseId === input.purchaseId));
    }
    const covering = candidates.filter((c) => c.endpoints.length > 0);
    if (covering.length === 0) return refuse('no-route', 404, 'No purchased route covers this number');
    const isDown = deps.endpointDown ?? (() => false);
    candidates = covering
      .map((c) => ({ ...c, endpoints: c.endpoints.filter((e) => !isDown(e)) }))
      .filter((c) => c.endpoints.length > 0);
    if (candidates.length === 0)
      return refuse('endpoints-down', 503, 'Every supplier endpoint for this number is down');

    const terms = new Map((await routeTerms(candidates.map((c) => c.routeId))).map((t) => [t.id, t]));
    const wanted: { key: string; limit: number }[] = [];
    if (account.maxConcurrentCalls !== null && account.maxConcurrentCalls !== undefined) {
      wanted.push({ key: `acct:${payer}`, limit: account.maxConcurrentCalls });
    }
    if (config.sip.max_calls_per_account > 0)
      wanted.push({ key: `acct-all:${routingAccount}`, limit: config.sip.max_calls_per_account });
    const taken = await acquireAll(wanted);
    if (!taken.ok) return refuse('concurrency', 503, 'Concurrent call limit reached');

    const slots = [...taken.slots];
    const { usable } = await takeRoutes(candidates, terms, slots);
    if (usable.length === 0) {
      await releaseSlots(slots);
      return refuse('capacity', 503, 'Route capacity or calls-per-second limit reached');
    }

    const markupPct = account.markupPct;
    const priced = new Map(
      usable.map((c) => {
        const term = terms.get(c.routeId);
        return [
          c.routeId,
          {
            price: c.price,
            sellerRate: c.sellerRate,
            increment: c.increment,
            sellerId: term?.sellerId ?? '',
            mediaMode: term?.mediaMode ?? 'direct',
          },
        ] as const;
      }),
    );
    const routesPriced = [...priced.values()];
    const longest = config.sip.max_call_seconds;
    const callGroupId = newId();
    const holdKey = `call:${callGroupId}:hold`;
    const pricing: OrphanPricing = {
      markupPct: markupPct.toFixed(3),
      routes: Object.fromEntries(
        [...priced].map(([id, p]) => [
          id,
          {
            price: p.price.toFixed(6),
            sellerRate: p.sellerRate.toFixed(6),
            increment: p.increment.text,
            sellerId: p.sellerId,
            mediaMode: p.mediaMode,
          },
        ]),
      ),
    };
    // In `live` before the row exists, so a concurrent orphan reconcile never takes it for a dead daemon's call.
    // No hold to extend until it exists.
    const liveCall: LiveCall = {
      id: callGroupId,
      payer,
      operatorId,
      holdId: '',
      maxDurationSeconds: 0,
      slots,
      markupPct,
      priced,
      holdUntil: Number.MAX_SAFE_INTEGER,
    };
    live.set(callGroupId, liveCall);
    // The available balance the payer's last hold left: when it pays for the longest call, that hold
    // is tried without reading the balance first (the hold checks it; refused, the balance is read
    // and the hold tried again). Otherwise the balance is read, so the call gets all it affords.
    const hint = availableHints.get(payer);
    let exact = hint === undefined || affordableSeconds(hint, routesPriced, markupPct, longest) < longest;
    try {
      for (;;) {
        const available = exact ? new Decimal((await ledger.balanceOf(payer)).available) : hint!;
        const seconds = affordableSeconds(available, routesPriced, markupPct, longest);
        if (seconds <= 0) {
          live.delete(callGroupId);
          await releaseSlots(slots);
          return refuse('balance', 402, 'Insufficient balance');
        }
        const ttlSeconds = seconds + 600;
        const now = clock.now();
        try {
          // The hold and the call row together (never a hold without the call row the orphan
          // reconcile settles it from), batched with other calls' in one commit.
          const held = await holdCall(
            {
              id: callGroupId,
              accountId: payer,
              operatorId,
              toNumber: input.to,
              fromNumber: input.from,
              maxDurationSeconds: seconds,
              pricing,
              ownerNode: deps.node,
              now,
            },
            {
              postingKey: holdKey,
              amount: holdFor(seconds, routesPriced, markupPct),
              ttlSeconds,
              reference: `SIP call to ${input.to.slice(0, 4)}…`,
            },
          );
          Object.assign(liveCall, {
            holdId: held.holdId,
            maxDurationSeconds: seconds,
            holdUntil: now.getTime() + ttlSeconds * 1000,
          });
          hintAvailable(payer, held.available);
          break;
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
      await releaseSlots(slots);
      if (err instanceof postgres.PostgresError && err.code === SqlState.DAILY_CAP) {
        capReachedBy(payer);
        return refuse('daily-cap', 403, 'Daily spend cap reached until the next UTC day');
      }
      if (err instanceof postgres.PostgresError && err.code === SqlState.INSUFFICIENT_BALANCE) {
        availableHints.delete(payer);
        return refuse('balance', 402, 'Insufficient balance');
      }
      throw err;
    }
    return {
      callGroupId,
      maxDurationSeconds: liveCall.maxDurationSeconds,
      candidates: usable.map((c) => ({
        routeId: c.routeId,
        mediaMode: terms.get(c.routeId)?.mediaMode ?? 'direct',
        endpoints: c.endpoints.map((e) => ({
          host: e.address ?? e.host,
          port: e.port,
          transport: sipTransportOf(e.transport),
          ...(e.transport === 'tls' && isIP(e.host.replace(/^\[|\]$/g, '')) === 0 ? { servername: e.host } : {}),
          techPrefix: e.techPrefix,
          ...(e.username ? { username: e.username } : {}),
          ...(e.password ? { password: e.password } : {}),
          priority: e.priority,
          weight: e.weight,
        })),
      })),
    };
  }

  /** One ended trunk call's writes: its call row, one CDR per leg, and the money. */
  interface Finishing {
    call: LiveCall;
    routeId: string | null;
    row: FinishRow;
    cdrs: CdrInsert[];
    charge: LegCharge | null;
  }

  /**
   * Settles the hold (or releases it) and writes the call and its CDRs in one transaction: the
   * calls ended within a few ms share it (one commit, one CDR statement), each still all or nothing.
   */
  async function finishTrunkCall(e: CallEndedEvent) {
    const call = live.get(e.callGroupId);
    if (!call) {
      log.warn({ callGroupId: e.callGroupId }, 'call ended that this daemon did not plan');
      return;
    }
    const route = e.routeId ? call.priced.get(e.routeId) : undefined;
    // The session timer fires at maxDuration; the BYE's few ms past it must not bill (or hold) one more block.
    const duration = Math.min(Math.ceil(e.durationMs / 1000), call.maxDurationSeconds);
    const charge = route && e.answeredAt ? chargeLeg(route, duration, call.markupPct) : null;
    const status = e.answeredAt
      ? 'completed'
      : e.sipCode === 486 || e.sipCode === 600
        ? 'busy'
        : e.hangupCause === 'no-answer' || e.sipCode === 480 || e.sipCode === 487
          ? 'no_answer'
          : 'failed';
    const endedAt = e.endedAt;
    const cdrs: CdrInsert[] = e.attempts.map((a) => {
      const connected = a.outcome === 'answered' && a.routeId === e.routeId && charge !== null;
      const priced = call.priced.get(a.routeId);
      return buildCdr({
        accountId: call.payer,
        operatorId: call.operatorId,
        sellerId: priced?.sellerId ?? null,
        callUuid: e.callGroupId,
        callGroupId: e.callGroupId,
        kind: 'voice',
        source: 'trunk',
        routeId: a.routeId,
        fromNumber: e.from,
        toNumber: e.to,
        cli: e.from,
        status: connected ? 'completed' : a.outcome === 'answered' ? 'completed' : a.outcome,
        sipCode: a.sipCode,
        hangupCause: connected ? e.hangupCause : a.reason,
        durationSeconds: connected ? duration : 0,
        segments: null,
        pddMs: a.pddMs,
        mediaMode: priced?.mediaMode ?? null,
        billed: connected ? voiceBilled(charge) : null,
        answeredAt: connected ? e.answeredAt : null,
        endedAt,
        createdAt: a.startedAt,
      });
    });
    const row: FinishRow = {
      id: e.callGroupId,
      status,
      routeId: e.routeId,
      sipCode: e.sipCode,
      hangupCause: e.hangupCause,
      hangupReason: HANGUP_REASONS[e.hangupCause] ?? e.hangupCause,
      durationSeconds: e.answeredAt ? duration : 0,
      billableSeconds: charge?.billableSeconds ?? 0,
      cost: charge?.total ?? '0.000000',
      billingIncrement: route?.increment.text ?? null,
      ratePerMinute: charge?.ratePerMinute ?? null,
      attempts: e.attempts.map((a, i) => ({
        attempt: i + 1,
        routeId: a.routeId,
        status: a.outcome,
        sipResponseCode: a.sipCode,
        hangupCause: a.reason,
      })),
      answeredAt: e.answeredAt,
      endedAt,
    };
    await call.marked;
    // Never rejects: a call whose writes failed is logged and left to the orphan reconcile.
    await finishes.add({ call, routeId: e.routeId, row, cdrs, charge });
    live.delete(e.callGroupId);
    await releaseSlots(call.slots);
  }

  /** One transaction for a batch of ended calls; when it fails, each call again in its own. */
  async function finishBatch(items: Finishing[]) {
    // Payer order, then call order: two daemons' batches lock ledger and call rows in the same order.
    items.sort((a, b) =>
      a.call.payer < b.call.payer ? -1 : a.call.payer > b.call.payer ? 1 : a.row.id < b.row.id ? -1 : 1,
    );
    try {
      await sql.begin(async (tx) => {
        // Ending the rows first takes their locks (waiting out a heartbeat's); a call a stale-call
        // reconcile on another daemon ended meanwhile is left out: that one settled it.
        const ended = await repo.finishCalls(
          tx,
          items.map((f) => f.row),
        );
        const mine = items.filter((f) => ended.has(f.row.id));
        // Pipelined on the transaction's connection: one round trip instead of one per statement. The
        // ledger last, so the payer's balance row (every call of that payer waits on it) stays locked shortest.
        // Two or more settlements go in one ledger_settle_many (each payer's row moved once).
        const [, settled] = await Promise.all([
          deps.cdrs.insertCdrs(
            tx,
            mine.flatMap((f) => f.cdrs),
          ),
          deps.cdrs.settleMany(
            tx,
            mine.map((f) => settlement(f.call, f.routeId, f.charge)),
          ),
        ]);
        // A refusal cannot come from a hold that covers the call; if one does, the batch rolls back
        // and each call is written on its own, where the settle's own error is logged.
        const refused = settled.find(isRefusal);
        if (refused) throw refusalError(refused);
        settled.forEach((r, i) => {
          if (!isRefusal(r) && r.capReached) capReachedBy(mine[i]!.call.payer);
        });
      });
      return;
    } catch (err) {
      if (items.length === 1) {
        // Left open in the database: the next housekeeping pass reconciles it as this node's orphan.
        log.error({ err, callGroupId: items[0]!.row.id }, 'call settlement failed; left to the orphan reconcile');
        return;
      }
      log.debug({ err, calls: items.length }, 'call finish batch rolled back: calls written one by one');
    }
    for (const f of items) await finishBatch([f]);
  }
  const finishes = createWindowBatcher<Finishing>({ windowMs: BATCH_WINDOW_MS, maxBatch: 100, run: finishBatch });

  const callContext = (id: string) => ({
    reference: 'Voice call',
    relatedEntityType: 'sip_call',
    relatedEntityId: id,
    callId: id,
  });

  /** A call's settlement: the route's seller paid its rate, the platform its fee, the rest of the hold released. */
  function settlement(
    call: { id: string; payer: string; holdId: string; operatorId: string | null },
    routeId: string | null,
    charge: LegCharge | null,
    sellerId?: string,
  ): Settlement {
    const seller = sellerId ?? live.get(call.id)?.priced.get(routeId ?? '')?.sellerId ?? null;
    return {
      key: `call:${call.id}`,
      holdId: call.holdId,
      payer: call.payer,
      operatorId: call.operatorId,
      sellerId: seller,
      charge,
      context: callContext(call.id),
    };
  }

  // Holds of a few ms share one transaction: each held its payer's ledger row from the hold to its
  // own commit, so one busy payer's calls queued one commit (a WAL flush) apart, however idle the
  // CPU. A batch locks each payer's row once (ledger_hold_many) and commits once. The outcome of
  // each call is its own: a refused hold is that call's SVC01 or SVC04, as ledger_hold throws it.
  interface HoldJob {
    call: TrunkCallInsert;
    hold: TrunkHoldInput;
    out?: TrunkHeld | Refusal | Error;
  }
  const holdJobs = createWindowBatcher<HoldJob>({
    windowMs: BATCH_WINDOW_MS,
    maxBatch: 100,
    async run(jobs) {
      if (jobs.length === 1) {
        jobs[0]!.out = await repo.insertCallWithHold(jobs[0]!.call, jobs[0]!.hold).catch((err: Error) => err);
        return;
      }
      try {
        const out = await sql.begin(async (tx) => {
          const held = await ledger.holdMany(
            jobs.map(({ call: c, hold: h }) => ({
              postingKey: h.postingKey,
              accountId: c.accountId,
              amount: h.amount,
              ttlSeconds: h.ttlSeconds,
              reference: h.reference,
              relatedEntityType: 'sip_call',
              relatedEntityId: c.id,
              callId: c.id,
            })),
            tx,
          );
          await repo.insertTrunkCalls(
            tx,
            jobs.flatMap((j, i) => {
              const r = held[i]!;
              return isRefusal(r) ? [] : [{ call: j.call, holdId: r.holdId }];
            }),
          );
          return held;
        });
        jobs.forEach((j, i) => (j.out = out[i]));
      } catch (err) {
        log.debug({ err, calls: jobs.length }, 'hold batch rolled back: calls held one by one');
        for (const j of jobs) j.out = await repo.insertCallWithHold(j.call, j.hold).catch((e: Error) => e);
      }
    },
  });
  async function holdCall(call: TrunkCallInsert, hold: TrunkHoldInput): Promise<TrunkHeld> {
    const job: HoldJob = { call, hold };
    await holdJobs.add(job);
    if (job.out instanceof Error) throw job.out;
    if (isRefusal(job.out!)) throw refusalError(job.out);
    return job.out!;
  }

  // Answered marks of a few ms share one UPDATE: the crash reconcile bills from answeredAt, and a
  // crash within the window loses only what a crash before a single mark's commit always lost.
  const answers = createWindowBatcher<{ id: string; routeId: string; answeredAt: Date }>({
    windowMs: BATCH_WINDOW_MS,
    maxBatch: 500,
    async run(marks) {
      try {
        await repo.markAnsweredMany(marks);
      } catch (err) {
        if (marks.length === 1) throw err;
        log.debug({ err, calls: marks.length }, 'answered marks batch failed: written one by one');
        const each = await Promise.allSettled(marks.map((m) => repo.markAnsweredMany([m])));
        const failed = each.find((r): r is PromiseRejectedResult => r.status === 'rejected');
        if (failed) throw failed.reason;
      }
    },
  });

  const policy: TrunkPolicy = {
    async resolveByIp(ip) {
      const accountId = await repo.accountByIp(ip.replace(/^::ffff:/, ''));
      return accountId ? { accountId } : null;
    },
    async lookupSipUser(username) {
      const cached = sipUsers.get(username);
      if (cached !== undefined) return cached;
      const found = await (async () => {
        const sub = await deps.application.lookupSipUser(username);
        if (sub)
          return {
            ha1: sub.ha1,
            accountId: sub.parentId ?? sub.accountId,
            ...(sub.parentId ? { subAccountId: sub.accountId } : {}),
          };
        const purchase = await repo.trunkCredential(username);
        if (purchase) return { ha1: purchase.ha1, accountId: purchase.accountId, purchaseId: purchase.purchaseId };
        return null;
      })();
      sipUsers.set(username, found);
      return found;
    },
    planCall: planTrunkCall,
    async onAnswered(e) {
      const marked = answers.add({ id: e.callGroupId, routeId: e.routeId, answeredAt: e.answeredAt });
      const call = live.get(e.callGroupId);
      if (call) call.marked = marked.catch(() => undefined);
      await marked;
    },
    onCallEnded: finishTrunkCall,
  };

  /**
   * Bills calls a dead daemon left open: answered ones to their last sign of life, others released.
   * `atStart`: before this daemon places any call, so its own API calls from before the restart
   * cannot be live and need not wait 90 s without a heartbeat.
   */
  async function reconcileOrphans(opts: { atStart?: boolean } = {}) {
    const staleBefore = new Date(clock.now().getTime() - 90_000);
    const rows = await repo.orphans(opts.atStart ? [deps.node, apiCallOwner(deps.node)] : [deps.node], staleBefore);
    let n = 0;
    for (const o of rows) {
      if (live.has(o.id)) continue;
      const p = o.routeId ? o.pricing?.routes[o.routeId] : undefined;
      const route = p
        ? {
            price: new Decimal(p.price),
            sellerRate: new Decimal(p.sellerRate),
            increment: requireIncrement(p.increment),
          }
        : undefined;
      const seen = o.answeredAt ? Math.max(0, Math.ceil((o.lastSeenAt.getTime() - o.answeredAt.getTime()) / 1000)) : 0;
      const duration = o.maxDurationSeconds ? Math.min(seen, o.maxDurationSeconds) : seen;
      const charge = route && o.answeredAt ? chargeLeg(route, duration, new Decimal(o.pricing?.markupPct ?? 0)) : null;
      const done = await sql
        .begin(async (tx) => {
          // Another daemon may be reconciling the same stale call: whoever locks the row does it, once.
          if (!(await repo.lockOpenCall(tx, o.id))) return false;
          if (o.holdId) {
            const settled = await deps.cdrs.settle(
              tx,
              settlement(
                { id: o.id, payer: o.accountId, holdId: o.holdId, operatorId: o.operatorId },
                o.routeId,
                charge,
                p?.sellerId,
              ),
            );
            if (settled.capReached) capReachedBy(o.accountId);
          }
          await deps.cdrs.insertCdrs(tx, [
            buildCdr({
              accountId: o.accountId,
              operatorId: o.operatorId,
              sellerId: p?.sellerId ?? null,
              callUuid: o.id,
              callGroupId: o.callGroupId,
              kind: 'voice',
              source: o.source,
              routeId: o.routeId,
              fromNumber: o.fromNumber,
              toNumber: o.toNumber,
              cli: o.fromNumber,
              status: o.answeredAt ? 'completed' : 'failed',
              sipCode: o.answeredAt ? 200 : null,
              hangupCause: 'crash',
              durationSeconds: duration,
              segments: null,
              pddMs: null,
              mediaMode: o.source === 'trunk' ? (p?.mediaMode ?? null) : null,
              billed: charge ? voiceBilled(charge) : null,
              answeredAt: o.answeredAt,
              endedAt: o.lastSeenAt,
              createdAt: o.createdAt,
            }),
          ]);
          await repo.finishCall(tx, o.id, {
            status: o.answeredAt ? 'completed' : 'failed',
            routeId: o.routeId,
            sipCode: o.answeredAt ? 200 : null,
            hangupCause: 'crash',
            hangupReason: HANGUP_REASONS['crash']!,
            durationSeconds: duration,
            billableSeconds: charge?.billableSeconds ?? 0,
            cost: charge?.total ?? '0.000000',
            billingIncrement: route?.increment.text ?? null,
            ratePerMinute: charge?.ratePerMinute ?? null,
            attempts: [],
            answeredAt: o.answeredAt,
            endedAt: o.lastSeenAt,
            error: o.answeredAt ? null : 'The exchange restarted before the call connected',
          });
          return true;
        })
        .catch((err: unknown) => {
          // One call that cannot be settled must not hold back the others.
          log.error({ err, callId: o.id }, 'orphan call reconcile failed');
          return false;
        });
      if (done) n++;
    }
    if (n) log.warn({ calls: n }, 'reconciled calls left open by a stopped daemon');
    return n;
  }

  return {
    repo,
    policy,
    /** The `calls` rows of calls placed through the API (the comms-calls module writes them through here). */
    records: {
      insertCall: repo.insertCall,
      markCall: repo.markCall,
      finishCall: repo.finishCall,
      heartbeat: repo.heartbeat,
    },
    /** Started with the module (LISTEN), stopped with it. */
    termsCache,
    reconcileOrphans,
    admitApiCall,
    releaseApiCall: (slots: string[]) => releaseSlots(slots),
    liveCallIds: () => [...live.keys()],
    /** Trunk calls refused before routing since start, by cause. */
    refusals: (): Record<string, number> => Object.fromEntries(refused),
    /** Counter shares this daemon really holds, for `Counters.reconcile`. */
    liveSlots(): Map<string, number> {
      return new Map(held);
    },
    async heartbeat() {
      await repo.heartbeat([...live.keys()], clock.now());
      // Only holds that could expire before the next passes: a hold outlives its call's maximum by
      // 10 minutes, so with thousands of calls held this is a few statements, not one per call.
      const now = clock.now().getTime();
      const ttl = config.sip.max_call_seconds + 600;
      for (const c of live.values()) {
        if (c.holdUntil - now > 5 * 60_000) continue;
        if (await ledger.extendHold(c.holdId, ttl).catch(() => false)) c.holdUntil = now + ttl * 1000;
      }
    },

    /** SIP credentials for a route purchase: username `pur_…`, password shown once, HA1 kept. */
    async purchaseCredentials(accountId: string, purchaseId: string, password: string, username: string) {
      await repo.upsertTrunkCredential({
        username,
        accountId,
        purchaseId,
        ha1: computeHa1(username, config.sip.primary_host, password),
      });
      sipUsers.delete(username);
    },
  };
}

export type SipTrunksService = ReturnType<typeof createSipTrunksService>;
