/** RTP fixed header (RFC 3550 §5.1) build and parse. */

export const RTP_HEADER_SIZE = 12;

export interface RtpPacket {
  payloadType: number;
  marker: boolean;
  sequence: number;
  timestamp: number;
  ssrc: number;
  payload: Uint8Array;
}

/** Builds one packet in a single allocation (header followed by payload). */
export function buildRtp(packet: RtpPacket): Buffer {
  const buf = Buffer.allocUnsafe(RTP_HEADER_SIZE + packet.payload.length);
  buf[0] = 0x80; // version 2, no padding, no extension, no CSRC
  buf[1] = (packet.marker ? 0x80 : 0) | (packet.payloadType & 0x7f);
  buf.writeUInt16BE(packet.sequence & 0xffff, 2);
  buf.writeUInt32BE(packet.timestamp >>> 0, 4);
  buf.writeUInt32BE(packet.ssrc >>> 0, 8);
  buf.set(packet.payload, RTP_HEADER_SIZE);
  return buf;
}

/** Parses a packet; returns null for anything that is not well-formed RTP version 2. */
export function parseRtp(buf: Uint8Array): RtpPacket | null {
  if (buf.length < RTP_HEADER_SIZE) return null;
  const b0 = buf[0] as number;
  const b1 = buf[1] as number;
  if (b0 >> 6 !== 2) return null;
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let offset = RTP_HEADER_SIZE + (b0 & 0x0f) * 4;
  if (b0 & 0x10) {
    if (offset + 4 > buf.length) return null;
    offset += 4 + view.getUint16(offset + 2) * 4;
  }
  let end = buf.length;
  if (b0 & 0x20) {
    const pad = buf[buf.length - 1] as number;
    if (pad === 0 || end - pad < offset) return null;
    end -= pad;
  }
  if (offset > end) return null;
  const payloadType = b1 & 0x7f;
  // 72–76 are RTCP packet types arriving on a muxed port (RFC 5761), not RTP.
  if (payloadType >= 72 && payloadType <= 76) return null;
  return {
    payloadType,
    marker: (b1 & 0x80) !== 0,
    sequence: view.getUint16(2),
    timestamp: view.getUint32(4),
    ssrc: view.getUint32(8),
    payload: buf.subarray(offset, end),
  };
}

/** True when sequence `a` comes after `b`, allowing for 16-bit wrap-around. */
export function sequenceAfter(a: number, b: number): boolean {
  const diff = (a - b) & 0xffff;
  return diff !== 0 && diff < 0x8000;
}
