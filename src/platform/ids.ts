import { hash, randomBytes } from 'node:crypto';
import { V7Generator } from 'uuidv7';
import { randomUint32 } from './random-pool.js';

// The package's default generator refills 32 random bytes through Web Crypto every three ids or so
// (a validated call into the native random source each time): most of an id's cost on the SMS path.
// The same generator draws from the process's pool of the same source instead.
const generator = new V7Generator({ nextUint32: randomUint32 });

// The package's toString joins 52 pieces into a string that is flattened again wherever it is
// used (hashed as a key, written into a statement's JSON): one flat string from char codes instead.
const HEX_CODES = Array.from({ length: 16 }, (_, i) => i.toString(16).charCodeAt(0));
const AT = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
const codes: number[] = Array.from({ length: 36 }, () => 45); // '-' where no digit goes

/** Time-ordered ids: list order by id is creation order, which makes cursors simple. */
export function newId(): string {
  const b = generator.generate().bytes;
  for (let i = 0; i < 16; i++) {
    codes[AT[i]!] = HEX_CODES[b[i]! >>> 4]!;
    codes[AT[i]! + 1] = HEX_CODES[b[i]! & 15]!;
  }
  return String.fromCharCode(...codes);
}

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
