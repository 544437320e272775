import { decodeGsm7 } from './gsm7.js';
import { buf, bufOrUndefined, num, type PDU } from './smpp-lib.js';

/** Decode short_message octets by SMPP data_coding; null when we do not take that coding. */
export function decodeByDataCoding(bytes: Uint8Array, dataCoding: number): string | null {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  switch (dataCoding) {
    case 0x00:
    case 0xf0:
    case 0xf1:
    case 0xf2:
    case 0xf3:
      return decodeGsm7(buf);
    case 0x01: // IA5 (ASCII) is a subset of latin-1
    case 0x03:
      return buf.toString('latin1');
    case 0x08:
    case 0x18: {
      // An odd trailing octet cannot be a UTF-16 unit; drop it rather than fail the message.
      const even = buf.subarray(0, buf.length - (buf.length % 2));
      return Buffer.from(even).swap16().toString('utf16le');
    }
    default:
      return null;
  }
}

export interface ConcatInfo {
  reference: number;
  total: number;
  seq: number;
  /** 8 or 16: width of the reference (UDH IEI 00 or 08); 16 for sar_* TLVs. */
  refBits: 8 | 16;
}

/** Split a short_message carrying a UDH into its concatenation header (if any) and payload. */
export function parseUdh(sm: Buffer): { concat: ConcatInfo | null; payload: Buffer } | null {
  if (sm.length < 1) return null;
  const udhl = sm[0] as number;
  if (udhl + 1 > sm.length) return null;
  let concat: ConcatInfo | null = null;
  let i = 1;
  while (i + 1 < udhl + 1) {
    const iei = sm[i] as number;
    const len = sm[i + 1] as number;
    const d = sm.subarray(i + 2, i + 2 + len);
    if (i + 2 + len > udhl + 1) return null;
    if (iei === 0x00 && len === 3) {
      concat = { reference: d[0] as number, total: d[1] as number, seq: d[2] as number, refBits: 8 };
    } else if (iei === 0x08 && len === 4) {
      concat = { reference: d.readUInt16BE(0), total: d[2] as number, seq: d[3] as number, refBits: 16 };
    }
    i += 2 + len;
  }
  return { concat, payload: sm.subarray(udhl + 1) };
}

/** What an incoming submit_sm/deliver_sm carries, read from its raw fields. */
export interface InboundFields {
  esmClass: number;
  dataCoding: number;
  shortMessage: Buffer;
  messagePayload?: Buffer | undefined;
  sarMsgRefNum?: number | undefined;
  sarTotalSegments?: number | undefined;
  sarSegmentSeqnum?: number | undefined;
}

export interface InboundPart {
  payload: Buffer;
  dataCoding: number;
  concat: ConcatInfo | null;
}

/** Extract payload and concatenation info; message_payload wins over short_message (SMPP 3.4 §5.3.2.32). */
export function readInboundPart(f: InboundFields): InboundPart | null {
  const udhi = (f.esmClass & 0x40) !== 0;
  let body = f.messagePayload && f.messagePayload.length > 0 ? f.messagePayload : f.shortMessage;
  let concat: ConcatInfo | null = null;
  if (udhi) {
    const u = parseUdh(body);
    if (!u) return null;
    concat = u.concat;
    body = u.payload;
  }
  if (!concat && f.sarMsgRefNum !== undefined && f.sarTotalSegments !== undefined && f.sarSegmentSeqnum !== undefined) {
    concat = { reference: f.sarMsgRefNum, total: f.sarTotalSegments, seq: f.sarSegmentSeqnum, refBits: 16 };
  }
  if (concat && (concat.total < 1 || concat.seq < 1 || concat.seq > concat.total)) return null;
  if (concat && concat.total === 1) concat = null;
  return { payload: body, dataCoding: f.dataCoding, concat };
}

/** `readInboundPart` of a submit_sm or deliver_sm as the SMPP library decoded it. */
export function readPduPart(pdu: PDU): InboundPart | null {
  return readInboundPart({
    esmClass: num(pdu['esm_class']) ?? 0,
    dataCoding: num(pdu['data_coding']) ?? 0,
    shortMessage: buf(pdu['short_message']),
    messagePayload: bufOrUndefined(pdu['message_payload']),
    sarMsgRefNum: num(pdu['sar_msg_ref_num']),
    sarTotalSegments: num(pdu['sar_total_segments']),
    sarSegmentSeqnum: num(pdu['sar_segment_seqnum']),
  });
}

export interface ReassembledMessage {
  text: string;
  dataCoding: number;
  parts: number;
  /** Tags given with the earlier parts (all but the one that completed the message), in arrival order. */
  earlierTags: string[];
}

export interface Reassembler {
  /**
   * Add a part. Returns the whole message when it is complete, 'pending' while parts are missing,
   * or 'invalid' when the coding is not one we decode.
   */
  add(key: string, part: InboundPart, tag?: string): ReassembledMessage | 'pending' | 'invalid';
  /** Drop incomplete messages older than the hold time; returns how many were dropped. */
  sweep(): number;
  readonly size: number;
}

/**
 * Concatenated input is joined as octets and decoded once, so a sender that split an escape pair
 * or a surrogate pair across parts still decodes correctly.
 */
export function createReassembler(opts: { holdMs: number; now: () => number; maxPending?: number }): Reassembler {
  const maxPending = opts.maxPending ?? 10_000;
  const pending = new Map<
    string,
    { at: number; total: number; dataCoding: number; parts: Map<number, Buffer>; tags: string[] }
  >();
  return {
    add(key, part, tag) {
      if (!part.concat) {
        const text = decodeByDataCoding(part.payload, part.dataCoding);
        return text === null ? 'invalid' : { text, dataCoding: part.dataCoding, parts: 1, earlierTags: [] };
      }
      const c = part.concat;
      const k = `${key}|${c.refBits}:${c.reference}:${c.total}`;
      let entry = pending.get(k);
      if (!entry) {
        if (pending.size >= maxPending) {
          const oldest = pending.keys().next().value;
          if (oldest !== undefined) pending.delete(oldest);
        }
        entry = { at: opts.now(), total: c.total, dataCoding: part.dataCoding, parts: new Map(), tags: [] };
        pending.set(k, entry);
      }
      entry.parts.set(c.seq, part.payload);
      if (entry.parts.size < entry.total) {
        if (tag !== undefined) entry.tags.push(tag);
        return 'pending';
      }
      pending.delete(k);
      const bytes: Buffer[] = [];
      for (let s = 1; s <= entry.total; s++) bytes.push(entry.parts.get(s) as Buffer);
      const text = decodeByDataCoding(Buffer.concat(bytes), entry.dataCoding);
      return text === null
        ? 'invalid'
        : { text, dataCoding: entry.dataCoding, parts: entry.total, earlierTags: entry.tags };
    },
    sweep() {
      const limit = opts.now() - opts.holdMs;
      let n = 0;
      for (const [k, e] of pending) {
        if (e.at <= limit) {
          pending.delete(k);
          n++;
        }
      }
      return n;
    },
    get size() {
      return pending.size;
    },
  };
}
