// ITU E.161 keypad letters: a vanity pattern such as "FLOWERS" searches for 3569377.
const KEYPAD: Record<string, string> = {
  A: '2',
  B: '2',
  C: '2',
  D: '3',
  E: '3',
  F: '3',
  G: '4',
  H: '4',
  I: '4',
  J: '5',
  K: '5',
  L: '5',
  M: '6',
  N: '6',
  O: '6',
  P: '7',
  Q: '7',
  R: '7',
  S: '7',
  T: '8',
  U: '8',
  V: '8',
  W: '9',
  X: '9',
  Y: '9',
  Z: '9',
};

/** A search pattern as digits: keypad letters mapped, separators dropped; null when something else is left. */
export function patternDigits(pattern: string): string | null {
  let out = '';
  for (const ch of pattern.toUpperCase()) {
    if (ch >= '0' && ch <= '9') out += ch;
    else if (KEYPAD[ch]) out += KEYPAD[ch];
    else if (ch === ' ' || ch === '-' || ch === '.' || ch === '(' || ch === ')' || ch === '+') continue;
    else return null;
  }
  return out;
}

/**
 * A memorable local part: a run of four equal digits (5555), a four-digit straight (1234, 9876),
 * a repeated pair (1212 at the end), or ending in 000. Stored with the number at import.
 */
export function isVanity(localPart: string): boolean {
  if (/(\d)\1{3}/.test(localPart) || /000$/.test(localPart) || /(\d\d)\1$/.test(localPart)) return true;
  for (let i = 0; i + 4 <= localPart.length; i++) {
    const d = [...localPart.slice(i, i + 4)].map(Number);
    const up = d.every((v, k) => k === 0 || v === d[k - 1]! + 1);
    const down = d.every((v, k) => k === 0 || v === d[k - 1]! - 1);
    if (up || down) return true;
  }
  return false;
}
