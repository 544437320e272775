import { Agent, request } from 'node:https';
import type { OutgoingHttpHeaders } from 'node:http';
import { createGrowingLru } from '../platform/growing-lru.js';
import { resolveTarget, TargetRefusedError, type Lookup, type ResolvedTarget } from './target.js';

export type AttemptOutcome =
  'ok' | 'http_status' | 'redirect' | 'timeout' | 'connect_error' | 'tls_error' | 'refused_target';

export interface AttemptResult {
  outcome: AttemptOutcome;
  statusCode: number | null;
  error: string | null;
  /** At most `excerptBytes` of the response body, as text. */
  responseExcerpt: string | null;
  durationMs: number;
}

export interface SenderOptions {
  timeoutMs: number;
  allowPrivate: boolean;
  /** Extra trusted CA certificates (PEM), for tests; verification is never turned off. */
  ca?: string | Buffer | Array<string | Buffer>;
  lookup?: Lookup;
  /** Bytes of the response kept for the log; the rest is not read. */
  excerptBytes?: number;
  userAgent?: string;
}

export type WebhookSender = ((req: {
  url: string;
  headers: Record<string, string>;
  body: string;
}) => Promise<AttemptResult>) & {
  /** Closes idle kept-alive connections. */
  close?(): void;
};

/**
 * How long a checked answer for an endpoint's host is reused. The socket always goes to the
 * address that was checked, so reuse never lets an unchecked (rebound) address through; it spares
 * a getaddrinfo per delivery (a thread-pool hop, a few hundred microseconds) on a busy endpoint.
 */
const RESOLVED_TTL_MS = 30_000;
const RESOLVED_MAX = 10_000;

const TLS_CODES = /^(CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|ERR_TLS_|ERR_SSL_|HOSTNAME_MISMATCH|ERR_OSSL|EPROTO$)/;
/** A TLS failure by its code, or by the OpenSSL library an error came from (set on every OpenSSL error), never by its text. */
const isTlsError = (err: NodeJS.ErrnoException & { library?: unknown }) =>
  TLS_CODES.test(err.code ?? '') || typeof err.library === 'string';

/**
 * HTTPS POST to an endpoint: the host is resolved and checked here and the socket goes to
 * the checked address; redirects are not followed; the response is read only up to the
 * excerpt size; the whole attempt is bounded by `timeoutMs`.
 */
