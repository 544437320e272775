/**
 * The failover rule shared by trunk calls (B2BUA) and calls placed through the API (spec "Voice and
 * SMS", failover rule): a route that refuses before any ringing with one of these statuses, or that
 * never answers at all, hands the call to the next route, up to three routes. Busy, declined,
 * not found, address incomplete and no-answer are final; a call that has rung never moves.
 */
const RETRYABLE: ReadonlySet<number> = new Set([403, 480, 500, 502, 503, 504]);

/** Routes tried at most for one call. */
export const FAILOVER_MAX_ROUTES = 3;

export interface LegEnd {
  /** The route's final status; null when none came back. */
  sipStatus: number | null;
  /** Nothing came back that counts as a response (each plane says what counts). */
  noResponse: boolean;
  /** A 180 or 183 arrived on this call. */
  ringing: boolean;
}

/** Whether the call moves to the next route after this leg ended without answer. */
export function shouldFailover(end: LegEnd): boolean {
  if (end.ringing) return false;
  return end.sipStatus !== null ? RETRYABLE.has(end.sipStatus) : end.noResponse;
}
