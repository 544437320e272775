import { Decimal } from 'decimal.js';
import type { Logger } from 'pino';
import type { Config } from '../../config/schema.js';
import type { Sql } from '../../db/connection.js';
import type { Ledger } from '../../ledger/index.js';
import type { Clock } from '../../platform/clock.js';
import { requireIncrement, toMoney } from '../../rating/index.js';
import { agreementOf, buildCdr, chargeLeg, voiceBilled, type CdrsService } from '../cdrs/index.js';
import { agentSecondsOf, answeredCharge, callSettlement, HANGUP_REASONS, inboundCdr } from './finishing.js';
import { pricedKey, type LiveCalls } from './live-calls.js';
import type { PayerHints } from './payer-hints.js';
import type { CallsRepo } from './repo.js';

/**
 * The owner written on calls placed through the API: apart from this node's trunk calls, which the
 * housekeeping reconciles as soon as they are not live here, while the API's own heartbeat keeps these.
 */
export const apiCallOwner = (node: string): string => `${node}:api`;

/**
 * Both sides of the crash protocol: the heartbeat that keeps this daemon's live calls (and their
 * holds) from looking dead, and the reconcile that bills calls a dead daemon left open.
 */
export function createReconcile(deps: {
  sql: Sql;
  log: Logger;
  clock: Clock;
  config: Readonly<Config>;
  ledger: Ledger;
  repo: CallsRepo;
  cdrs: CdrsService;
  live: LiveCalls;
  hints: PayerHints;
  node: string;
}) {
  const { sql, log, clock, repo, live } = deps;

  async function heartbeat() {
    await repo.heartbeat([...live.keys()], clock.now());
    // Only holds that could expire before the next passes: a hold outlives its call's maximum by
    // 10 minutes, so with thousands of calls held this is a few statements, not one per call.
    const now = clock.now().getTime();
    const ttl = deps.config.sip.max_call_seconds + 600;
    for (const c of live.values()) {
      if (c.holdUntil - now > 5 * 60_000) continue;
      if (await deps.ledger.extendHold(c.holdId, ttl).catch(() => false)) c.holdUntil = now + ttl * 1000;
    }
  }

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
      // A forward's backup answered: its price is keyed by route and the number reached (the row's to_number).
      const p = o.routeId
        ? (o.pricing?.routes[pricedKey(o.routeId, o.toNumber)] ?? o.pricing?.routes[o.routeId])
        : undefined;
      const route = p
        ? {
            price: new Decimal(p.price),
            sellerRate: new Decimal(p.sellerRate),
            increment: requireIncrement(p.increment),
            markupPct: p.markupPct === undefined ? undefined : new Decimal(p.markupPct),
            interconnectionId: p.interconnectionId,
            ...(p.agentFee ? { agentFee: new Decimal(p.agentFee) } : {}),
            ...(o.pricing?.sell
              ? {
                  sell: {
                    rate: new Decimal(o.pricing.sell.rate),
                    increment: requireIncrement(o.pricing.sell.increment),
                  },
                }
              : {}),
          }
        : undefined;
      const seen = o.answeredAt ? Math.max(0, Math.ceil((o.lastSeenAt.getTime() - o.answeredAt.getTime()) / 1000)) : 0;
      const duration = o.maxDurationSeconds ? Math.min(seen, o.maxDurationSeconds) : seen;
      const markupPct = new Decimal(o.pricing?.markupPct ?? 0);
      const agentSeconds = agentSecondsOf(o.answeredAt, o.agentLeftAt);
      const charge = route && o.answeredAt ? answeredCharge(route, duration, markupPct, agentSeconds) : null;
      // A forwarded number call: its inbound minutes for the same seconds, from the same hold, unless
      // the number's own voicemail answered it (that leg is the inbound minutes).
      const atNumber = o.routeId !== null && o.routeId === o.pricing?.didId && !o.pricing.direction;
      const leg = atNumber ? undefined : o.pricing?.inbound;
      const inbound =
        leg && charge
          ? {
              sellerId: leg.sellerId,
              charge: chargeLeg(
                {
                  price: new Decimal(leg.price),
                  sellerRate: new Decimal(leg.sellerRate),
                  increment: requireIncrement(leg.increment),
                  markupPct: leg.markupPct === undefined ? undefined : new Decimal(leg.markupPct),
                },
                duration,
                markupPct,
              ),
            }
          : null;
      const ended = {
        callGroupId: o.callGroupId,
        from: o.fromNumber,
        sipCode: o.answeredAt ? 200 : null,
        hangupCause: 'crash',
        answeredAt: o.answeredAt,
        endedAt: o.lastSeenAt,
        startedAt: o.createdAt,
      };
      const done = await sql
        .begin(async (tx) => {
          // Another daemon may be reconciling the same stale call: whoever locks the row does it, once.
          if (!(await repo.lockOpenCall(tx, o.id))) return false;
          if (o.holdId) {
            const settled = await deps.cdrs.settle(
              tx,
              callSettlement(
                { id: o.id, payer: o.accountId, holdId: o.holdId, operatorId: o.operatorId },
                p?.sellerId ?? null,
                charge,
                inbound,
              ),
            );
            if (settled.capReached) deps.hints.capReached(o.accountId);
          }
          await deps.cdrs.insertCdrs(tx, [
            buildCdr({
              ...(o.pricing?.direction
                ? { direction: o.pricing.direction }
                : atNumber
                  ? { direction: 'inbound' as const }
                  : {}),
              accountId: o.accountId,
              operatorId: o.operatorId,
              // A leg with no seller (a forward to a SIP address) names none.
              sellerId: p?.sellerId || null,
              callUuid: o.id,
              callGroupId: o.callGroupId,
              kind: 'voice',
              source: o.source,
              routeId: o.routeId,
              fromNumber: o.fromNumber,
              toNumber: atNumber && o.pricing?.inbound ? o.pricing.inbound.number : o.toNumber,
              cli: o.fromNumber,
              status: o.answeredAt ? 'completed' : 'failed',
              sipCode: o.answeredAt ? 200 : null,
              hangupCause: 'crash',
              durationSeconds: duration,
              segments: null,
              pddMs: null,
              mediaMode: o.source === 'trunk' ? (p?.mediaMode ?? null) : null,
              billed: charge ? voiceBilled(charge) : null,
              agreement: charge && route ? agreementOf(route) : undefined,
              answeredAt: o.answeredAt,
              endedAt: o.lastSeenAt,
              createdAt: o.createdAt,
            }),
            ...(leg
              ? [
                  inboundCdr(
                    { payer: o.accountId, operatorId: o.operatorId },
                    { routeId: leg.didId, sellerId: leg.sellerId, number: leg.number },
                    ended,
                    o.answeredAt ? 'completed' : 'failed',
                    inbound?.charge ?? null,
                    charge ? duration : 0,
                  ),
                ]
              : []),
          ]);
          await repo.finishCall(tx, o.id, {
            status: o.answeredAt ? 'completed' : 'failed',
            routeId: o.routeId,
            sipCode: o.answeredAt ? 200 : null,
            hangupCause: 'crash',
            hangupReason: HANGUP_REASONS['crash']!,
            durationSeconds: duration,
            billableSeconds: charge?.billableSeconds ?? 0,
            cost: inbound
              ? toMoney(new Decimal(charge!.total).plus(inbound.charge.total))
              : (charge?.total ?? '0.000000'),
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

  return { heartbeat, reconcileOrphans };
}
