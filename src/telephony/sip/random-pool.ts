/** Random text for SIP identifiers and nonces, drawn from one crypto buffer refilled in blocks. */
import { randomBytes } from 'node:crypto';

// A call uses about ten tags, branches and Call-IDs and one digest nonce, and a random fill per
// value (a synchronous crypto job each) showed on the call-path profile. The bytes are the same
// CSPRNG's, each handed out once.
const RANDOM_BLOCK = 4096;
let pool = randomBytes(RANDOM_BLOCK);
let at = 0;

/** `bytes` fresh random bytes as text. */
export function randomText(bytes: number, encoding: 'hex' | 'base64url'): string {
  if (at + bytes > RANDOM_BLOCK) {
    pool = randomBytes(RANDOM_BLOCK);
    at = 0;
  }
  at += bytes;
  return pool.toString(encoding, at - bytes, at);
}
