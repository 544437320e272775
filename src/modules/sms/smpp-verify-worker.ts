import { scryptSync, timingSafeEqual } from 'node:crypto';
import { parentPort } from 'node:worker_threads';
import { scryptMaxmem } from '../accounts/passwords.js';
import type { VerifyRequest, VerifyResponse } from './smpp-verifier.js';

/**
 * Checks SMPP passwords against their scrypt hashes on this thread, synchronously: libuv's
 * thread pool, where the HTTPS logins' scrypt runs, never sees a bind.
 */
const port = parentPort;
if (!port) throw new Error('smpp-verify-worker must run in a worker thread');

// As src/modules/accounts/passwords.ts derives them.
const KEYLEN = 32;

function verify(password: string, stored: string): boolean {
  const [alg, n, r, p, salt, hash] = stored.split('$');
  if (alg !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const key = scryptSync(password.normalize('NFKC'), Buffer.from(salt, 'base64url'), KEYLEN, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: scryptMaxmem(Number(n), Number(r)),
  });
  return key.length === expected.length && timingSafeEqual(key, expected);
}

port.on('message', (req: VerifyRequest) => {
  let res: VerifyResponse;
  try {
    res = { id: req.id, ok: verify(req.password, req.stored) };
  } catch (err) {
    res = { id: req.id, ok: false, error: err instanceof Error ? err.message : 'verify failed' };
  }
  port.postMessage(res);
});
