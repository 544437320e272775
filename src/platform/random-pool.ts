/**
 * Random values for identifiers (SIP tags, branches, Call-IDs, digest nonces, uuidv7 ids), drawn
 * from one crypto buffer refilled in blocks. A call uses about ten SIP identifiers and an SMS a few
 * ids, and a random fill per value (a synchronous crypto job each) showed on both paths' profiles.
 * The bytes are the same CSPRNG's, each handed out once.
 */
import { randomBytes } from 'node:crypto';

const RANDOM_BLOCK = 4096;
let pool = randomBytes(RANDOM_BLOCK);
let at = 0;

/** The offset of `bytes` fresh bytes in the pool, refilling it when they would run past its end. */
function take(bytes: number): number {
  if (at + bytes > RANDOM_BLOCK) {
    pool = randomBytes(RANDOM_BLOCK);
    at = 0;
  }
  at += bytes;
  return at - bytes;
}

/** `bytes` fresh random bytes as text. */
export function randomText(bytes: number, encoding: 'hex' | 'base64url'): string {
  const from = take(bytes);
  return pool.toString(encoding, from, from + bytes);
}

/** A fresh random 32-bit unsigned integer. */
export function randomUint32(): number {
  return pool.readUInt32LE(take(4));
}
