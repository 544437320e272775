import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { PromptStore } from './prompts.js';

/**
 * Prompts handed to Asterisk over HTTP, for a farm whose hosts cannot read the exchange's files.
 * Each rendered prompt (G.711 µ-law) is kept in memory under an unguessable token (128 random bits)
 * for `ttlMs`, and Asterisk plays `sound:http://<listener>/prompts/<token>.ulaw`: its
 * res_http_media_cache fetches the file once (res_curl), keeps it while our `Cache-Control` allows,
 * and format_pcm plays it. A token names one file, expires, and is never listed; anything else is a
 * 404. The same prompt published again while its token has more than half its life left reuses it,
 * so Asterisk's cache serves repeats.
 */

export interface HttpPromptStoreOptions {
  bind: string;
  port: number;
  /** The address Asterisk reaches the listener at (default `bind`). */
  advertise?: string;
  ttlMs: number;
  log: Logger;
  now?: () => number;
}

const PATH = /^\/prompts\/([0-9a-f]{32})\.ulaw$/;

export function createHttpPromptStore(opts: HttpPromptStoreOptions): PromptStore & { readonly port: Promise<number> } {
  const now = opts.now ?? Date.now;
  const log = opts.log.child({ plane: 'asterisk-prompts' });
  const files = new Map<string, { audio: Buffer; expiresAt: number; hash: string }>();
  const byHash = new Map<string, string>();

  const sweep = (): void => {
    const t = now();
    for (const [token, f] of files) {
      if (f.expiresAt > t) continue;
      files.delete(token);
      if (byHash.get(f.hash) === token) byHash.delete(f.hash);
    }
  };
  const timer = setInterval(sweep, Math.max(1000, opts.ttlMs / 4));
  timer.unref();

  const server: Server = createServer((req, res) => {
    const match = PATH.exec(req.url ?? '');
    const file = match ? files.get(match[1]!) : undefined;
    const left = file ? file.expiresAt - now() : 0;
    if (!file || left <= 0 || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-length': 0 }).end();
      return;
    }
    // No Content-Type Asterisk maps to a format: it takes the format from the path's `.ulaw`.
    res.writeHead(200, {
      'content-type': 'application/octet-stream',
      'content-length': file.audio.length,
      'cache-control': `private, max-age=${Math.floor(left / 1000)}`,
    });
    res.end(req.method === 'HEAD' ? undefined : file.audio);
  });
  server.on('clientError', (_err, socket) => socket.destroy());
  const port = new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.bind, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
  port.catch((err: unknown) => log.error({ err }, 'the Asterisk prompt listener could not bind'));
  const host = opts.advertise || opts.bind;
  const hostPart = host.includes(':') ? `[${host}]` : host;

  return {
    port,
    async publish(ulaw) {
      const p = await port;
      const hash = createHash('sha256').update(ulaw).digest('hex');
      const t = now();
      let token = byHash.get(hash);
      const known = token ? files.get(token) : undefined;
      if (!token || !known || known.expiresAt - t < opts.ttlMs / 2) {
        token = randomBytes(16).toString('hex');
        files.set(token, { audio: Buffer.from(ulaw), expiresAt: t + opts.ttlMs, hash });
        byHash.set(hash, token);
      }
      return `sound:http://${hostPart}:${p}/prompts/${token}.ulaw`;
    },
    async close() {
      clearInterval(timer);
      files.clear();
      byHash.clear();
      if (!server.listening) return;
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
