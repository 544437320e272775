import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { generate } from 'selfsigned';
import { verifyLegacySignature, verifySignature } from '../../src/webhooks/signer.js';

/** What the test receiver answers to one request. */
export type Reply = { status: number; body?: string | Buffer; headers?: Record<string, string> } | 'hang';

export interface Received {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  rawBody: Buffer;
  /** v1 signature and timestamp checked as a customer would (constant time, 5-minute tolerance). */
  signatureOk: boolean;
  legacyOk: boolean;
  /** Another request with this X-Webhook-Id was accepted (2xx) before. */
  duplicate: boolean;
  /** The receiver's clock reading, in ms since the epoch, when the request arrived. */
  at: number;
}

let material: Promise<{ key: string; cert: string }> | undefined;

/** A self-signed certificate for localhost, 127.0.0.1 and hooks.test, made once per process. */
export function receiverTls() {
  material ??= generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    curve: 'P-256',
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: 'localhost' },
          { type: 2, value: 'hooks.test' },
          { type: 7, ip: '127.0.0.1' },
        ],
      },
    ],
  } as never).then((p: { private: string; cert: string }) => ({ key: p.private, cert: p.cert }));
  return material;
}

export interface Receiver {
  port: number;
  url(path?: string): string;
  cert: string;
  received: Received[];
  /** Unique X-Webhook-Ids acknowledged, in order: what a de-duplicating customer processed. */
  processed: string[];
  /** Answers to the next requests, in order; afterwards `fallback`. */
  replies: Reply[];
  fallback: Reply;
  secret: string;
  /** Resolves when `n` requests in all have arrived. */
  waitFor(n: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * A customer's HTTPS webhook receiver on 127.0.0.1: it reads the raw body, verifies both
 * signatures before parsing, and de-duplicates by X-Webhook-Id.
 */
export async function startReceiver(
  t: { teardown(fn: () => unknown): void },
  opts: { now: () => number; secret?: string },
): Promise<Receiver> {
  const tls = await receiverTls();
  const waiters: { n: number; resolve: () => void }[] = [];
  const acked = new Set<string>();
  const hanging = new Set<() => void>();
  const r: Receiver = {
    port: 0,
    url: (path = '/hook') => `https://127.0.0.1:${r.port}${path}`,
    cert: tls.cert,
    received: [],
    processed: [],
    replies: [],
    fallback: { status: 200, body: 'ok' },
    secret: opts.secret ?? '',
    waitFor: (n) =>
      r.received.length >= n ? Promise.resolve() : new Promise((resolve) => waiters.push({ n, resolve })),
    close: () =>
      new Promise((resolve) => {
        for (const h of hanging) h();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server: Server = createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks);
      const header = (h: string) => {
        const v = req.headers[h];
        return Array.isArray(v) ? v[0] : v;
      };
      const signatureOk = verifySignature({
        secret: r.secret,
        rawBody,
        timestamp: header('x-svc-timestamp'),
        signature: header('x-svc-signature'),
        nowSeconds: Math.floor(opts.now() / 1000),
        toleranceSeconds: 300,
      }).ok;
      const legacyOk = verifyLegacySignature(r.secret, rawBody, header('x-webhook-signature'));
      const id = header('x-webhook-id') ?? '';
      const rec: Received = {
        path: req.url ?? '',
        headers: req.headers,
        rawBody,
        signatureOk,
        legacyOk,
        duplicate: acked.has(id),
        at: opts.now(),
      };
      r.received.push(rec);
      for (const w of waiters.filter((x) => r.received.length >= x.n)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
      const reply = r.replies.shift() ?? r.fallback;
      if (reply === 'hang') {
        hanging.add(() => res.destroy());
        return;
      }
      if (reply.status >= 200 && reply.status < 300 && signatureOk && !acked.has(id)) {
        acked.add(id);
        r.processed.push(id);
      }
      res.writeHead(reply.status, reply.headers ?? {});
      res.end(reply.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  r.port = (server.address() as AddressInfo).port;
  t.teardown(() => r.close());
  return r;
}
