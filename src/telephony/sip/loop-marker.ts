import { createHmac } from 'node:crypto';
import type { HeaderField, SipRequest } from './message.js';

/** Our loop marker on every INVITE we send to a supplier; an INVITE that carries our value came back to us. */
export const LOOP_HEADER = 'X-Svc-Loop';

export interface LoopMarker {
  /** The header every supplier INVITE carries (trunk legs and API-placed calls alike). */
  readonly header: HeaderField;
  /** True when an incoming request carries our own marker. */
  carriedBy(req: SipRequest): boolean;
}

/**
 * The marker from the shared server secret, so every daemon of the exchange knows its siblings'
 * INVITEs, and a supplier cannot forge one without it.
 */
export function createLoopMarker(secret: string | Buffer): LoopMarker {
  const value = createHmac('sha256', secret).update('svc-loop-marker').digest('hex').slice(0, 24);
  const name = LOOP_HEADER.toLowerCase();
  return {
    header: { name: LOOP_HEADER, value },
    // The parser's lower-cased key where the line has one: no lower-cased copy of every name of every INVITE.
    carriedBy: (req) => req.headers.some((h) => (h.key ?? h.name.toLowerCase()) === name && h.value.trim() === value),
  };
}
