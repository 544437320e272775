import { Decimal } from 'decimal.js';
import type { Logger } from 'pino';
import type { Sql } from '../../db/connection.js';
import { CHARGE_BATCH_MAX, isRefusal, refusalError } from '../../ledger/ledger.js';
import { toMoney } from '../../rating/index.js';
import type { CallEndedEvent, TrunkPolicy } from '../../telephony/sip/b2bua/index.js';
import {
  agreementOf,
  buildCdr,
  chargeLeg,
  voiceBilled,
  type CdrInsert,
  type CdrsService,
  type LegCharge,
  type Settlement,
} from '../cdrs/index.js';
import { pricedLeg, type LiveCall, type LiveCalls, type PricedLeg } from './live-calls.js';
import type { PayerHints } from './payer-hints.js';
import type { CallsRepo, FinishRow } from './repo.js';
import type { Slots } from './slots.js';
import { createWindowBatcher } from './window-batcher.js';
import { emitMany, type EmitInput } from '../../webhooks/emit.js';

/** Plain words for the hang-up causes the trunk B2BUA reports. */
export const HANGUP_REASONS: Record<string, string> = {
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

/**
 * A call's settlement: the route's seller paid its rate, the platform its fee, the rest of the hold
 * released; `alongside`, a forwarded number call's inbound minutes paid to the number's seller from it.
 */
export function callSettlement(
  call: { id: string; payer: string; holdId: string; operatorId: string | null },
  sellerId: string | null,
  charge: LegCharge | null,
  alongside?: { sellerId: string; charge: LegCharge } | null,
): Settlement {
  return {
    ...(alongside ? { alongside } : {}),
    key: `call:${call.id}`,
    holdId: call.holdId,
    payer: call.payer,
    operatorId: call.operatorId,
    sellerId,
    charge,
    context: {
      reference: 'Voice call',
      relatedEntityType: 'sip_call',
      relatedEntityId: call.id,
      callId: call.id,
    },
  };
}

/**
 * The answered leg's charge. An AI agent that answered a number's call and then transferred the
 * caller earns its fee for its own seconds only (in the leg's increments): the whole call at the price
 * without the fee, plus the fee over the agent's part. The fee is the platform's, as on arrival.
 */
export function answeredCharge(
  route: Pick<PricedLeg, 'price' | 'sellerRate' | 'increment' | 'markupPct' | 'agentFee' | 'sell'>,
  durationSeconds: number,
  markupPct: Decimal,
  agentSeconds: number | null,
): LegCharge {
  if (!route.agentFee || agentSeconds === null) return chargeLeg(route, durationSeconds, markupPct);
  const rest = chargeLeg({ ...route, price: route.price.minus(route.agentFee) }, durationSeconds, markupPct);
  const agent = chargeLeg(
    { price: route.agentFee, sellerRate: new Decimal(0), increment: route.increment, markupPct: route.markupPct },
    Math.min(agentSeconds, durationSeconds),
    markupPct,
  );
  const sum = (k: 'total' | 'seller' | 'fee' | 'markup') => toMoney(new Decimal(rest[k]).plus(agent[k]));
  return {
    billableSeconds: rest.billableSeconds,
    // The price the caller paid once handed over; the total tells the agent's minutes apart.
    ratePerMinute: rest.ratePerMinute,
    total: sum('total'),
    seller: sum('seller'),
    fee: sum('fee'),
    markup: sum('markup'),
  };
}

/** Whole seconds from the answer to the AI agent's transfer; null while no transfer happened. */
export function agentSecondsOf(answeredAt: Date | null, agentLeftAt: Date | undefined | null): number | null {
  if (!answeredAt || !agentLeftAt) return null;
  return Math.max(0, Math.ceil((agentLeftAt.getTime() - answeredAt.getTime()) / 1000));
}

/** One ended trunk call's writes: its call row, one CDR per leg, and the money. */
interface Finish {
  call: LiveCall;
  /** The answered leg's seller (its route's, or the backup's route's). */
  sellerId: string | null;
  row: FinishRow;
  cdrs: CdrInsert[];
  charge: LegCharge | null;
  /** A forwarded number call's inbound minutes, paid from the same hold. */
  inbound: { sellerId: string; charge: LegCharge } | null;
  /** `number.call.received` of a call for a rented number, emitted with the settlement. */
  event: EmitInput | null;
}

/** The renter's `number.call.received`: how its number's call was handled and what it cost. */
function numberCallEvent(call: LiveCall, e: CallEndedEvent, row: FinishRow, reached: string): EmitInput | null {
  const n = call.number;
  if (!n) return null;
  const answered = e.attempts.find((a) => a.outcome === 'answered');
  const handledBy = n.local && answered?.index === n.local.attempt ? n.local.kind : n.handledBy;
  return {
    accountId: call.payer,
    event: 'number.call.received',
    at: e.endedAt,
    data: {
      didId: n.didId,
      callId: e.callGroupId,
      number: n.number,
      from: e.from,
      to: reached,
      handledBy,
      status: row.status,
      durationSeconds: row.durationSeconds,
      cost: row.cost,
      startedAt: e.startedAt.toISOString(),
      answeredAt: e.answeredAt?.toISOString() ?? null,
      endedAt: e.endedAt.toISOString(),
    },
  };
}

/**
 * The CDR of a forwarded number call's inbound leg (`direction: inbound`, route the DID, seller the
 * number's): the caller's call to the number, billed for the forward's connected seconds.
 */
export function inboundCdr(
  call: Pick<LiveCall, 'payer' | 'operatorId'>,
  leg: { routeId: string; sellerId: string; number: string },
  e: Pick<CallEndedEvent, 'callGroupId' | 'from' | 'answeredAt' | 'endedAt' | 'startedAt'> & {
    sipCode: number | null;
    /** A B2BUA hang-up cause, or `crash` from the orphan reconcile. */
    hangupCause: string;
  },
  status: string,
  charge: LegCharge | null,
  durationSeconds: number,
): CdrInsert {
  return buildCdr({
    direction: 'inbound',
    accountId: call.payer,
    operatorId: call.operatorId,
    sellerId: leg.sellerId,
    callUuid: e.callGroupId,
    callGroupId: e.callGroupId,
    kind: 'voice',
    source: 'trunk',
    routeId: leg.routeId,
    fromNumber: e.from,
    toNumber: leg.number,
    cli: e.from,
    status,
    sipCode: e.sipCode,
    hangupCause: e.hangupCause,
    durationSeconds,
    segments: null,
    pddMs: null,
    mediaMode: 'direct',
    billed: charge ? voiceBilled(charge) : null,
    answeredAt: charge ? e.answeredAt : null,
    endedAt: e.endedAt,
    createdAt: e.startedAt,
  });
}

/**
 * The end of a live trunk call: its answered mark, then its settlement (or release), its call row
 * and one CDR per leg. Marks and finishes of a few ms share one statement and one commit; the
 * finishes go through the cdrs service's `settleMany`.
 */
export function createFinishing(deps: {
  sql: Sql;
  log: Logger;
  repo: CallsRepo;
  cdrs: CdrsService;
  live: LiveCalls;
  slots: Slots;
  hints: PayerHints;
  /** How long answered marks and call finishes wait for others to share their statement and commit. */
  batchWindowMs: number;
}) {
  const { sql, log, repo, live } = deps;

  // Answered marks of a few ms share one UPDATE: the crash reconcile bills from answeredAt, and a
  // crash within the window loses only what a crash before a single mark's commit always lost.
  const answers = createWindowBatcher<{ id: string; routeId: string; answeredAt: Date; toNumber?: string }>({
    windowMs: deps.batchWindowMs,
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

  const onAnswered: NonNullable<TrunkPolicy['onAnswered']> = async (e) => {
    const call = live.get(e.callGroupId);
    // A forward's backup: the row names the number reached from the answer on.
    const to = call ? pricedLeg(call, e.attempt, e.routeId)?.to : undefined;
    const marked = answers.add({
      id: e.callGroupId,
      routeId: e.routeId,
      answeredAt: e.answeredAt,
      ...(to === undefined ? {} : { toNumber: to }),
    });
    if (call) call.marked = marked.catch(() => undefined);
    await marked;
  };

  /**
   * Settles the hold (or releases it) and writes the call and its CDRs in one transaction: the
   * calls ended within a few ms share it (one commit, one CDR statement), each still all or nothing.
   */
  async function onCallEnded(e: CallEndedEvent) {
    const call = live.get(e.callGroupId);
    if (!call) {
      log.warn({ callGroupId: e.callGroupId }, 'call ended that this daemon did not plan');
      return;
    }
    const answered = e.attempts.find((a) => a.outcome === 'answered' && a.routeId === e.routeId);
    const route = e.routeId ? pricedLeg(call, answered?.index ?? 0, e.routeId) : undefined;
    // The session timer fires at maxDuration; the BYE's few ms past it must not bill (or hold) one more block.
    const duration = Math.min(Math.ceil(e.durationMs / 1000), call.maxDurationSeconds);
    const agentSeconds = agentSecondsOf(e.answeredAt, call.number?.agentLeftAt);
    const charge = route && e.answeredAt ? answeredCharge(route, duration, call.markupPct, agentSeconds) : null;
    // A forwarded call's voicemail is the number's own leg: its inbound minutes are that leg's, not alongside.
    const atNumber = (routeId: string) => call.number !== undefined && routeId === call.number.didId;
    const leg = e.attempts.some((a) => atNumber(a.routeId)) ? undefined : call.inboundLeg;
    const inbound =
      leg && charge && route?.alongside
        ? { sellerId: leg.sellerId, charge: chargeLeg(leg, duration, call.markupPct) }
        : null;
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
      const priced = pricedLeg(call, a.index, a.routeId);
      const own = atNumber(a.routeId);
      return buildCdr({
        direction: call.direction ?? (own ? 'inbound' : undefined),
        accountId: call.payer,
        operatorId: call.operatorId,
        // A leg with no seller (a forward to a SIP address) names none.
        sellerId: priced?.sellerId || null,
        callUuid: e.callGroupId,
        callGroupId: e.callGroupId,
        kind: 'voice',
        source: 'trunk',
        routeId: a.routeId,
        fromNumber: e.from,
        toNumber: own ? call.number!.number : (priced?.to ?? e.to),
        cli: e.from,
        status: connected ? 'completed' : a.outcome === 'answered' ? 'completed' : a.outcome,
        sipCode: a.sipCode,
        hangupCause: connected ? e.hangupCause : a.reason,
        durationSeconds: connected ? duration : 0,
        segments: null,
        pddMs: a.pddMs,
        mediaMode: priced?.mediaMode ?? null,
        billed: connected ? voiceBilled(charge) : null,
        agreement: connected && priced ? agreementOf(priced) : undefined,
        answeredAt: connected ? e.answeredAt : null,
        endedAt,
        createdAt: a.startedAt,
      });
    });
    if (leg) cdrs.push(inboundCdr(call, leg, e, status, inbound?.charge ?? null, charge ? duration : 0));
    const row: FinishRow = {
      id: e.callGroupId,
      status,
      routeId: e.routeId,
      ...(route?.to === undefined || !e.answeredAt ? {} : { toNumber: route.to }),
      sipCode: e.sipCode,
      hangupCause: e.hangupCause,
      hangupReason: HANGUP_REASONS[e.hangupCause] ?? e.hangupCause,
      durationSeconds: e.answeredAt ? duration : 0,
      billableSeconds: charge?.billableSeconds ?? 0,
      // Both legs when a forwarded number call's inbound minutes ride on it (each leg's own on its CDR).
      cost: inbound ? toMoney(new Decimal(charge!.total).plus(inbound.charge.total)) : (charge?.total ?? '0.000000'),
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
    await finishes.add({
      call,
      sellerId: route?.sellerId ?? null,
      row,
      cdrs,
      charge,
      inbound,
      event: numberCallEvent(call, e, row, (e.answeredAt ? route?.to : undefined) ?? e.to),
    });
    live.delete(e.callGroupId);
    await deps.slots.release(call.slots);
  }

  /** One transaction for a batch of ended calls; when it fails, each call again in its own. */
  async function finishBatch(items: Finish[]) {
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
        // A call without a hold (free inbound minutes on a number) has nothing to settle.
        const held = mine.filter((f) => f.call.holdId !== '');
        // Pipelined on the transaction's connection: one round trip instead of one per statement. The
        // ledger last, so the payer's balance row (every call of that payer waits on it) stays locked shortest.
        // Two or more settlements go in one ledger_settle_many (each payer's row moved once).
        const [, , settled] = await Promise.all([
          deps.cdrs.insertCdrs(
            tx,
            mine.flatMap((f) => f.cdrs),
          ),
          emitMany(
            tx,
            mine.flatMap((f) => (f.event ? [f.event] : [])),
          ),
          deps.cdrs.settleMany(
            tx,
            // The call is still live here (it leaves `live` once its finish is written).
            held.map((f) => callSettlement(f.call, f.sellerId, f.charge, f.inbound)),
          ),
        ]);
        // A refusal cannot come from a hold that covers the call; if one does, the batch rolls back
        // and each call is written on its own, where the settle's own error is logged.
        const refused = settled.find(isRefusal);
        if (refused) throw refusalError(refused);
        settled.forEach((r, i) => {
          if (!isRefusal(r) && r.capReached) deps.hints.capReached(held[i]!.call.payer);
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
  // At most what one ledger_charge_many takes, so a batch's markups go in one statement (cdrs settleMany).
  const finishes = createWindowBatcher<Finish>({
    windowMs: deps.batchWindowMs,
    maxBatch: CHARGE_BATCH_MAX,
    run: finishBatch,
  });

  return { onAnswered, onCallEnded };
}

export type Finishing = ReturnType<typeof createFinishing>;
