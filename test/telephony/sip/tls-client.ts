/** A SIP-over-TLS peer for tests (Debian's sipp is built without TLS): a client connection and a test certificate. */
import tls from 'node:tls';
import { generate } from 'selfsigned';
import type { SipMessage, SipResponse } from '../../../src/telephony/sip/message.js';
import { createStreamFramer } from '../../../src/telephony/sip/parser.js';

export interface TestCert {
  key: string;
  cert: string;
}

/**
 * A self-signed certificate for 127.0.0.1 and localhost, as the daemon makes for itself; or, given
 * `name`, for that DNS name only (no IP address), so only a check against the name accepts it.
 */
export async function testCert(name?: string): Promise<TestCert> {
  const altNames = name
    ? [{ type: 2, value: name }]
    : [
        { type: 2, value: 'localhost' },
        { type: 7, ip: '127.0.0.1' },
      ];
  const pems = await generate([{ name: 'commonName', value: name ?? 'localhost' }], {
    keyType: 'ec',
    curve: 'P-256',
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames },
    ],
  } as never);
  return { key: pems.private, cert: pems.cert };
}

export interface TlsSipClient {
  readonly localPort: number;
  /** Every message received, in order, parsed with the daemon's own stream framing. */
  readonly got: SipMessage[];
  /** Raw bytes received, for refusals that are not well-formed messages. */
  raw(): string;
  send(text: string): void;
  /** The next received message (after `from`) matching `pred`. */
  next(pred: (m: SipMessage) => boolean, from?: number, ms?: number): Promise<SipMessage>;
  closed: Promise<void>;
  close(): void;
}

export async function tlsSipClient(port: number, ca: string | Buffer): Promise<TlsSipClient> {
  const sock = tls.connect({ host: '127.0.0.1', port, ca });
  await new Promise<void>((resolve, reject) => {
    sock.once('secureConnect', resolve);
    sock.once('error', reject);
  });
  const framer = createStreamFramer();
  const got: SipMessage[] = [];
  let raw = '';
  sock.on('data', (chunk: Buffer) => {
    raw += chunk.toString('latin1');
    for (const f of framer.push(chunk)) if (f.message) got.push(f.message);
  });
  sock.on('error', () => undefined);
  const closed = new Promise<void>((r) => sock.once('close', () => r()));
  return {
    localPort: sock.localPort ?? 0,
    got,
    raw: () => raw,
    send: (text) => sock.write(Buffer.from(text.replace(/\r?\n/g, '\r\n'))),
    async next(pred, from = 0, ms = 5000) {
      const start = Date.now();
      for (;;) {
        const m = got.slice(from).find(pred);
        if (m) return m;
        if (Date.now() - start > ms) throw new Error('no matching SIP message over TLS in time');
        await new Promise((r) => setTimeout(r, 5));
      }
    },
    closed,
    close: () => sock.destroy(),
  };
}

export const isResponse =
  (status: number, method?: string) =>
  (m: SipMessage): m is SipResponse =>
    m.kind === 'response' &&
    m.status === status &&
    (method === undefined || m.headers.some((h) => /^cseq$/i.test(h.name) && h.value.endsWith(method)));
