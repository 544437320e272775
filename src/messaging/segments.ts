import { encodeGsm7, gsm7Septets, isGsm7 } from './gsm7.js';

/** SMPP data_coding values we set ourselves; never left to the SMSC's default. */
export const DATA_CODING_GSM7 = 0;
export const DATA_CODING_LATIN1 = 3;
export const DATA_CODING_UCS2 = 8;

export type SmsEncoding = 'gsm7' | 'ucs2';

const LIMITS = {
  gsm7: { single: 160, part: 153 },
  ucs2: { single: 70, part: 67 },
} as const;

/** GSM-7 when every character is in GSM 03.38 (basic or extension), else UCS-2. */
export function chooseEncoding(text: string): SmsEncoding {
  return isGsm7(text) ? 'gsm7' : 'ucs2';
}

export function needsUcs2(text: string): boolean {
  return !isGsm7(text);
}

/** One wire part: its payload (without UDH) and the units it uses (septets or UTF-16 code units). */
interface Chunk {
  text: string;
  units: number;
}

function chunkGsm7(text: string, max: number): Chunk[] {
  const chunks: Chunk[] = [];
  let cur = '';
  let units = 0;
  for (const ch of text) {
    const cost = gsm7Septets(ch) as number;
    // An escape pair is one character here, so it never straddles two parts.
    if (units + cost > max) {
      chunks.push({ text: cur, units });
      cur = '';
      units = 0;
    }
    cur += ch;
    units += cost;
  }
  if (cur.length > 0 || chunks.length === 0) chunks.push({ text: cur, units });
  return chunks;
}

function chunkUcs2(text: string, max: number): Chunk[] {
  const chunks: Chunk[] = [];
  let cur = '';
  // for..of walks code points, so a surrogate pair (2 units) is never split.
  for (const ch of text) {
    if (cur.length + ch.length > max) {
      chunks.push({ text: cur, units: cur.length });
      cur = '';
    }
    cur += ch;
  }
  if (cur.length > 0 || chunks.length === 0) chunks.push({ text: cur, units: cur.length });
  return chunks;
}

function chunks(text: string, encoding: SmsEncoding): Chunk[] {
  const lim = LIMITS[encoding];
  const whole =
    encoding === 'gsm7' ? chunkGsm7(text, Number.MAX_SAFE_INTEGER) : chunkUcs2(text, Number.MAX_SAFE_INTEGER);
  if ((whole[0] as Chunk).units <= lim.single) return whole;
  return encoding === 'gsm7' ? chunkGsm7(text, lim.part) : chunkUcs2(text, lim.part);
}

export interface SegmentInfo {
  encoding: SmsEncoding;
  dataCoding: number;
  /** Septets (GSM-7, extension characters counted twice) or UTF-16 code units (UCS-2). */
  units: number;
  /** Segments billed; equal to the parts sent on the wire. */
  segments: number;
}

/** How a text is billed (spec "SMS message": 160 a segment, 70 with Unicode; 153/67 per part when concatenated). */
export function countSegments(text: string): SegmentInfo {
  const encoding = chooseEncoding(text);
  const parts = chunks(text, encoding);
  return {
    encoding,
    dataCoding: encoding === 'gsm7' ? DATA_CODING_GSM7 : DATA_CODING_UCS2,
    units: parts.reduce((n, c) => n + c.units, 0),
    segments: parts.length,
  };
}

export interface WirePart {
  /** UDH (when concatenated) followed by the encoded payload: the short_message octets. */
  shortMessage: Buffer;
  /** 0x40 (UDHI) on concatenated parts, else 0. */
  esmClass: number;
  dataCoding: number;
  text: string;
  seq: number;
  total: number;
}

export function encodeText(text: string, encoding: SmsEncoding): Buffer {
  if (encoding === 'gsm7') return encodeGsm7(text);
  return Buffer.from(text, 'utf16le').swap16();
}

/**
 * Split a text for submit_sm/deliver_sm. Concatenated parts carry an 8-bit-reference UDH
 * (05 00 03 ref total seq) and esm_class UDHI; data_coding is always set explicitly.
 */
export function splitForWire(text: string, opts: { reference: number; encoding?: SmsEncoding }): WirePart[] {
  const encoding = opts.encoding ?? chooseEncoding(text);
  const dataCoding = encoding === 'gsm7' ? DATA_CODING_GSM7 : DATA_CODING_UCS2;
  const parts = chunks(text, encoding);
  const total = parts.length;
  if (total > 255) throw new RangeError('text needs more than 255 parts');
  const ref = opts.reference & 0xff;
  return parts.map((c, i) => {
    const payload = encodeText(c.text, encoding);
    if (total === 1) return { shortMessage: payload, esmClass: 0, dataCoding, text: c.text, seq: 1, total };
    const udh = Buffer.from([0x05, 0x00, 0x03, ref, total, i + 1]);
    return {
      shortMessage: Buffer.concat([udh, payload]),
      esmClass: 0x40,
      dataCoding,
      text: c.text,
      seq: i + 1,
      total,
    };
  });
}
