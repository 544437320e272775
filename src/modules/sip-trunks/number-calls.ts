import type { Decimal } from 'decimal.js';

/**
 * A call a number's seller brings in for one of the numbers it rented out (issue 22, "Calls and
 * messages on numbers"): the numbers module's answer, asked before the trunk's own routing.
 */
export interface NumberCallTarget {
  didId: string;
  /** The renter: pays the inbound minutes (or the forwarded call). */
  ownerId: string;
  /** The number's seller: earns the inbound rate less the platform fee. */
  sellerId: string;
  status: 'active' | 'suspended';
  pointMode: 'unrouted' | 'sip' | 'forward';
  /** `sip`: where to deliver, first the number's target then its backup. */
  sipTargets: { host: string; port: number }[];
  /** `forward`: the E.164 digits the call is forwarded to over the owner's routes. */
  forwardTo: string | null;
  /** Per minute charged to the owner; 0 when the number's group sets no inbound rate. */
  price: Decimal;
  /** The seller's part of `price` per minute. */
  sellerRate: Decimal;
}

/** The DID `to` names when `callerId` is the seller that rented it out, else null (an ordinary trunk call). */
export type NumberCalls = (callerId: string, to: string) => Promise<NumberCallTarget | null>;

/** Inbound minutes are billed per started minute, as DID carriers bill them. */
export const INBOUND_INCREMENT = '60/60';
