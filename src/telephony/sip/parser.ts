/** SIP parser (RFC 3261 §7, §25) hardened against the RFC 4475 torture messages. */
import { isToken, parseNameAddr, SipParseError } from './headers.js';
import {
  canonicalName,
  contactsOf,
  cseqOf,
  fromOf,
  headerLines,
  maxForwardsOf,
  requestUriOf,
  SINGLE_HEADERS,
  toOf,
  vias,
  type HeaderField,
  type SipMessage,
} from './message.js';

export { SipParseError };

export const MAX_HEADER_BYTES = 16 * 1024;
export const MAX_BODY_BYTES = 64 * 1024;

/** A parse failure that still knows enough of the message to answer it with a 400. */
export class SipMessageError extends SipParseError {
  constructor(
    reason: string,
    status: number,
    readonly isRequest: boolean,
    readonly headers: HeaderField[],
    readonly method?: string,
  ) {
    super(reason, status);
    this.name = 'SipMessageError';
  }
}

/** Index just past the blank line ending the header block, or -1. */
export function findHeaderEnd(buf: Buffer, from = 0): number {
  const crlf = buf.indexOf('\r\n\r\n', from);
  const lf = buf.indexOf('\n\n', from);
  if (crlf < 0) return lf < 0 ? -1 : lf + 2;
  if (lf < 0 || crlf < lf) return crlf + 4;
  return lf + 2;
}

function splitHeaders(lines: string[]): HeaderField[] {
  const headers: HeaderField[] = [];
  for (const line of lines) {
    if (line === '') continue;
    if (line.startsWith(' ') || line.startsWith('\t')) {
      const last = headers[headers.length - 1];
      if (!last) throw new SipParseError('continuation line without header');
      last.value = (last.value + ' ' + line.trim()).trim();
      continue;
    }
    const colon = line.indexOf(':');
    if (colon <= 0) throw new SipParseError('header line without colon');
    const name = line.slice(0, colon).replace(/[ \t]+$/, '');
    if (!isToken(name)) throw new SipParseError('bad header name');
    headers.push({ name, value: line.slice(colon + 1).trim(), key: canonicalName(name) });
  }
  return headers;
}

export interface ParseOptions {
  /** A datagram carries exactly one message, so a missing Content-Length means "the rest" (RFC 3261 §18.3). */
  datagram?: boolean;
}

/** Parses one message from `buf` (which holds the header block and at least the body). */
export function parseMessage(buf: Buffer, opts: ParseOptions = {}): SipMessage {
  let start = 0;
  // Keep-alive CRLFs before a message are skipped (RFC 5626 §3.5.1).
  while (start < buf.length && (buf[start] === 13 || buf[start] === 10)) start++;
  const end = findHeaderEnd(buf, start);
  if (end < 0) throw new SipParseError('no end of headers');
  if (end - start > MAX_HEADER_BYTES) throw new SipParseError('headers too large');
  const text = buf.subarray(start, end).toString('utf8');
  const lines = text.split(/\r?\n/);
  const startLine = lines.shift() ?? '';
  const headers = splitHeaders(lines);
  const isRequest = !startLine.startsWith('SIP/');
  const fail = (reason: string, status = 400, method?: string): never => {
    throw new SipMessageError(reason, status, isRequest, headers, method);
  };

  const lengths = headerLines({ headers }, 'content-length');
  let body: Buffer;
  if (lengths.length > 1) fail('multiple Content-Length');
  if (lengths[0] !== undefined) {
    if (!/^\d+$/.test(lengths[0])) fail('bad Content-Length');
    const len = Number(lengths[0]);
    if (len > MAX_BODY_BYTES) fail('body too large');
    if (end + len > buf.length) fail('Content-Length larger than message');
    body = Buffer.from(buf.subarray(end, end + len));
  } else {
    if (!opts.datagram) fail('missing Content-Length');
    body = Buffer.from(buf.subarray(end));
  }

  let msg: SipMessage;
  if (isRequest) {
    const m = /^([^ ]+) ([^ ]+) ([^ ]+)$/.exec(startLine);
    if (!m) return fail('bad request line');
    const [, method = '', uri = '', version = ''] = m;
    if (!isToken(method)) fail('bad method');
    if (!/^SIP\/\d+\.\d+$/i.test(version)) fail('bad request line');
    if (version.toUpperCase() !== 'SIP/2.0') fail('SIP version not supported', 505, method);
    msg = { kind: 'request', method, uri, version: 'SIP/2.0', headers, body };
  } else {
    const m = /^(SIP\/\d+\.\d+) (\d{3}) (.*)$/.exec(startLine) ?? /^(SIP\/\d+\.\d+) (\d{3})$/.exec(startLine);
    if (!m) return fail('bad status line');
    const status = Number(m[2]);
    if (status < 100 || status > 699) fail('bad status code');
    if (m[1] !== 'SIP/2.0') fail('SIP version not supported');
    msg = { kind: 'response', status, reason: m[3] ?? '', version: 'SIP/2.0', headers, body };
  }
  try {
    validate(msg);
  } catch (err) {
    if (err instanceof SipParseError) fail(err.reason, err.status, msg.kind === 'request' ? msg.method : undefined);
    throw err;
  }
  return msg;
}

