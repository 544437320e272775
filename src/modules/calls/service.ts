import { Decimal } from 'decimal.js';
import type { Logger } from 'pino';
import postgres from 'postgres';
import { Counter, register } from 'prom-client';
import type { Config } from '../../config/schema.js';
import type { Db, Sql } from '../../db/connection.js';
import { AppError } from '../../http/errors.js';
import type { Ledger } from '../../ledger/index.js';
import type { Clock } from '../../platform/clock.js';
import type { Counters } from '../../platform/counters.js';
import { newId } from '../../platform/ids.js';
import { requireIncrement } from '../../rating/index.js';
import type { CallEndedEvent, CallPlan, PlanCallInput, TrunkPolicy } from '../../telephony/sip/b2bua.js';
import { computeHa1 } from '../../telephony/sip/index.js';
import type { AccountsService } from '../accounts/service.js';
import type { ApplicationService } from '../application/service.js';
import type { Candidate } from '../routes/index.js';
import type { Routing } from '../routes/routing.js';
import { affordableSeconds, chargeLeg, holdFor, type PricedRoute } from './call-charge.js';
import { createCallsRepo, type CdrInsert, type OrphanPricing } from './repo.js';

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
  priced: Map<string, PricedRoute & { sellerId: string }>;
}

export interface CallsDeps {
  sql: Sql;
  log: Logger;
  clock: Clock;
  config: Readonly<Config>;
  ledger: Ledger;
  routing: Routing;
  accounts: AccountsService;
  application: ApplicationService;
  counters: Counters;
  node: string;
  /** Endpoints the OPTIONS health checks have marked down (skipped when routing). */
  endpointDown?: (e: { host: string; port: number; transport: string }) => boolean;
}

/**
 * The voice plane's business side: who pays for a trunk call, which routes it may take, the
 * hold that bounds it, and at the end the settlement and one CDR per leg in one transaction.
 */
