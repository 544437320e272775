import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { Logger } from 'pino';
import type { Clock } from '../platform/clock.js';
import { TargetRefusedError, type PinnedAddress, type TargetGuard } from '../platform/outbound-guard.js';
import { countSegments } from './segments.js';
import { normaliseSupplierMessageId } from './receipt-text.js';
import type { ReceiptStat } from './receipt-text.js';

/** Header names of the signed HTTPS supplier protocol (README.md "HTTPS delivery to suppliers"). */
export const HEADER_TIMESTAMP = 'x-svc-timestamp';
export const HEADER_SIGNATURE = 'x-svc-signature';
export const HEADER_MESSAGE_ID = 'x-svc-message-id';

/** `v1=` + lowercase hex HMAC-SHA256 of `<timestamp>.<raw body>`, as webhooks are signed (spec "Webhooks"). */
export function signBody(secret: string, timestamp: number, body: string | Buffer): string {
  const h = createHmac('sha256', secret);
  h.update(`${timestamp}.`);
  h.update(body);
  return `v1=${h.digest('hex')}`;
}

/** Constant-time check of a `v1=` signature against any of the secrets (more than one while rotating). */
export function verifySignature(
  secrets: readonly string[],
  timestamp: number,
  body: Buffer,
  signature: string,
): boolean {
  const given = Buffer.from(signature.trim());
  for (const s of secrets) {
    const want = Buffer.from(signBody(s, timestamp, body));
    if (want.length === given.length && timingSafeEqual(want, given)) return true;
  }
  return false;
}

export interface HttpSupplierOptions {
  /** The supplier's endpoint; must be https unless allowHttp (tests, loopback). */
  url: string;
  secret: string;
  /** Where the supplier posts receipts for these messages. */
  callbackUrl: string;
  /** Whole-request budget (connect, send, response). Default 10 s. */
  timeoutMs?: number;
  /** Extra trusted CAs, e.g. { ca } for a private CA (certificate checks stay on). */
  tls?: { ca?: string | Buffer };
  /** Sent as the Authorization header when the supplier wants one besides the signature. */
  authorization?: string;
  allowHttp?: boolean;
  /**
   * Checks the supplier's address before each request and pins the connection to the checked
   * answer (the host name stays the TLS name and Host header).
   */
  guard?: TargetGuard;
  log: Logger;
  clock: Clock;
}

export interface HttpOutboundSms {
  /** Our message id; sent as messageId and X-Svc-Message-Id so the supplier can de-duplicate retries. */
  messageId: string;
  to: string;
  from: string;
  text: string;
  registeredDelivery?: boolean;
}

export type HttpSubmitOutcome =
  | { status: 'accepted'; supplierMessageId: string }
  | { status: 'refused'; httpStatus: number; code: string | null }
  | { status: 'error'; reason: string };

export interface HttpSupplier {
  submit(message: HttpOutboundSms): Promise<HttpSubmitOutcome>;
}

const MAX_RESPONSE_BYTES = 64 * 1024;

