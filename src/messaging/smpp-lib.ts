import smpp from 'smpp';
import type { PDU, Session } from 'smpp';

export type { PDU, Session };

/** SMPP 3.4 command_status values we answer or react to (§5.1.3). */
export const STATUS = {
  ESME_ROK: 0x00,
  ESME_RINVMSGLEN: 0x01,
  ESME_RINVCMDID: 0x03,
  ESME_RINVBNDSTS: 0x04,
  ESME_RALYBND: 0x05,
  ESME_RSYSERR: 0x08,
  ESME_RINVSRCADR: 0x0a,
  ESME_RINVDSTADR: 0x0b,
  ESME_RBINDFAIL: 0x0d,
  ESME_RMSGQFUL: 0x14,
  ESME_RSUBMITFAIL: 0x45,
  ESME_RTHROTTLED: 0x58,
  ESME_RINVDCS: 0x104,
  ESME_RUNKNOWNERR: 0xff,
  ESME_RDELIVERYFAILURE: 0xfe,
  // Permanent application error: the SMSC must not retry the message.
  ESME_RX_P_APPN: 0x65,
} as const;

let rawCodec = false;

/**
 * The library decodes short_message/message_payload into strings with its own charset guesses
 * (lossy for GSM-7, and it lets the SMSC default decide). We keep the octets and do the encodings
 * ourselves (segments.ts, inbound.ts), so the message filters are removed once, process-wide.
 * Everything in this process that speaks SMPP goes through this folder, so the change is local to it.
 */
export function useRawMessageCodec(): void {
  if (rawCodec) return;
  rawCodec = true;
  for (const name of ['submit_sm', 'deliver_sm', 'replace_sm', 'submit_multi']) {
    const p = smpp.commands[name]?.params?.short_message;
    if (p) delete p.filter;
  }
  const mp = smpp.tlvs['message_payload'];
  if (mp) delete mp.filter;
  // A command_length under the 16-octet header would leave the library waiting forever for a
  // negative read; make it a framing error like an oversize one, so the socket is destroyed.
  const original = smpp.PDU.commandLength;
  smpp.PDU.commandLength = (stream: unknown) => {
    const n = original(stream);
    if (n !== false && n < 16) throw new Error('PDU length was too small');
    return n;
  };
}

export const createPdu = (command: string, options?: Record<string, unknown>): PDU => new smpp.PDU(command, options);

/**
 * SMPP is request/response with a window of outstanding PDUs: each submit_sm, its response and
 * each enquire_link is a small write that must leave at once. With Nagle's algorithm on (Node's
 * default for net sockets) a PDU written while an earlier one is unacknowledged waits for that
 * ACK, which the peer may delay by up to 40 ms; so every SMPP socket here turns it off.
 */
export function createSmppListener(options: Record<string, unknown>, onSession: (s: Session) => void) {
  useRawMessageCodec();
  return smpp.createServer({ ...options, noDelay: true }, onSession);
}

export function connectSmpp(options: Record<string, unknown>): Session {
  useRawMessageCodec();
  const s = smpp.connect(options);
  // Before the connect completes Node keeps the setting and applies it to the socket once open (plain or TLS).
  s.socket.setNoDelay(true);
  return s;
}

export function num(v: unknown): number | undefined {
  return typeof v === 'number' ? v : undefined;
}

export function str(v: unknown): string {
  if (typeof v === 'string') return v;
  if (Buffer.isBuffer(v)) return v.toString('latin1');
  return '';
}

export function buf(v: unknown): Buffer {
  if (Buffer.isBuffer(v)) return v;
  if (typeof v === 'string') return Buffer.from(v, 'latin1');
  return Buffer.alloc(0);
}

export function bufOrUndefined(v: unknown): Buffer | undefined {
  return Buffer.isBuffer(v) ? v : undefined;
}
