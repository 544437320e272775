/**
 * A call to a revenue share number that ended: priced (range rate, payout by origin, billing
 * increment), recorded, credited through the ledger and checked against the fraud rules, all in one
 * transaction. Money: docs/revenue-share.md "Money".
 */
import { Decimal } from 'decimal.js';
import type { Logger } from 'pino';
import type { Config } from '../../config/schema.js';
import type { Db, Sql } from '../../db/connection.js';
import { Money } from '../../ledger/money.js';
import { buildCdr, type CdrsService } from '../cdrs/index.js';
import type { Clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import { emit } from '../../webhooks/emit.js';
import type { CallContext, CallsRepo, CallStatusName } from './calls-repo.js';
import type { RevshareLedger } from './ledger-calls.js';

export interface EndedCall {
  numberId: string;
  sipCallId: string;
  /** Caller number digits (From user part); '' when none. */
  from: string;
  sourceIp: string;
  startedAt: Date;
  answeredAt: Date | null;
  endedAt: Date;
  sipCode: number;
  hangupCause: string;
}

export interface FraudRuleSet {
  windowMinutes: number;
  minSample: number;
  shortCallSeconds: number;
  maxShortCallRatio: number;
  maxSourceShare: number;
  maxCallsPerSource: number;
  maxCallsPerNumber: number;
}

/** The [revenue_share] defaults with a range's overrides on top. */
export function effectiveRules(cfg: Config['revenue_share'], overrides: Record<string, unknown>): FraudRuleSet {
  const base: FraudRuleSet = {
    windowMinutes: cfg.fraud_window_minutes,
    minSample: cfg.fraud_min_sample,
    shortCallSeconds: cfg.fraud_short_call_seconds,
    maxShortCallRatio: cfg.fraud_max_short_call_ratio,
    maxSourceShare: cfg.fraud_max_source_share,
    maxCallsPerSource: cfg.fraud_max_calls_per_source,
    maxCallsPerNumber: cfg.fraud_max_calls_per_number,
  };
  for (const k of Object.keys(base) as (keyof FraudRuleSet)[]) {
    const v = overrides[k];
    if (typeof v === 'number') base[k] = v;
  }
  return base;
}

/** Seconds billed for a connected duration: the first `initial` seconds, then whole `increment`s. */
export function billedSeconds(duration: number, initial: number, increment: number): number {
  if (duration <= 0) return 0;
  if (duration <= initial) return initial;
  return initial + Math.ceil((duration - initial) / increment) * increment;
}

/** The payout row for a caller number: the longest origin prefix it starts with ('' matches all). */
export function payoutFor(
  payouts: CallContext['payouts'],
  from: string,
): { origin: string; payoutPerMinute: string } | null {
  let best: { origin: string; payoutPerMinute: string } | null = null;
  for (const p of payouts) if (from.startsWith(p.origin) && (!best || p.origin.length > best.origin.length)) best = p;
  return best;
}

const perMinute = (rate: string, seconds: number) => Money.parse(rate).times(new Decimal(seconds).div(60));

export function createTraffic(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  repo: CallsRepo;
  ledger: RevshareLedger;
  settings: Config['revenue_share'];
  cdrs: Pick<CdrsService, 'insertCdrs'>;
}) {
  const { sql, repo, log } = deps;

  /** Runs the rules over the number's window; the first that trips opens (or joins) a flag. */
  async function checkFraud(tx: Db, ctx: CallContext, call: EndedCall, callId: string) {
    const rules = effectiveRules(deps.settings, ctx.fraudRules);
    const since = new Date(call.startedAt.getTime() - rules.windowMinutes * 60_000);
    const w = await repo.windowCounts(tx, ctx.numberId, since, call.from, rules.shortCallSeconds);
    const total = Number(w.total);
    const answered = Number(w.answered);
    let rule: string | null = null;
    let detail: Record<string, unknown> = {};
    if (total > rules.maxCallsPerNumber) {
      rule = 'velocity_number';
      detail = { calls: total, limit: rules.maxCallsPerNumber };
    } else if (Number(w.fromSource) > rules.maxCallsPerSource) {
      rule = 'velocity_source';
      detail = { calls: Number(w.fromSource), limit: rules.maxCallsPerSource, source: call.from };
    } else if (answered >= rules.minSample && Number(w.short) / answered > rules.maxShortCallRatio) {
      rule = 'short_calls';
      detail = {
        shortCalls: Number(w.short),
        answered,
        ratio: Number(w.short) / answered,
        limit: rules.maxShortCallRatio,
      };
    } else if (total >= rules.minSample && Number(w.topSource) / total > rules.maxSourceShare) {
      rule = 'source_dominance';
      detail = {
        topSourceCalls: Number(w.topSource),
        calls: total,
        share: Number(w.topSource) / total,
        limit: rules.maxSourceShare,
      };
    }
    if (!rule || !ctx.holderId) return null;
    const flag = await repo.openFlag(tx, {
      id: newId(),
      holderId: ctx.holderId,
      rangeId: ctx.rangeId,
      numberId: ctx.numberId,
      rule,
      detail: { ...detail, windowMinutes: rules.windowMinutes },
      at: deps.clock.now(),
    });
    await repo.flagCalls(tx, ctx.numberId, since, flag.id);
    if (flag.created) {
      const data = {
        flagId: flag.id,
        numberId: ctx.numberId,
        number: ctx.number,
        rangeId: ctx.rangeId,
        rule,
        detail,
        callId,
      };
      if (ctx.notifyFraud) await emit(tx, { accountId: ctx.holderId, event: 'revenue_share.fraud_flagged', data });
      await emit(tx, { accountId: ctx.supplierId, event: 'revenue_share.fraud_flagged', data });
      log.warn({ flagId: flag.id, numberId: ctx.numberId, rule }, 'revenue share fraud rule tripped');
    }
    return flag.id;
  }

  /**
   * The call in the shared `cdrs` table (`GET /billing/cdrs`), for the holder, inbound, source
   * `revenue_share`, in the recording transaction. Its money columns are zero: the holder pays
   * nothing, its earnings are in the ledger (`revshare_held`) and in `revshare_calls`, so a sum over
   * CDRs (spend, sales, a seller's credits) never counts them a second time.
   */
  function writeCdr(tx: Db, holderId: string, number: string, id: string, call: EndedCall, duration: number) {
    return deps.cdrs.insertCdrs(tx, [
      buildCdr({
        direction: 'inbound',
        accountId: holderId,
        operatorId: null,
        sellerId: null,
        callUuid: id,
        callGroupId: id,
        kind: 'voice',
        source: 'revenue_share',
        routeId: null,
        fromNumber: call.from || null,
        toNumber: number,
        cli: call.from || null,
        status: call.answeredAt ? 'completed' : 'failed',
        sipCode: call.sipCode,
        hangupCause: call.hangupCause,
        durationSeconds: duration,
        segments: null,
        pddMs: null,
        mediaMode: null,
        billed: null,
        answeredAt: call.answeredAt,
        endedAt: call.endedAt,
        createdAt: deps.clock.now(),
      }),
    ]);
  }

  /**
   * Records an ended call once (a repeated SIP Call-ID for the same number is ignored) inside `tx`,
   * removing its live row (crash.ts); returns the call id.
   */
  async function recordIn(tx: Db, call: EndedCall): Promise<string | null> {
    await repo.forgetLive(tx, call);
    const ctx = await repo.context(tx, call.numberId);
    if (!ctx) return null;
    const durationMs = call.answeredAt ? call.endedAt.getTime() - call.answeredAt.getTime() : 0;
    const duration = Math.max(0, Math.ceil(durationMs / 1000));
    const billed = billedSeconds(duration, ctx.billingInitial, ctx.billingIncrement);
    const row = payoutFor(ctx.payouts, call.from);
    const earning = call.answeredAt !== null && !ctx.isTest && ctx.holderId !== null;
    const payoutRate = earning && row ? row.payoutPerMinute : '0';
    const charge = earning ? perMinute(ctx.ratePerMinute, billed) : Money.zero;
    const payout = earning ? perMinute(payoutRate, billed) : Money.zero;
    let status: CallStatusName = !call.answeredAt ? 'unanswered' : ctx.isTest ? 'test' : 'held';
    if (status === 'held' && payout.isZero()) status = 'released';
    const flagId = status === 'held' && ctx.openFlag ? ctx.openFlag : null;
    if (flagId) status = 'flagged';
    const id = newId();
    const fresh = await repo.insertCall(tx, {
      id,
      numberId: ctx.numberId,
      rangeId: ctx.rangeId,
      holderId: ctx.isTest ? null : ctx.holderId,
      supplierId: ctx.supplierId,
      sipCallId: call.sipCallId,
      fromNumber: call.from,
      origin: row?.origin ?? null,
      sourceIp: call.sourceIp,
      startedAt: call.startedAt,
      answeredAt: call.answeredAt,
      endedAt: call.endedAt,
      durationSeconds: duration,
      billedSeconds: billed,
      ratePerMinute: ctx.ratePerMinute,
      payoutPerMinute: payoutRate,
      charge: charge.toString(),
      payout: payout.toString(),
      status,
      sipCode: call.sipCode,
      hangupCause: call.hangupCause,
      releaseAt: earning ? new Date(call.endedAt.getTime() + ctx.holdDays * 86_400_000) : null,
      flagId,
      createdAt: deps.clock.now(),
    });
    if (!fresh) return null;
    if (!ctx.isTest && ctx.holderId !== null) await writeCdr(tx, ctx.holderId, ctx.number, id, call, duration);
    if (earning && charge.isPositive()) {
      const posting = await deps.ledger.credit(tx, {
        key: `revshare:call:${id}`,
        holderId: ctx.holderId!,
        charge: charge.toString(),
        payout: payout.toString(),
        callId: id,
        reference: ctx.number,
        at: call.endedAt,
      });
      await repo.setPosting(tx, id, posting.postingId);
    }
    if (earning && !flagId) await checkFraud(tx, ctx, call, id);
    return id;
  }

  return {
    recordIn,
    /** `recordIn` in its own transaction. */
    record: (call: EndedCall): Promise<string | null> => sql.begin((tx) => recordIn(tx, call)),
  };
}

export type Traffic = ReturnType<typeof createTraffic>;
