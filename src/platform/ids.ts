import { hash, randomBytes } from 'node:crypto';
import { uuidv7 } from 'uuidv7';

/** Time-ordered ids: list order by id is creation order, which makes cursors simple. */
export const newId = (): string => uuidv7();

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** Unbiased base62 from crypto randomness. */
export function randomToken(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < 248) out += ALPHABET[b % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

// The one-shot digest: every API request hashes its key, and a Hash object per call costs about
// four times as much for inputs this short.
export const sha256Hex = (s: string | Buffer): string => hash('sha256', s, 'hex');
