import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

// scrypt is memory-hard and built into Node: N=2^15, r=8 uses 32 MiB per hash. The cost (log2 N)
// is a setting, [auth] scrypt_cost, so the test suite can hash cheaply; the default stays this.
export const DEFAULT_SCRYPT_COST = 15;
const R = 8;
const P = 1;
const KEYLEN = 32;

/** scrypt needs 128·N·r bytes; room for twice that keeps a stored hash of any allowed cost usable. */
export function scryptMaxmem(n: number, r: number): number {
  return Math.max(64 * 1024 * 1024, 256 * n * r);
}

function derive(password: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  const maxmem = scryptMaxmem(n, r);
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFKC'), salt, KEYLEN, { N: n, r, p, maxmem }, (err, key) =>
      err ? reject(err) : resolve(key),
    ),
  );
}

/**
 * `scrypt$N$r$p$salt$hash`, base64url; parameters travel with the hash, so a hash made at
 * another cost (an older default, a raised one) still verifies. The cost has no default: every
 * caller passes [auth] scrypt_cost, so new hashes and the decoys that burn the same time agree.
 */
export async function hashPassword(password: string, cost: number): Promise<string> {
  const salt = randomBytes(16);
  const n = 2 ** cost;
  const key = await derive(password, salt, n, R, P);
  return ['scrypt', n, R, P, salt.toString('base64url'), key.toString('base64url')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [alg, n, r, p, salt, hash] = stored.split('$');
  if (alg !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const key = await derive(password, Buffer.from(salt, 'base64url'), Number(n), Number(r), Number(p));
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/** Runs a hash anyway when the account is unknown, so timing does not reveal which e-mails exist; `cost` as hashPassword's. */
export async function burnPasswordTime(password: string, cost: number): Promise<void> {
  await derive(password, Buffer.alloc(16), 2 ** cost, R, P);
}
