import { createHmac, timingSafeEqual } from 'node:crypto';

/** Signature headers of one attempt (spec "Events", "Delivery"). */
export interface SignatureHeaders {
  'x-svc-timestamp': string;
  'x-svc-signature': string;
  'x-webhook-signature': string;
}

const hmacHex = (secret: string, payload: string | Buffer) =>
  createHmac('sha256', secret).update(payload).digest('hex');

/**
 * Signs the exact bytes sent: `v1=` HMAC-SHA256 of `<timestamp>.<raw body>`, and the legacy
 * `sha256=` HMAC-SHA256 of the raw body alone (kept during the transition the spec names).
 */
export function signPayload(secret: string, unixSeconds: number, rawBody: string | Buffer): SignatureHeaders {
  const ts = String(unixSeconds);
  const signed = Buffer.concat([Buffer.from(`${ts}.`), Buffer.isBuffer(rawBody) ? rawBody : Buffer.from(rawBody)]);
  return {
    'x-svc-timestamp': ts,
    'x-svc-signature': `v1=${hmacHex(secret, signed)}`,
    'x-webhook-signature': `sha256=${hmacHex(secret, rawBody)}`,
  };
}

const safeEqualHex = (a: string, b: string) => {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
};

export type VerifyResult = { ok: true } | { ok: false; reason: 'missing' | 'stale' | 'mismatch' };

/**
 * What a receiver does (and what the README shows customers): check the timestamp is within
 * the tolerance, then compare the `v1` signature in constant time over the raw bytes.
 */
export function verifySignature(opts: {
  secret: string;
  rawBody: Buffer | string;
  timestamp: string | undefined;
  signature: string | undefined;
  nowSeconds: number;
  toleranceSeconds?: number;
}): VerifyResult {
  const { timestamp, signature } = opts;
  if (!timestamp || !signature || !/^\d+$/.test(timestamp) || !signature.startsWith('v1='))
    return { ok: false, reason: 'missing' };
  if (Math.abs(opts.nowSeconds - Number(timestamp)) > (opts.toleranceSeconds ?? 300))
    return { ok: false, reason: 'stale' };
  const expected = signPayload(opts.secret, Number(timestamp), opts.rawBody)['x-svc-signature'];
  return safeEqualHex(expected, signature) ? { ok: true } : { ok: false, reason: 'mismatch' };
}

/** The legacy header check: `sha256=` HMAC of the raw body alone, constant time. */
export function verifyLegacySignature(secret: string, rawBody: Buffer | string, header: string | undefined): boolean {
  if (!header?.startsWith('sha256=')) return false;
  return safeEqualHex(`sha256=${hmacHex(secret, rawBody)}`, header);
}