const REQUIRED_HEADERS = ['to', 'from', 'call-id', 'cseq', 'via'];
const COUNTED = new Set([...SINGLE_HEADERS, ...REQUIRED_HEADERS]);

function validate(msg: SipMessage): void {
  // One pass counts the headers that must appear once or at least once.
  const seen = new Map<string, number>();
  for (const h of msg.headers) {
    const k = h.key ?? canonicalName(h.name);
    if (COUNTED.has(k)) seen.set(k, (seen.get(k) ?? 0) + 1);
  }
  for (const name of SINGLE_HEADERS) {
    if ((seen.get(name) ?? 0) > 1) throw new SipParseError(`multiple ${name} headers`);
  }
  for (const name of REQUIRED_HEADERS) {
    if (!seen.has(name)) throw new SipParseError(`missing ${name} header`);
  }
  const cseq = cseqOf(msg);
  fromOf(msg);
  toOf(msg);
  if (vias(msg).length === 0) throw new SipParseError('missing via header');
  maxForwardsOf(msg);
  if (msg.kind === 'response') return;
  if (cseq.method !== msg.method) throw new SipParseError('CSeq method does not match request method');
  if (msg.uri.startsWith('<')) throw new SipParseError('Request-URI enclosed in <>');
  const uri = requestUriOf(msg);
  if ((uri.scheme === 'sip' || uri.scheme === 'sips') && Object.keys(uri.headers).length) {
    throw new SipParseError('headers not allowed in Request-URI');
  }
  contactsOf(msg);
  for (const name of ['route', 'record-route']) {
    for (const line of headerLines(msg, name)) if (line !== '') parseNameAddr(line.split(',')[0] ?? '');
  }
}

/** Stream framing state: feed bytes, get whole messages back (RFC 3261 §18.3). */
export interface StreamFrame {
  message?: SipMessage;
  error?: SipParseError;
}

function errorFor(head: Buffer, reason: string): SipParseError {
  try {
    const lines = head.toString('utf8').split(/\r?\n/);
    const startLine = lines.shift() ?? '';
    const isRequest = !startLine.startsWith('SIP/');
    return new SipMessageError(
      reason,
      400,
      isRequest,
      splitHeaders(lines),
      isRequest ? startLine.split(' ')[0] : undefined,
    );
  } catch {
    return new SipParseError(reason);
  }
}

export function createStreamFramer(): { push(chunk: Buffer): StreamFrame[] } {
  let pending: Buffer = Buffer.alloc(0);
  return {
    push(chunk) {
      pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      const out: StreamFrame[] = [];
      for (;;) {
        let s = 0;
        while (s < pending.length && (pending[s] === 13 || pending[s] === 10)) s++;
        if (s) pending = pending.subarray(s);
        if (!pending.length) break;
        const end = findHeaderEnd(pending);
        if (end < 0) {
          if (pending.length > MAX_HEADER_BYTES) {
            out.push({ error: new SipParseError('headers too large') });
            pending = Buffer.alloc(0);
          }
          break;
        }
        const head = pending.subarray(0, end).toString('utf8');
        const m = /^(?:content-length|l)[ \t]*:[ \t]*(\d+)[ \t]*$/im.exec(head);
        const len = m ? Number(m[1]) : 0;
        if (!m || len > MAX_BODY_BYTES) {
          // Without a usable length the stream cannot be resynchronised: report and stop reading.
          out.push({ error: errorFor(pending.subarray(0, end), m ? 'body too large' : 'missing Content-Length') });
          pending = Buffer.alloc(0);
          break;
        }
        if (pending.length < end + len) break;
        const frame = pending.subarray(0, end + len);
        pending = pending.subarray(end + len);
        try {
          out.push({ message: parseMessage(frame) });
        } catch (err) {
          if (!(err instanceof SipParseError)) throw err;
          out.push({ error: err });
        }
      }
      return out;
    },
  };
}

export { canonicalName };
