/** HTTP digest for SIP (RFC 2617 MD5, RFC 3261 §22): server challenge/verify and client answers. */
import crypto, { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { formatDigest, parseDigest, SipParseError, type DigestParams } from './headers.js';
import { randomText } from '../../platform/random-pool.js';

// One-shot where Node has it (20.12 on; engines allow 20.11): no Hash object per digest, two per
// authenticated request.
export const md5: (s: string) => string =
  typeof crypto.hash === 'function'
    ? (s) => crypto.hash('md5', s, 'hex')
    : (s) => createHash('md5').update(s).digest('hex');

/** HA1 as stored: MD5(username:realm:password). */
export const computeHa1 = (username: string, realm: string, password: string): string =>
  md5(`${username}:${realm}:${password}`);

export interface DigestServerOptions {
  /** Always the configured primary SIP host, whatever address the request came to. */
  realm: string;
  secret: string | Buffer;
  nonceTtlMs?: number;
  nonceMaxUses?: number;
  /** Milliseconds since the epoch. */
  now?: () => number;
}

export type DigestCheck =
  | { result: 'ok' }
  /** Another realm: challenge again with the same nonce. */
  | { result: 'wrong-realm'; nonce: string }
  /** Expired or used up: challenge with a fresh nonce and stale=true. */
  | { result: 'stale' }
  /** Not ours, or not signed by us. */
  | { result: 'bad-nonce' }
  | { result: 'bad-response' };

export interface DigestServer {
  readonly realm: string;
  /** A WWW-Authenticate value; `nonce` reuses one (a realm retry), `stale` marks a nonce refresh. */
  challenge(opts?: { nonce?: string; stale?: boolean }): string;
  /** Parses an Authorization value; undefined when absent or not a Digest. */
  parseCredentials(header: string | undefined): DigestParams | undefined;
  /** Checks credentials against the HA1 over the `uri` the client sent (not the Request-URI). */
  check(creds: DigestParams, method: string, ha1: string): DigestCheck;
}

export function createDigestServer(opts: DigestServerOptions): DigestServer {
  const ttl = opts.nonceTtlMs ?? 5 * 60_000;
  const maxUses = opts.nonceMaxUses ?? 50;
  const now = opts.now ?? Date.now;
  // Use counts of live nonces; entries are in minting order, so expiry trims from the front. The
  // mint time is read back from the nonce: at a thousand calls a second the map holds a nonce per
  // call for the TTL, and an { at, n } object (with a boxed time) per entry was two more objects for
  // every old-space collection to mark.
  const uses = new Map<string, number>();
  const maxTracked = 200_000;
  const mintedAt = (nonce: string): number => parseInt(nonce.slice(0, nonce.indexOf('.')), 36);
  // The tracked nonces in the order they were first tracked, expired from `head`. The map's own
  // order would do, but a fresh iterator walks past every entry deleted since the table was last
  // compacted: once nonces expired (a daemon up longer than the TTL), each challenge stepped over
  // tens of thousands of holes, 30-43 µs instead of 9 (45,000 live nonces, one expiring per mint).
  let order: Array<string | undefined> = [];
  let head = 0;
  const track = (nonce: string, n: number): void => {
    if (!uses.has(nonce)) order.push(nonce);
    uses.set(nonce, n);
  };

  const sign = (body: string): string =>
    createHmac('sha256', opts.secret).update(body).digest('base64url').slice(0, 22);

  const mint = (): string => {
    const t = now();
    for (; head < order.length; head++) {
      const k = order[head] as string;
      if (t - mintedAt(k) <= ttl && uses.size < maxTracked) break;
      uses.delete(k);
      order[head] = undefined;
    }
    if (head >= 1024 && head * 2 >= order.length) {
      order = order.slice(head);
      head = 0;
    }
    const body = `${t.toString(36)}.${randomText(9, 'base64url')}`;
    const nonce = `${body}.${sign(body)}`;
    track(nonce, 0);
    return nonce;
  };

  const signedAt = (nonce: string): number | undefined => {
    const i = nonce.lastIndexOf('.');
    if (i < 0) return undefined;
    const body = nonce.slice(0, i);
    const mac = Buffer.from(nonce.slice(i + 1));
    const want = Buffer.from(sign(body));
    if (mac.length !== want.length || !timingSafeEqual(mac, want)) return undefined;
    const ts = parseInt(body.split('.')[0] ?? '', 36);
    return Number.isFinite(ts) ? ts : undefined;
  };

  return {
    realm: opts.realm,
    challenge(c = {}) {
      const params: Record<string, string> = { realm: opts.realm, nonce: c.nonce ?? mint(), algorithm: 'MD5' };
      if (c.stale) params['stale'] = 'true';
      return formatDigest({ scheme: 'Digest', params });
    },
    parseCredentials(header) {
      if (header === undefined) return undefined;
      try {
        const d = parseDigest(header);
        return d.scheme.toLowerCase() === 'digest' ? d : undefined;
      } catch (err) {
        if (err instanceof SipParseError) return undefined;
        throw err;
      }
    },
    check(creds, method, ha1) {
      const p = creds.params;
      const nonce = p['nonce'] ?? '';
      // A nonce tracked here was minted here or has had its MAC verified here: a second HMAC over
      // the same string can only agree. One not (or no longer) tracked is verified.
      const at = uses.has(nonce) ? mintedAt(nonce) : signedAt(nonce);
      if (at === undefined) return { result: 'bad-nonce' };
      if (p['realm'] !== opts.realm) return { result: 'wrong-realm', nonce };
      if (now() - at > ttl) return { result: 'stale' };
      const n = uses.get(nonce);
      // Signed with the site's shared secret but minted by another daemon (a balancer in front
      // sent the challenge and the answer to different daemons): counted here from now on, so
      // its uses are bounded per daemon and it still dies with its TTL.
      if (n === undefined && uses.size >= maxTracked) return { result: 'stale' };
      if (n !== undefined && n >= maxUses) return { result: 'stale' };
      track(nonce, (n ?? 0) + 1);
      if (p['algorithm'] && p['algorithm'].toUpperCase() !== 'MD5') return { result: 'bad-response' };
      const ha2 = md5(`${method}:${p['uri'] ?? ''}`);
      const expected = p['qop']
        ? md5(`${ha1}:${nonce}:${p['nc'] ?? ''}:${p['cnonce'] ?? ''}:${p['qop']}:${ha2}`)
        : md5(`${ha1}:${nonce}:${ha2}`);
      const got = Buffer.from((p['response'] ?? '').toLowerCase());
      const ok = got.length === expected.length && timingSafeEqual(got, Buffer.from(expected));
      return ok ? { result: 'ok' } : { result: 'bad-response' };
    },
  };
}

/** Answers a supplier's 401/407 challenge (RFC 2617 §3.2.2), with qop=auth when offered. */
export function answerChallenge(a: {
  challenge: string;
  method: string;
  uri: string;
  username: string;
  password: string;
}): string {
  const ch = parseDigest(a.challenge).params;
  const realm = ch['realm'] ?? '';
  const nonce = ch['nonce'] ?? '';
  const ha1 = computeHa1(a.username, realm, a.password);
  const ha2 = md5(`${a.method}:${a.uri}`);
  const params: Record<string, string> = { username: a.username, realm, nonce, uri: a.uri };
  const qops = (ch['qop'] ?? '').split(',').map((q) => q.trim());
  if (qops.includes('auth')) {
    const cnonce = randomBytes(8).toString('hex');
    const nc = '00000001';
    params['response'] = md5(`${ha1}:${nonce}:${nc}:${cnonce}:auth:${ha2}`);
    params['qop'] = 'auth';
    params['nc'] = nc;
    params['cnonce'] = cnonce;
  } else {
    params['response'] = md5(`${ha1}:${nonce}:${ha2}`);
  }
  params['algorithm'] = 'MD5';
  if (ch['opaque'] !== undefined) params['opaque'] = ch['opaque'];
  return formatDigest({ scheme: 'Digest', params });
}
