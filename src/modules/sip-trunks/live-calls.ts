import type { Decimal } from 'decimal.js';
import type { PricedRoute } from '../cdrs/index.js';
import type { NumberAnswerKind, NumberCallHandling } from './number-calls.js';

/** A route a live call may take, priced as its hold was: what its end and its CDRs bill from. */
export type PricedLeg = PricedRoute & {
  sellerId: string;
  mediaMode: 'direct' | 'proxy';
  /** The interconnection whose terms priced the route. */
  interconnectionId?: string;
  /**
   * An AI voice agent's per-minute fee inside `price` (a number's call the agent answered): billed only
   * until the agent hands the caller over (`number.agentLeftAt`), the rest at the price without it.
   */
  agentFee?: Decimal;
  /**
   * The number this candidate dials when it is not the call's own: a forwarded number's backup
   * (`pointsToBackup`), priced at its own destination on the same or another route.
   */
  to?: string;
};

/**
 * The key of a candidate's price in `LiveCall.priced` and in the call row's pricing: its route, or
 * its route and destination when it dials another number than the call's (a forward's backup), so
 * one route can carry both the forward number and its backup at their own rates.
 */
export const pricedKey = (routeId: string, to?: string): string => (to === undefined ? routeId : `${routeId}>${to}`);

/** The price of the leg the B2BUA numbered `attempt` (1-based candidate position) on `routeId`. */
export function pricedLeg(call: Pick<LiveCall, 'priced' | 'keys'>, attempt: number, routeId: string) {
  return call.priced.get(call.keys?.[attempt - 1] ?? routeId);
}

/** A trunk call this daemon planned and has not finished. */
export interface LiveCall {
  id: string;
  payer: string;
  operatorId: string | null;
  holdId: string;
  maxDurationSeconds: number;
  slots: string[];
  markupPct: Decimal;
  /** By `pricedKey`: the route id, or route and destination for a forward's backup candidates. */
  priced: Map<string, PricedLeg>;
  /** Each candidate's `pricedKey` by position (absent when every key is the route id). */
  keys?: string[];
  /** The answered-mark update in flight: the settlement waits for it rather than finding the row locked. */
  marked?: Promise<unknown>;
  /** When the hold expires unless extended (ms since epoch). */
  holdUntil: number;
  /**
   * A forwarded number call's inbound leg: the number (`routeId` its DID) priced at its inbound
   * rate, billed beside whichever route answers (`alongside` on each priced route).
   */
  inboundLeg?: PricedLeg & { routeId: string; number: string };
  /** A call delivered to a rented number's own target: its CDRs are inbound. */
  direction?: 'inbound';
  /** A call for a rented number (delivered, forwarded or answered here): `number.call.received` at its end. */
  number?: {
    didId: string;
    number: string;
    handledBy: NumberCallHandling;
    /** The candidate (1-based) answered by this exchange itself, and how. */
    local?: { kind: NumberAnswerKind; attempt: number };
    /** When the answering AI agent transferred the caller: its fee stops there. */
    agentLeftAt?: Date;
  };
}

/**
 * This daemon's live trunk calls by call group id, shared by admission (in before the call row
 * exists), finishing (out once settled), the heartbeat and the orphan reconcile (which skips them).
 */
export type LiveCalls = Map<string, LiveCall>;
