import type { DialKind, DialObservation } from './dial.js';

export type LegResult =
  | 'pending'
  | 'checking'
  | 'working'
  | 'no_capacity'
  | 'not_delivered'
  | 'false_answer'
  | 'inconclusive'
  | 'accepts'
  | 'accepted'
  | 'delivered'
  | 'refused';

export interface Verdict {
  result: LegResult;
  message: string;
  /** Whether the connected seconds are charged (a real answer on a full or ring-me check). */
  billable: boolean;
}

/** Spec "Route check", result meanings: an answer faster than a real line can give. */
export const FALSE_ANSWER_MS = 1500;
export const FALSE_ANSWER_NO_RING_MS = 2500;

/** Final responses that say the number (not the route) is the problem: no verdict on the route. */
const NUMBER_PROBLEM = new Set([404, 484, 485, 604]);
/** The test line or phone itself was busy: no verdict either. */
const LINE_BUSY = new Set([486, 600]);

/**
 * The verdict on one check call (docs/route-checks.md, "Verdicts"). A suspected false answer is an
 * answer under 1.5 s after the INVITE, under 2.5 s with no ringing, or an answer whose far end sent
 * no audio until the media timeout: not working, nothing charged.
 */
export function verdictOf(kind: DialKind, o: DialObservation): Verdict {
  if (kind === 'light') {
    if (o.rang || o.answered) {
      return {
        result: 'accepts',
        message: 'The route accepted the call attempt; no call was placed.',
        billable: false,
      };
    }
    return refusedBeforeRing(o);
  }
  if (o.answered) {
    const answerMs = o.answerMs ?? 0;
    if (answerMs < FALSE_ANSWER_MS || (!o.rang && answerMs < FALSE_ANSWER_NO_RING_MS) || o.mediaTimeout) {
      return {
        result: 'false_answer',
        message:
          'The route answered faster than a real line can (or with no audio): a suspected false answer, not charged.',
        billable: false,
      };
    }
    return {
      result: 'working',
      message: kind === 'ring_me' ? 'Your phone rang and the call was answered.' : 'The call was answered.',
      billable: true,
    };
  }
  if (o.rang) {
    if (kind === 'ring_me') return { result: 'working', message: 'Your phone rang.', billable: false };
    return {
      result: 'not_delivered',
      message: 'The route signalled ringing but the call never reached the number.',
      billable: false,
    };
  }
  return refusedBeforeRing(o);
}

function refusedBeforeRing(o: DialObservation): Verdict {
  if (o.sipStatus !== null && NUMBER_PROBLEM.has(o.sipStatus)) {
    return {
      result: 'inconclusive',
      message: `The number was refused as invalid (SIP ${o.sipStatus}); nothing is counted against the route.`,
      billable: false,
    };
  }
  if (o.sipStatus !== null && LINE_BUSY.has(o.sipStatus)) {
    return { result: 'inconclusive', message: 'The test line was busy; try again shortly.', billable: false };
  }
  if (o.noResponse || o.sipStatus === null) {
    return { result: 'no_capacity', message: 'The route did not respond.', billable: false };
  }
  return { result: 'no_capacity', message: `The route refused the call (SIP ${o.sipStatus}).`, billable: false };
}
