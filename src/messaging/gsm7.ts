/**
 * GSM 03.38 default alphabet and its extension table (3GPP TS 23.038 §6.2.1).
 * On SMPP the septets travel unpacked, one octet each, so "encode" yields one byte per septet.
 */
const BASIC =
  '@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞ\x1bÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?' +
  '¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà';

const EXTENSION: ReadonlyArray<readonly [string, number]> = [
  ['\f', 0x0a],
  ['^', 0x14],
  ['{', 0x28],
  ['}', 0x29],
  ['\\', 0x2f],
  ['[', 0x3c],
  ['~', 0x3d],
  [']', 0x3e],
  ['|', 0x40],
  ['€', 0x65],
];

export const GSM7_ESCAPE = 0x1b;

const basicEncode = new Map<string, number>();
for (let i = 0; i < BASIC.length; i++) {
  if (i !== GSM7_ESCAPE) basicEncode.set(BASIC[i] as string, i);
}
const extEncode = new Map<string, number>(EXTENSION);
const extDecode = new Map<number, string>(EXTENSION.map(([c, b]) => [b, c]));

/** Septets one character costs: 1 basic, 2 extension, null when GSM-7 cannot carry it. */
export function gsm7Septets(ch: string): 1 | 2 | null {
  if (basicEncode.has(ch)) return 1;
  if (extEncode.has(ch)) return 2;
  return null;
}

/** True when every character of the text is in the GSM 03.38 basic or extension table. */
export function isGsm7(text: string): boolean {
  for (const ch of text) {
    if (gsm7Septets(ch) === null) return false;
  }
  return true;
}

/** Septet count of a GSM-7 text (extension characters count two); throws when the text is not GSM-7. */
export function gsm7Length(text: string): number {
  let n = 0;
  for (const ch of text) {
    const s = gsm7Septets(ch);
    if (s === null) throw new RangeError('text is not GSM-7');
    n += s;
  }
  return n;
}

/** Unpacked septets, one byte each; throws on a character outside GSM 03.38. */
export function encodeGsm7(text: string): Buffer {
  const out: number[] = [];
  for (const ch of text) {
    const b = basicEncode.get(ch);
    if (b !== undefined) {
      out.push(b);
      continue;
    }
    const e = extEncode.get(ch);
    if (e === undefined) throw new RangeError('text is not GSM-7');
    out.push(GSM7_ESCAPE, e);
  }
  return Buffer.from(out);
}

/**
 * Decode unpacked septets. An escape followed by a code with no extension meaning shows the basic
 * character (TS 23.038 note: "display the character from the default table").
 */
export function decodeGsm7(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i++) {
    const b = (bytes[i] as number) & 0x7f;
    if (b === GSM7_ESCAPE) {
      const next = bytes[i + 1];
      if (next === undefined) break;
      i++;
      s += extDecode.get(next & 0x7f) ?? BASIC[next & 0x7f] ?? ' ';
      continue;
    }
    s += BASIC[b] as string;
  }
  return s;
}
