/**
 * RFC 4028 session timers for the caller side of a trunk dialog: what the caller asked for in
 * Session-Expires / Min-SE / Supported, the interval we agree to, and when a refresh is overdue.
 */
import { getHeader, headerValues, type SipRequest } from './message.js';

export type Refresher = 'uac' | 'uas';

export interface SessionTimerPolicy {
  /** Our Min-SE: a smaller Session-Expires from a timer-aware caller gets 422 (RFC 4028 §8.1). */
  minSeSeconds: number;
  /** The interval we choose when the caller supports timers but proposes none. */
  defaultSeconds: number;
}

export interface SessionTerms {
  interval: number;
  /** Who sends the refreshes: 'uac' the caller, 'uas' this exchange. */
  refresher: Refresher;
}

export type Negotiated = { reject: { minSe: number } } | { terms: SessionTerms } | { terms: null };

/** `1800;refresher=uac` → seconds and refresher; null when absent or malformed. */
export function parseSessionExpires(value: string | undefined): { seconds: number; refresher?: Refresher } | null {
  if (value === undefined) return null;
  const [delta, ...params] = value.split(';').map((p) => p.trim());
  if (!delta || !/^\d{1,10}$/.test(delta)) return null;
  const out: { seconds: number; refresher?: Refresher } = { seconds: Number(delta) };
  for (const p of params) {
    const [k, v] = p.split('=').map((x) => x.trim().toLowerCase());
    if (k === 'refresher' && (v === 'uac' || v === 'uas')) out.refresher = v;
  }
  return out;
}

const parseMinSe = (value: string | undefined): number | null => {
  const m = value === undefined ? null : /^\s*(\d{1,10})/.exec(value);
  return m ? Number(m[1]) : null;
};

const supportsTimer = (req: SipRequest): boolean =>
  [...headerValues(req, 'supported'), ...headerValues(req, 'require')].some((v) => v.toLowerCase() === 'timer');

/**
 * Terms for an INVITE or a refresh. A caller that does not say `Supported: timer` gets no session
 * timer (its call is still bounded by the balance timer); one that does gets its own interval,
 * never below our Min-SE nor its own, with the refresher it asked for (the caller by default).
 */
export function negotiateSession(req: SipRequest, policy: SessionTimerPolicy, current?: SessionTerms): Negotiated {
  if (!supportsTimer(req)) return { terms: current ?? null };
  const se = parseSessionExpires(getHeader(req, 'session-expires'));
  const callerMin = parseMinSe(getHeader(req, 'min-se')) ?? 0;
  if (se && se.seconds < policy.minSeSeconds) return { reject: { minSe: policy.minSeSeconds } };
  const floor = Math.max(policy.minSeSeconds, callerMin);
  const interval = Math.max(se?.seconds ?? current?.interval ?? policy.defaultSeconds, floor);
  return { terms: { interval, refresher: se?.refresher ?? 'uac' } };
}

/** When the non-refresher gives up: the interval less a third of it, at most 32 s (RFC 4028 §10). */
export const expiryMs = (interval: number): number => Math.round((interval - Math.min(32, interval / 3)) * 1000);

/** When the refresher refreshes: half the interval (RFC 4028 §10). */
export const refreshMs = (interval: number): number => Math.round((interval / 2) * 1000);

export const sessionExpiresValue = (t: SessionTerms): string => `${t.interval};refresher=${t.refresher}`;

/** The `o=` line's session id and version: unchanged means the SDP is the same offer again. */
const originOf = (sdp: Buffer): string | null => {
  const m = /^o=\S+ (\S+) (\S+)/m.exec(sdp.toString('latin1'));
  return m ? `${m[1]} ${m[2]}` : null;
};

/**
 * A re-INVITE or UPDATE that only refreshes the session: no offer, or the previous offer again
 * (same o= session version, RFC 3264 §8). Anything else changes media and goes to the other leg.
 */
export function isRefresh(previousOffer: Buffer, body: Buffer): boolean {
  if (body.length === 0) return true;
  const now = originOf(body);
  return now !== null && now === originOf(previousOffer);
}