/** Sending side of HTTPS delivery: one signed JSON POST per message, bounded in time and size. */
export function createHttpSupplier(opts: HttpSupplierOptions): HttpSupplier {
  const url = new URL(opts.url);
  if (url.protocol !== 'https:' && !(opts.allowHttp && url.protocol === 'http:')) {
    throw new Error('supplier URL must be https');
  }
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const log = opts.log.child({ supplierHost: url.host });
  const transport = url.protocol === 'https:' ? https : http;
  const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  const pool = opts.guard ? new transport.Agent({ keepAlive: true }) : undefined;

  /** The checked address, or why not: a refused target is never contacted, so it is not ambiguous. */
  async function pin(): Promise<PinnedAddress | HttpSubmitOutcome | null> {
    if (!opts.guard) return null;
    try {
      return await opts.guard.resolve(url.hostname, port);
    } catch (err) {
      if (err instanceof TargetRefusedError) {
        log.warn({ refused: err.address }, 'http supplier address refused');
        return { status: 'error', reason: 'refused_target' };
      }
      return { status: 'error', reason: (err as NodeJS.ErrnoException).code ?? 'lookup_failed' };
    }
  }

  return {
    async submit(message) {
      const pinned = await pin();
      if (pinned !== null && 'status' in pinned) return pinned;
      const seg = countSegments(message.text);
      const body = JSON.stringify({
        messageId: message.messageId,
        to: message.to.replace(/^\+/, ''),
        from: message.from,
        text: message.text,
        encoding: seg.encoding,
        segments: seg.segments,
        registeredDelivery: message.registeredDelivery !== false,
        callbackUrl: opts.callbackUrl,
        submittedAt: opts.clock.now().toISOString(),
      });
      const ts = Math.floor(opts.clock.now().getTime() / 1000);
      return new Promise<HttpSubmitOutcome>((resolve) => {
        let settled = false;
        const done = (o: HttpSubmitOutcome) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          resolve(o);
        };
        const req = transport.request(
          url,
          {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'content-length': Buffer.byteLength(body),
              [HEADER_TIMESTAMP]: String(ts),
              [HEADER_SIGNATURE]: signBody(opts.secret, ts, body),
              [HEADER_MESSAGE_ID]: message.messageId,
              ...(opts.authorization ? { authorization: opts.authorization } : {}),
            },
            ...(pinned
              ? {
                  lookup: ((_h: string, o: { all?: boolean }, cb: (...a: unknown[]) => void) =>
                    o.all ? cb(null, [pinned]) : cb(null, pinned.address, pinned.family)) as never,
                  // Its own pool: a kept-alive socket was opened to a checked address, never by another caller.
                  agent: pool,
                }
              : {}),
            ...(opts.tls ?? {}),
          },
          (res) => {
            const chunks: Buffer[] = [];
            let size = 0;
            res.on('data', (c: Buffer) => {
              size += c.length;
              if (size > MAX_RESPONSE_BYTES) {
                req.destroy();
                done({ status: 'error', reason: 'response_too_large' });
                return;
              }
              chunks.push(c);
            });
            res.on('error', () => done({ status: 'error', reason: 'response_error' }));
            res.on('end', () => {
              const status = res.statusCode ?? 0;
              let parsed: Record<string, unknown> = {};
              try {
                const v: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
                if (v && typeof v === 'object') parsed = v as Record<string, unknown>;
              } catch {
                parsed = {};
              }
              if (status >= 200 && status < 300) {
                const id =
                  typeof parsed['supplierMessageId'] === 'string'
                    ? normaliseSupplierMessageId(parsed['supplierMessageId'])
                    : '';
                done(
                  id
                    ? { status: 'accepted', supplierMessageId: id }
                    : { status: 'error', reason: 'no_supplier_message_id' },
                );
                return;
              }
              // 408, 429 and 5xx say "not now", not "no": the caller may retry or fail over.
              if (status === 408 || status === 429 || status >= 500) {
                log.info({ httpStatus: status }, 'http supplier temporary failure');
                done({ status: 'error', reason: `http_${status}` });
                return;
              }
              done({
                status: 'refused',
                httpStatus: status,
                code: typeof parsed['code'] === 'string' ? parsed['code'] : null,
              });
            });
          },
        );
        const timer = setTimeout(() => {
          req.destroy();
          done({ status: 'error', reason: 'timeout' });
        }, timeoutMs);
        req.on('error', (err: NodeJS.ErrnoException) => done({ status: 'error', reason: err.code ?? 'request_error' }));
        req.end(body);
      });
    },
  };
}

const STATUS_TO_STAT: Record<string, ReceiptStat> = {
  delivered: 'DELIVRD',
  undelivered: 'UNDELIV',
  expired: 'EXPIRED',
  rejected: 'REJECTD',
  deleted: 'DELETED',
  accepted: 'ACCEPTD',
  enroute: 'ENROUTE',
  unknown: 'UNKNOWN',
};

export interface HttpReceipt {
  supplierMessageId: string;
  /** Our id when the supplier echoes it; correlate by supplierMessageId otherwise. */
  messageId: string | null;
  stat: ReceiptStat;
  errorCode: string | null;
  doneAt: Date | null;
}

export type VerifyReceiptResult =
  | { ok: true; receipt: HttpReceipt }
  | { ok: false; reason: 'missing_signature' | 'stale_timestamp' | 'bad_signature' | 'bad_body' };

/**
 * Check and read a receipt callback: signature over the exact raw bytes first, then the timestamp
 * window (default 300 s either way), then the JSON.
 */
export function verifyReceiptCallback(input: {
  rawBody: Buffer;
  headers: Record<string, string | string[] | undefined>;
  secrets: readonly string[];
  now: Date;
  toleranceSec?: number;
}): VerifyReceiptResult {
  const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
  const tsRaw = one(input.headers[HEADER_TIMESTAMP]);
  const sig = one(input.headers[HEADER_SIGNATURE]);
  if (!tsRaw || !sig || !/^\d{1,12}$/.test(tsRaw)) return { ok: false, reason: 'missing_signature' };
  const ts = Number(tsRaw);
  if (!verifySignature(input.secrets, ts, input.rawBody, sig)) return { ok: false, reason: 'bad_signature' };
  if (Math.abs(input.now.getTime() / 1000 - ts) > (input.toleranceSec ?? 300))
    return { ok: false, reason: 'stale_timestamp' };
  let v: unknown;
  try {
    v = JSON.parse(input.rawBody.toString('utf8'));
  } catch {
    return { ok: false, reason: 'bad_body' };
  }
  if (!v || typeof v !== 'object') return { ok: false, reason: 'bad_body' };
  const o = v as Record<string, unknown>;
  const id = typeof o['supplierMessageId'] === 'string' ? normaliseSupplierMessageId(o['supplierMessageId']) : '';
  const stat = typeof o['status'] === 'string' ? STATUS_TO_STAT[o['status']] : undefined;
  if (!id || !stat) return { ok: false, reason: 'bad_body' };
  const doneAt = typeof o['doneAt'] === 'string' ? new Date(o['doneAt']) : null;
  return {
    ok: true,
    receipt: {
      supplierMessageId: id,
      messageId: typeof o['messageId'] === 'string' ? o['messageId'] : null,
      stat,
      errorCode: typeof o['errorCode'] === 'string' ? o['errorCode'] : null,
      doneAt: doneAt && !Number.isNaN(doneAt.getTime()) ? doneAt : null,
    },
  };
}
