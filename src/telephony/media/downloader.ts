import { lookup as dnsLookup } from 'node:dns/promises';
import { request } from 'node:https';
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import type { LookupFunction } from 'node:net';
import { createTargetGuard, isPrivateAddress, TargetRefusedError } from '../../platform/outbound-guard.js';
import { MediaError } from './errors.js';

/**
 * Fetches `play` audio (spec: action items, `play`): https only, URL ≤ 2,048 characters, body
 * ≤ 2 MB, no redirects, public addresses only. The host is resolved once, every address is
 * checked, and the connection goes to the checked address (a second resolution could answer
 * differently: DNS rebinding).
 */

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export interface SafeDownloaderOptions {
  maxBytes?: number;
  maxUrlLength?: number;
  timeoutMs?: number;
  /** Tests only: lets loopback and private addresses through. */
  allowPrivateAddresses?: boolean;
  /** Name resolution (default: the system resolver, all addresses). */
  resolve?: (hostname: string) => Promise<ResolvedAddress[]>;
  /** Extra trusted CA certificates (tests with a self-signed server). */
  ca?: string | Buffer;
}

export interface SafeDownloader {
  download(url: string): Promise<Uint8Array>;
}

const DEFAULTS = { maxBytes: 2 * 1024 * 1024, maxUrlLength: 2048, timeoutMs: 10_000 };

/** True for a unicast address on the public internet (the outbound guard's rule). */
export function isPublicAddress(address: string): boolean {
  return !isPrivateAddress(address);
}

const refuse = (message: string): MediaError => new MediaError('MEDIA_DOWNLOAD_REFUSED', message);

/** Checks a play URL without fetching it; throws MEDIA_DOWNLOAD_REFUSED. */
export function checkPlayUrl(raw: string, maxUrlLength = DEFAULTS.maxUrlLength): URL {
  if (raw.length > maxUrlLength) throw refuse(`URL is longer than ${maxUrlLength} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refuse('URL does not parse');
  }
  if (url.protocol !== 'https:') throw refuse('URL must use https');
  if (url.username || url.password) throw refuse('URL must not carry credentials');
  if (!url.hostname) throw refuse('URL has no host');
  return url;
}

async function systemResolve(hostname: string): Promise<ResolvedAddress[]> {
  const all = await dnsLookup(hostname, { all: true, verbatim: true });
  return all.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
}

export function createSafeDownloader(options: SafeDownloaderOptions = {}): SafeDownloader {
  const maxBytes = options.maxBytes ?? DEFAULTS.maxBytes;
  const maxUrlLength = options.maxUrlLength ?? DEFAULTS.maxUrlLength;
  const timeoutMs = options.timeoutMs ?? DEFAULTS.timeoutMs;
  const resolve = options.resolve ?? systemResolve;
  const guard = createTargetGuard({ allowAllPrivate: options.allowPrivateAddresses === true, lookup: resolve });

  async function pickAddress(hostname: string): Promise<ResolvedAddress> {
    try {
      return await guard.resolve(hostname);
    } catch (err) {
      // One non-public answer refuses the host: round-robin must not let a private one through later.
      if (err instanceof TargetRefusedError) throw refuse('URL host is not a public address');
      throw new MediaError('MEDIA_DOWNLOAD_FAILED', 'host name does not resolve', { cause: err });
    }
  }

  async function download(raw: string): Promise<Uint8Array> {
    const url = checkPlayUrl(raw, maxUrlLength);
    const target = await pickAddress(url.hostname);
    // Hands the already-checked address to the TLS socket instead of resolving again.
    const pinned: LookupFunction = (_host, opts, callback) => {
      if (opts.all) (callback as (err: null, addrs: ResolvedAddress[]) => void)(null, [target]);
      else callback(null, target.address, target.family);
    };
    const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    return new Promise<Uint8Array>((resolvePromise, reject) => {
      let settled = false;
      const fail = (err: MediaError): void => {
        if (settled) return;
        settled = true;
        req.destroy();
        reject(err);
      };
      const req = request(
        {
          host: hostname,
          port: url.port || 443,
          path: `${url.pathname}${url.search}`,
          method: 'GET',
          lookup: pinned,
          agent: false,
          ca: options.ca,
          servername: isIP(hostname) ? undefined : hostname,
          headers: { accept: 'audio/mpeg, */*;q=0.1', 'user-agent': 'svc-exchange-media/1' },
          timeout: timeoutMs,
        },
        (res: IncomingMessage) => {
          const status = res.statusCode ?? 0;
          if (status >= 300 && status < 400) return fail(refuse('URL redirects; redirects are not followed'));
          if (status !== 200) return fail(new MediaError('MEDIA_DOWNLOAD_FAILED', `URL answered HTTP ${status}`));
          const declared = Number(res.headers['content-length']);
          if (Number.isFinite(declared) && declared > maxBytes)
            return fail(new MediaError('MEDIA_AUDIO_TOO_LARGE', `audio is larger than ${maxBytes} bytes`));
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            size += c.length;
            if (size > maxBytes)
              return fail(new MediaError('MEDIA_AUDIO_TOO_LARGE', `audio is larger than ${maxBytes} bytes`));
            chunks.push(c);
          });
          res.on('end', () => {
            if (settled) return;
            settled = true;
            resolvePromise(new Uint8Array(Buffer.concat(chunks)));
          });
          res.on('error', (err) =>
            fail(new MediaError('MEDIA_DOWNLOAD_FAILED', 'download interrupted', { cause: err })),
          );
        },
      );
      req.on('timeout', () => fail(new MediaError('MEDIA_DOWNLOAD_FAILED', `no answer within ${timeoutMs} ms`)));
      req.on('error', (err) => fail(new MediaError('MEDIA_DOWNLOAD_FAILED', 'download failed', { cause: err })));
      req.end();
    });
  }

  return { download };
}
