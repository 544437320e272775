import type { Decimal } from 'decimal.js';
import type { TrunkEndpoint } from '../../telephony/sip/b2bua/index.js';
import type { SipTransportName } from '../../telephony/sip/transport.js';

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
  sipTargets: { host: string; port: number; transport: SipTransportName }[];
  /** `forward`: the E.164 digits the call is forwarded to over the owner's routes. */
  forwardTo: string | null;
  /** `forward`: the E.164 digits dialled when every route to `forwardTo` fails (`pointsToBackup`). */
  forwardBackup: string | null;
  /** How long a target (or a forward route) may ring before voicemail takes the call (or it ends unanswered). */
  ringTimeoutSeconds: number;
  /** Per minute charged to the owner; 0 when the number's group sets no inbound rate. */
  price: Decimal;
  /** The seller's part of `price` per minute. */
  sellerRate: Decimal;
  /**
   * The exchange answers the call itself with the media plane: an AI voice agent attached to the
   * number (every call, `feePerMinute` the agent fee added to `price`), or voicemail (`always`, or
   * `fallback` once the number's own targets fail). Null: delivered as `pointMode` says.
   */
  answer: { kind: NumberAnswerKind; when: 'always' | 'fallback'; feePerMinute: Decimal } | null;
}

export type NumberAnswerKind = 'voicemail' | 'ai_agent';

/** How an inbound call on a number was delivered (`number.call.received`). */
export type NumberCallHandling = 'sip' | 'forward' | NumberAnswerKind;

/**
 * This daemon's own SIP address for a call the exchange answers: the trunk B2BUA dials it as one
 * more candidate (so the hold, failover, settlement and CDRs are those of any inbound call); the
 * request-URI user names the answer and the call group. Null while the SIP plane is not listening.
 */
export type LocalAnswerEndpoint = (kind: NumberAnswerKind, callGroupId: string, didId: string) => TrunkEndpoint | null;

/** The DID `to` names when `callerId` is the seller that rented it out, else null (an ordinary trunk call). */
export type NumberCalls = (callerId: string, to: string) => Promise<NumberCallTarget | null>;

/** Inbound minutes are billed per started minute, as DID carriers bill them. */
export const INBOUND_INCREMENT = '60/60';