export function createCallsService(deps: CallsDeps) {
  const { sql, log, clock, config, ledger } = deps;
  const repo = createCallsRepo(sql);
  const live = new Map<string, LiveCall>();
  // Refused trunk calls by cause (issue 8: "over a limit the call is refused ... and counted").
  const refused = new Map<string, number>();
  const refusedMetric = (register.getSingleMetric('svc_sip_calls_refused_total') as Counter<'cause'> | undefined) ??
    new Counter({ name: 'svc_sip_calls_refused_total', help: 'SIP trunk calls refused before routing, by cause', labelNames: ['cause'] });
  const refuse = (cause: string, status: number, reason: string): CallPlan => {
    refused.set(cause, (refused.get(cause) ?? 0) + 1);
    refusedMetric.inc({ cause });
    return { reject: { status, reason } };
  };

  /** Status, operator, markup and concurrency cap of the paying account. */
  const payerTerms = async (accountId: string) => {
    const account = await deps.accounts.getAccount(accountId);
    if (!account) return null;
    if (!account.parentId) return { status: account.status, parentId: null, markupPct: new Decimal(0), maxConcurrentCalls: null as number | null };
    const sub = await deps.application.get(account.parentId, accountId);
    const settings = await deps.application.settings(account.parentId);
    const pct = sub.markupPct ?? settings.defaultMarkupPct ?? 0;
    return { status: account.status, parentId: account.parentId, markupPct: new Decimal(pct), maxConcurrentCalls: sub.maxConcurrentCalls ?? null };
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
  async function acquireAll(wanted: { key: string; limit: number }[]): Promise<{ ok: true; slots: string[] } | { ok: false; key: string }> {
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

  async function planTrunkCall(input: PlanCallInput): Promise<CallPlan> {
    const payer = input.subAccountId ?? input.accountId;
    const account = await payerTerms(payer);
    if (!account || account.status === 'closed') return refuse('account', 403, 'Account closed');
    if (account.status === 'suspended' || (await ledger.capSuspended(payer))) {
      return refuse('suspended', 403, 'Account suspended (daily spend cap or operator)');
    }
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
    candidates = covering.map((c) => ({ ...c, endpoints: c.endpoints.filter((e) => !isDown(e)) })).filter((c) => c.endpoints.length > 0);
    if (candidates.length === 0) return refuse('endpoints-down', 503, 'Every supplier endpoint for this number is down');

    const terms = new Map((await repo.routeTerms(candidates.map((c) => c.routeId))).map((t) => [t.id, t]));
    const wanted: { key: string; limit: number }[] = [];
    if (account.maxConcurrentCalls !== null && account.maxConcurrentCalls !== undefined) {
      wanted.push({ key: `acct:${payer}`, limit: account.maxConcurrentCalls });
    }
    if (config.sip.max_calls_per_account > 0) wanted.push({ key: `acct-all:${routingAccount}`, limit: config.sip.max_calls_per_account });
    const taken = await acquireAll(wanted);
    if (!taken.ok) return refuse('concurrency', 503, 'Concurrent call limit reached');

    // Routes at capacity are skipped, as a supplier would refuse them anyway.
    const usable: Candidate[] = [];
    const slots = [...taken.slots];
    for (const c of candidates) {
      const t = terms.get(c.routeId);
      // Over its calls-per-second this second: the route is skipped like a full one (the next may take it).
      if (t?.maxCps && !(await deps.counters.rate(`cps:${c.routeId}`, t.maxCps))) continue;
      if (t?.capacity) {
        const got = await acquireAll([{ key: `route:${c.routeId}`, limit: t.capacity }]);
        if (!got.ok) continue;
        slots.push(...got.slots);
      }
      usable.push(c);
    }
    if (usable.length === 0) {
      await releaseSlots(slots);
      return refuse('capacity', 503, 'Route capacity or calls-per-second limit reached');
    }

    const markupPct = account.markupPct;
    const priced = new Map(usable.map((c) => [c.routeId, { price: c.price, sellerRate: c.sellerRate, increment: c.increment, sellerId: terms.get(c.routeId)?.sellerId ?? '' }]));
    const balance = await ledger.balanceOf(payer);
    const seconds = affordableSeconds(new Decimal(balance.available), [...priced.values()], markupPct, config.sip.max_call_seconds);
    if (seconds <= 0) {
      await releaseSlots(slots);
      return refuse('balance', 402, 'Insufficient balance');
    }
    const callGroupId = newId();
    let holdId: string;
    try {
      const hold = await ledger.hold({
        postingKey: `call:${callGroupId}:hold`,
        accountId: payer,
        amount: holdFor(seconds, [...priced.values()], markupPct),
        ttlSeconds: seconds + 600,
        reference: `SIP call to ${input.to.slice(0, 4)}…`,
        relatedEntityType: 'sip_call',
        relatedEntityId: callGroupId,
        callId: callGroupId,
      });
      holdId = hold.holdId;
    } catch (err) {
      await releaseSlots(slots);
      if (err instanceof postgres.PostgresError && err.code === 'SVC01') return refuse('balance', 402, 'Insufficient balance');
      throw err;
    }
    const pricing: OrphanPricing = {
      markupPct: markupPct.toFixed(3),
      routes: Object.fromEntries([...priced].map(([id, p]) => [id, { price: p.price.toFixed(6), sellerRate: p.sellerRate.toFixed(6), increment: p.increment.text, sellerId: p.sellerId }])),
    };
    // In `live` before the row exists, so a concurrent orphan reconcile never takes it for a dead daemon's call.
    live.set(callGroupId, { id: callGroupId, payer, operatorId, holdId, maxDurationSeconds: seconds, slots, markupPct, priced });
    try {
      await repo.insertCall({
        id: callGroupId, accountId: payer, operatorId, source: 'trunk', mode: 'trunk', status: 'ringing', toNumber: input.to,
        fromNumber: input.from, callGroupId, holdId, maxDurationSeconds: seconds, pricing, ownerNode: deps.node, now: clock.now(),
      });
    } catch (err) {
      live.delete(callGroupId);
      await ledger.release({ postingKey: `call:${callGroupId}:release`, holdId }).catch((e: unknown) => log.error({ err: e, callGroupId }, 'hold release failed'));
      await releaseSlots(slots);
      throw err;
    }
    return {
      callGroupId,
      maxDurationSeconds: seconds,
      candidates: usable.map((c) => ({
        routeId: c.routeId,
        endpoints: c.endpoints.map((e) => ({
          host: e.host,
          port: e.port,
          transport: e.transport === 'tcp' ? 'tcp' : 'udp',
          techPrefix: e.techPrefix,
          ...(e.username ? { username: e.username } : {}),
          ...(e.password ? { password: e.password } : {}),
          priority: e.priority,
          weight: e.weight,
        })),
      })),
    };
  }

  /** Settles the hold (or releases it) and writes the call and its CDRs in one transaction. */
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
    const status = e.answeredAt ? 'completed' : e.sipCode === 486 || e.sipCode === 600 ? 'busy' : e.hangupCause === 'no-answer' || e.sipCode === 480 || e.sipCode === 487 ? 'no_answer' : 'failed';
    try {
      await sql.begin(async (tx) => {
        // A stale-call reconcile on another daemon may hold it: then that one settles it.
        if (!(await repo.lockOpenCall(tx, e.callGroupId))) return;
        await settleOrRelease(tx, call, e.routeId, charge);
        const endedAt = e.endedAt;
        const rows: CdrInsert[] = e.attempts.map((a) => {
          const connected = a.outcome === 'answered' && a.routeId === e.routeId && charge !== null;
          const priced = call.priced.get(a.routeId);
          return {
            id: newId(), accountId: call.payer, operatorId: call.operatorId, sellerId: priced?.sellerId || null, callUuid: e.callGroupId,
            callGroupId: e.callGroupId, direction: 'outbound', kind: 'voice', source: 'trunk', routeId: a.routeId,
            fromNumber: e.from, toNumber: e.to, cli: e.from,
            status: connected ? 'completed' : a.outcome === 'answered' ? 'completed' : a.outcome,
            sipCode: a.sipCode, hangupCause: connected ? e.hangupCause : a.reason,
            durationSeconds: connected ? duration : 0, billedSeconds: connected ? charge.billableSeconds : 0, segments: null,
            // The B2BUA does not report when ringing began, so no post-dial delay yet.
            pddMs: null,
            buyerCost: connected ? charge.total : '0.000000', sellerCredit: connected ? charge.seller : '0.000000',
            ratePerUnit: connected ? charge.ratePerMinute : null, simulated: false, isProbe: false,
            answeredAt: connected ? e.answeredAt : null, endedAt, createdAt: a.startedAt,
          };
        });
        await repo.insertCdrs(rows, tx);
        await repo.finishCall(tx, e.callGroupId, {
          status, routeId: e.routeId, sipCode: e.sipCode, hangupCause: e.hangupCause, hangupReason: HANGUP_REASONS[e.hangupCause] ?? e.hangupCause,
          durationSeconds: e.answeredAt ? duration : 0, billableSeconds: charge?.billableSeconds ?? 0, cost: charge?.total ?? '0.000000',
          billingIncrement: route?.increment.text ?? null, ratePerMinute: charge?.ratePerMinute ?? null,
          attempts: e.attempts.map((a, i) => ({ attempt: i + 1, routeId: a.routeId, status: a.outcome, sipResponseCode: a.sipCode, hangupCause: a.reason })),
          answeredAt: e.answeredAt, endedAt,
        });
      });
    } catch (err) {
      // Left open in the database: the next housekeeping pass reconciles it as this node's orphan.
      log.error({ err, callGroupId: e.callGroupId }, 'call settlement failed; left to the orphan reconcile');
    }
    live.delete(e.callGroupId);
    await releaseSlots(call.slots);
  }

  async function settleOrRelease(tx: Db, call: { id: string; payer: string; holdId: string; operatorId: string | null }, routeId: string | null,
    charge: ReturnType<typeof chargeLeg> | null, sellerId?: string) {
    if (!charge || charge.billableSeconds === 0) {
      await ledger.release({ postingKey: `call:${call.id}:release`, holdId: call.holdId }, tx);
      return;
    }
    const seller = sellerId ?? live.get(call.id)?.priced.get(routeId ?? '')?.sellerId ?? null;
    const ctx = { reference: 'Voice call', relatedEntityType: 'sip_call', relatedEntityId: call.id, callId: call.id };
    await ledger.settle({ postingKey: `call:${call.id}:settle`, holdId: call.holdId, sellerId: seller || null, amount: charge.seller, fee: charge.fee, ...ctx }, tx);
    // The reseller's margin: in the same transaction the settle's lock on the payer is still held,
    // so the released hold is there to pay it.
    if (call.operatorId && new Decimal(charge.markup).gt(0)) {
      await ledger.charge({ postingKey: `call:${call.id}:markup`, accountId: call.payer, sellerId: call.operatorId, amount: charge.markup, ...ctx }, tx);
    }
  }

  const policy: TrunkPolicy = {
    async resolveByIp(ip) {
      const accountId = await repo.accountByIp(ip.replace(/^::ffff:/, ''));
      return accountId ? { accountId } : null;
    },
    async lookupSipUser(username) {
      const sub = await deps.application.lookupSipUser(username);
      if (sub) return { ha1: sub.ha1, accountId: sub.parentId ?? sub.accountId, ...(sub.parentId ? { subAccountId: sub.accountId } : {}) };
      const purchase = await repo.trunkCredential(username);
      if (purchase) return { ha1: purchase.ha1, accountId: purchase.accountId, purchaseId: purchase.purchaseId };
      return null;
    },
    planCall: planTrunkCall,
    async onAnswered(e) {
      await repo.markCall(e.callGroupId, { status: 'answered', routeId: e.routeId, answeredAt: e.answeredAt });
    },
    onCallEnded: finishTrunkCall,
  };

  /** Bills calls a dead daemon left open: answered ones to their last sign of life, others released. */
  async function reconcileOrphans() {
    const staleBefore = new Date(clock.now().getTime() - 90_000);
    const rows = await repo.orphans(deps.node, staleBefore);
    let n = 0;
    for (const o of rows) {
      if (live.has(o.id)) continue;
      const p = o.routeId ? o.pricing?.routes[o.routeId] : undefined;
      const route = p ? { price: new Decimal(p.price), sellerRate: new Decimal(p.sellerRate), increment: requireIncrement(p.increment) } : undefined;
      const seen = o.answeredAt ? Math.max(0, Math.ceil((o.lastSeenAt.getTime() - o.answeredAt.getTime()) / 1000)) : 0;
      const duration = o.maxDurationSeconds ? Math.min(seen, o.maxDurationSeconds) : seen;
      const charge = route && o.answeredAt ? chargeLeg(route, duration, new Decimal(o.pricing?.markupPct ?? 0)) : null;
      const done = await sql.begin(async (tx) => {
        // Another daemon may be reconciling the same stale call: whoever locks the row does it, once.
        if (!(await repo.lockOpenCall(tx, o.id))) return false;
        if (o.holdId) await settleOrRelease(tx, { id: o.id, payer: o.accountId, holdId: o.holdId, operatorId: o.operatorId }, o.routeId, charge, p?.sellerId);
        await repo.insertCdrs([{
          id: newId(), accountId: o.accountId, operatorId: o.operatorId, sellerId: p?.sellerId || null, callUuid: o.id, callGroupId: o.callGroupId,
          direction: 'outbound', kind: 'voice', source: o.source, routeId: o.routeId, fromNumber: o.fromNumber, toNumber: o.toNumber,
          cli: o.fromNumber, status: o.answeredAt ? 'completed' : 'failed', sipCode: o.answeredAt ? 200 : null, hangupCause: 'crash',
          durationSeconds: duration, billedSeconds: charge?.billableSeconds ?? 0, segments: null, pddMs: null,
          buyerCost: charge?.total ?? '0.000000', sellerCredit: charge?.seller ?? '0.000000', ratePerUnit: charge?.ratePerMinute ?? null,
          simulated: false, isProbe: false, answeredAt: o.answeredAt, endedAt: o.lastSeenAt, createdAt: o.createdAt,
        }], tx);
        await repo.finishCall(tx, o.id, {
          status: o.answeredAt ? 'completed' : 'failed', routeId: o.routeId, sipCode: o.answeredAt ? 200 : null, hangupCause: 'crash',
          hangupReason: HANGUP_REASONS['crash']!, durationSeconds: duration, billableSeconds: charge?.billableSeconds ?? 0,
          cost: charge?.total ?? '0.000000', billingIncrement: route?.increment.text ?? null, ratePerMinute: charge?.ratePerMinute ?? null,
          attempts: [], answeredAt: o.answeredAt, endedAt: o.lastSeenAt, error: o.answeredAt ? null : 'The exchange restarted before the call connected',
        });
        return true;
      }).catch((err: unknown) => {
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
    reconcileOrphans,
    liveCallIds: () => [...live.keys()],
    /** Trunk calls refused before routing since start, by cause. */
    refusals: (): Record<string, number> => Object.fromEntries(refused),
    /** Counter shares this daemon really holds, for `Counters.reconcile`. */
    liveSlots(): Map<string, number> {
      return new Map(held);
    },
    async heartbeat() {
      await repo.heartbeat([...live.keys()], clock.now());
      for (const c of live.values()) await ledger.extendHold(c.holdId, config.sip.max_call_seconds + 600).catch(() => false);
    },

    /** SIP credentials for a route purchase: username `pur_…`, password shown once, HA1 kept. */
    async purchaseCredentials(accountId: string, purchaseId: string, password: string, username: string) {
      await repo.upsertTrunkCredential({ username, accountId, purchaseId, ha1: computeHa1(username, config.sip.primary_host, password) });
    },
  };
}

export type CallsService = ReturnType<typeof createCallsService>;