export function createWebhookSender(opts: SenderOptions): WebhookSender {
  const excerptBytes = opts.excerptBytes ?? 1024;
  // Kept-alive connections spare a TLS handshake per delivery (most of an attempt's cost).
  // Pooled per address, port, SNI name and CA, so a connection never serves another target.
  // Idle ones close after 4 s, before the usual 5 s server keep-alive timeout.
  const agent = new Agent({ keepAlive: true, maxSockets: 16, maxFreeSockets: 64, timeout: 4000 });
  const resolved = createGrowingLru<string, ResolvedTarget>(RESOLVED_MAX, { ttl: RESOLVED_TTL_MS });
  const send: WebhookSender = async ({ url, headers, body }) => {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const signal = AbortSignal.timeout(opts.timeoutMs);
    const result = await attempt(url, headers, body, signal, elapsed);
    // An endpoint that could not be reached may have moved: its next attempt looks it up again.
    if (result.outcome === 'connect_error' || result.outcome === 'tls_error' || result.outcome === 'timeout')
      resolved.delete(url);
    return result;
  };

  async function attempt(
    url: string,
    headers: Record<string, string>,
    body: string,
    signal: AbortSignal,
    elapsed: () => number,
  ): Promise<AttemptResult> {
    let target = resolved.get(url);
    if (!target) {
      try {
        // getaddrinfo cannot be cancelled; the attempt's deadline still bounds the wait for it.
        const aborted = new Promise<never>((_, reject) =>
          signal.addEventListener('abort', () => reject(signal.reason), { once: true }),
        );
        aborted.catch(() => undefined);
        target = await Promise.race([
          resolveTarget(url, { allowPrivate: opts.allowPrivate, ...(opts.lookup ? { lookup: opts.lookup } : {}) }),
          aborted,
        ]);
        resolved.set(url, target);
      } catch (err) {
        if (signal.aborted) {
          return {
            outcome: 'timeout',
            statusCode: null,
            error: `no address within ${opts.timeoutMs} ms`,
            responseExcerpt: null,
            durationMs: elapsed(),
          };
        }
        const refused = err instanceof TargetRefusedError;
        return {
          outcome: refused ? 'refused_target' : 'connect_error',
          statusCode: null,
          error: (err as Error).message,
          responseExcerpt: null,
          durationMs: elapsed(),
        };
      }
    }
    const payload = Buffer.from(body);
    const pinned = target;
    const reqHeaders: OutgoingHttpHeaders = {
      ...headers,
      host: pinned.hostHeader,
      'content-type': 'application/json',
      'content-length': payload.length,
      'user-agent': opts.userAgent ?? 'svc-exchange-webhooks/1',
    };
    const once = (pooled: boolean) =>
      new Promise<AttemptResult | 'stale'>((resolve) => {
        let done = false;
        const finish = (r: Omit<AttemptResult, 'durationMs'> | 'stale') => {
          if (done) return;
          done = true;
          resolve(r === 'stale' ? r : { ...r, durationMs: elapsed() });
        };
        const req = request(
          {
            host: pinned.address,
            family: pinned.family,
            port: pinned.port,
            path: `${pinned.url.pathname}${target.url.search}`,
            method: 'POST',
            headers: reqHeaders,
            ...(pinned.servername ? { servername: target.servername } : {}),
            ...(opts.ca ? { ca: opts.ca } : {}),
            agent: pooled ? agent : false,
            signal,
          },
          (res) => {
            const status = res.statusCode ?? 0;
            const chunks: Buffer[] = [];
            let size = 0;
            const settle = () => {
              const excerpt = chunks.length ? Buffer.concat(chunks).subarray(0, excerptBytes).toString('utf8') : null;
              if (status >= 200 && status < 300)
                finish({ outcome: 'ok', statusCode: status, error: null, responseExcerpt: excerpt });
              else if (status >= 300 && status < 400) {
                finish({
                  outcome: 'redirect',
                  statusCode: status,
                  error: `redirect not followed${res.headers.location ? ` (to ${String(res.headers.location).slice(0, 200)})` : ''}`,
                  responseExcerpt: excerpt,
                });
              } else
                finish({
                  outcome: 'http_status',
                  statusCode: status,
                  error: `HTTP ${status}`,
                  responseExcerpt: excerpt,
                });
            };
            res.on('data', (c: Buffer) => {
              if (size < excerptBytes) chunks.push(c);
              size += c.length;
              // Enough read: the rest of a large or endless body is not our business.
              if (size >= excerptBytes) {
                settle();
                res.destroy();
              }
            });
            res.on('end', settle);
            res.on('error', () => settle());
          },
        );
        req.on('error', (err: NodeJS.ErrnoException) => {
          const code = err.code ?? '';
          // A kept-alive connection the server closed as we reused it: not the endpoint's failure.
          if (pooled && req.reusedSocket && (code === 'ECONNRESET' || code === 'EPIPE') && !signal.aborted)
            finish('stale');
          else if (signal.aborted || code === 'ABORT_ERR') {
            finish({
              outcome: 'timeout',
              statusCode: null,
              error: `no response within ${opts.timeoutMs} ms`,
              responseExcerpt: null,
            });
          } else if (isTlsError(err)) {
            finish({
              outcome: 'tls_error',
              statusCode: null,
              error: `${code} ${err.message}`.trim().slice(0, 500),
              responseExcerpt: null,
            });
          } else {
            finish({
              outcome: 'connect_error',
              statusCode: null,
              error: `${code} ${err.message}`.trim().slice(0, 500),
              responseExcerpt: null,
            });
          }
        });
        req.end(payload);
      });
    const first = await once(true);
    if (first !== 'stale') return first;
    const second = await once(false);
    return second === 'stale'
      ? {
          outcome: 'connect_error',
          statusCode: null,
          error: 'connection reset',
          responseExcerpt: null,
          durationMs: elapsed(),
        }
      : second;
  }
  send.close = () => agent.destroy();
  return send;
}
