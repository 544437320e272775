/** SIP parser (RFC 3261 §7, §25) hardened against the RFC 4475 torture messages. */
import { isToken, parseNameAddr, SipParseError } from './headers.js';
import {
  canonicalName,
  contactsOf,
  cseqOf,
  detached,
  fromOf,
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

/**
 * Index just past the blank line ending the header block (CRLF CRLF, or LF LF), or -1. One pass over
 * the bytes: two `indexOf` searches each scanned the whole datagram, body included, when the message
 * had no bare-LF blank line, which is every message.
 */
export function findHeaderEnd(buf: Buffer, from = 0): number {
  const last = buf.length - 1;
  for (let i = buf.indexOf(10, from); i >= 0 && i < last; i = buf.indexOf(10, i + 1)) {
    const next = buf[i + 1];
    if (next === 10) return i + 2;
    if (next === 13 && buf[i + 2] === 10 && i > from && buf[i - 1] === 13) return i + 3;
  }
  return -1;
}

/** A header name as it came (before any whitespace ahead of the colon) → its trimmed name and canonical key. */
interface KnownName {
  name: string;
  key: string;
}
// Header names repeat on every message: each distinct spelling is trimmed, checked and
// canonicalised once (a bounded cache; a name outside it takes the slow path, with the same result).
const knownNames = new Map<string, KnownName>();
const MAX_KNOWN_NAMES = 1000;

function headerName(raw: string): KnownName {
  const hit = knownNames.get(raw);
  if (hit !== undefined) return hit;
  let n = raw.length;
  while (n > 0 && (raw.charCodeAt(n - 1) === 32 || raw.charCodeAt(n - 1) === 9)) n--;
  if (!isToken(raw.slice(0, n))) throw new SipParseError('bad header name');
  // Copies (`detached`): a slice kept in the cache would keep its message's whole header text alive.
  const name = detached(raw.slice(0, n));
  const known = { name, key: canonicalName(name) };
  if (knownNames.size < MAX_KNOWN_NAMES) knownNames.set(detached(raw), known);
  return known;
}

/**
 * The header fields of `text` from `from` on, one per line (lines end in LF or CRLF, as
 * `split(/\r?\n/)` cuts them), folded lines joined to their header and empty lines skipped.
 */
function splitHeaders(text: string, from: number): HeaderField[] {
  const headers: HeaderField[] = [];
  let last: HeaderField | undefined;
  for (let ls = from; ls < text.length;) {
    let nl = text.indexOf('\n', ls);
    if (nl < 0) nl = text.length;
    const le = nl > ls && text.charCodeAt(nl - 1) === 13 ? nl - 1 : nl;
    const at = ls;
    ls = nl + 1;
    if (le === at) continue;
    const first = text.charCodeAt(at);
    if (first === 32 || first === 9) {
      if (!last) throw new SipParseError('continuation line without header');
      last.value = (last.value + ' ' + text.slice(at, le).trim()).trim();
      continue;
    }
    const colon = text.indexOf(':', at);
    if (colon <= at || colon >= le) throw new SipParseError('header line without colon');
    const { name, key } = headerName(text.slice(at, colon));
    last = { name, value: text.slice(colon + 1, le).trim(), key };
    headers.push(last);
  }
  return headers;
}

/** Index of the end of the first line of `text` (before its CR LF or LF), and where the next one starts. */
function firstLineEnd(text: string): { end: number; next: number } {
  const nl = text.indexOf('\n');
  if (nl < 0) return { end: text.length, next: text.length };
  return { end: nl > 0 && text.charCodeAt(nl - 1) === 13 ? nl - 1 : nl, next: nl + 1 };
}

/**
 * Method, Request-URI and version: three parts, none empty, one space apart (no other space). Cut at
 * the two spaces: the regex match it replaces was among the parser's larger items on the call path.
 */
function requestLineOf(line: string): [string, string, string] | undefined {
  const a = line.indexOf(' ');
  const b = a < 0 ? -1 : line.indexOf(' ', a + 1);
  if (a <= 0 || b <= a + 1 || b >= line.length - 1 || line.indexOf(' ', b + 1) >= 0) return undefined;
  return [line.slice(0, a), line.slice(a + 1, b), line.slice(b + 1)];
}

const isDigit = (c: number): boolean => c >= 48 && c <= 57;
/** What `.` does not match in a JavaScript regex: a reason phrase holding one made no status line. */
const LINE_TERMINATOR = /[\n\r\u2028\u2029]/;

/**
 * Version, status code and reason of `SIP/x.y NNN reason` (or `SIP/x.y NNN`, reason ''). `SIP/2.0`
 * is read without a regex match; anything else takes the regexes it always had.
 */
function statusLineOf(line: string): [string, string, string] | undefined {
  if (
    line.startsWith('SIP/2.0 ') &&
    isDigit(line.charCodeAt(8)) &&
    isDigit(line.charCodeAt(9)) &&
    isDigit(line.charCodeAt(10))
  ) {
    if (line.length === 11) return ['SIP/2.0', line.slice(8, 11), ''];
    const reason = line.slice(12);
    if (line.charCodeAt(11) === 32 && !LINE_TERMINATOR.test(reason)) return ['SIP/2.0', line.slice(8, 11), reason];
  }
  const m = /^(SIP\/\d+\.\d+) (\d{3}) (.*)$/.exec(line) ?? /^(SIP\/\d+\.\d+) (\d{3})$/.exec(line);
  return m ? [m[1] as string, m[2] as string, m[3] ?? ''] : undefined;
}

export interface ParseOptions {
  /** A datagram carries exactly one message, so a missing Content-Length means "the rest" (RFC 3261 §18.3). */
  datagram?: boolean;
}

/** The body of a message without one: zero bytes, nothing to change, shared. */
const NO_BODY: Buffer = Buffer.alloc(0);

function failWith(reason: string, isRequest: boolean, headers: HeaderField[], status = 400, method?: string): never {
  throw new SipMessageError(reason, status, isRequest, headers, method);
}

/** Parses one message from `buf` (which holds the header block and at least the body). */
export function parseMessage(buf: Buffer, opts: ParseOptions = {}): SipMessage {
  let start = 0;
  // Keep-alive CRLFs before a message are skipped (RFC 5626 §3.5.1).
  while (start < buf.length && (buf[start] === 13 || buf[start] === 10)) start++;
  const end = findHeaderEnd(buf, start);
  if (end < 0) throw new SipParseError('no end of headers');
  if (end - start > MAX_HEADER_BYTES) throw new SipParseError('headers too large');
  const text = buf.toString('utf8', start, end);
  const first = firstLineEnd(text);
  const startLine = text.slice(0, first.end);
  const headers = splitHeaders(text, first.next);
  const isRequest = !startLine.startsWith('SIP/');

  let length: string | undefined;
  for (const h of headers) {
    if (h.key !== 'content-length') continue;
    if (length !== undefined) failWith('multiple Content-Length', isRequest, headers);
    length = h.value;
  }
  let body: Buffer;
  if (length !== undefined) {
    if (!/^\d+$/.test(length)) failWith('bad Content-Length', isRequest, headers);
    const len = Number(length);
    if (len > MAX_BODY_BYTES) failWith('body too large', isRequest, headers);
    if (end + len > buf.length) failWith('Content-Length larger than message', isRequest, headers);
    body = len === 0 ? NO_BODY : Buffer.from(buf.subarray(end, end + len));
  } else {
    if (!opts.datagram) failWith('missing Content-Length', isRequest, headers);
    body = end === buf.length ? NO_BODY : Buffer.from(buf.subarray(end));
  }

  let msg: SipMessage;
  if (isRequest) {
    const m = requestLineOf(startLine);
    if (!m) return failWith('bad request line', isRequest, headers);
    const [method, uri, version] = m;
    if (!isToken(method)) failWith('bad method', isRequest, headers);
    if (version !== 'SIP/2.0') {
      if (!/^SIP\/\d+\.\d+$/i.test(version)) failWith('bad request line', isRequest, headers);
      if (version.toUpperCase() !== 'SIP/2.0') failWith('SIP version not supported', isRequest, headers, 505, method);
    }
    msg = { kind: 'request', method, uri, version: 'SIP/2.0', headers, body };
  } else {
    const m = statusLineOf(startLine);
    if (!m) return failWith('bad status line', isRequest, headers);
    const status = Number(m[1]);
    if (status < 100 || status > 699) failWith('bad status code', isRequest, headers);
    if (m[0] !== 'SIP/2.0') failWith('SIP version not supported', isRequest, headers);
    msg = { kind: 'response', status, reason: m[2], version: 'SIP/2.0', headers, body };
  }
  try {
    validate(msg);
  } catch (err) {
    if (err instanceof SipParseError)
      failWith(err.reason, isRequest, headers, err.status, msg.kind === 'request' ? msg.method : undefined);
    throw err;
  }
  return msg;
}

const REQUIRED_HEADERS = ['to', 'from', 'call-id', 'cseq', 'via'];
/** Each counted header's slot in `validate`'s counts: those that may appear once, then Via. */
const COUNTED = [...SINGLE_HEADERS, 'via'];
const SLOT = new Map(COUNTED.map((name, i) => [name, i]));
const REQUIRED_SLOTS = REQUIRED_HEADERS.map((name) => SLOT.get(name) as number);

function validate(msg: SipMessage): void {
  // One pass counts the headers that must appear once or at least once.
  const seen = COUNTED.map(() => 0);
  for (const h of msg.headers) {
    const slot = SLOT.get(h.key ?? canonicalName(h.name));
    if (slot !== undefined) seen[slot]!++;
  }
  for (let i = 0; i < SINGLE_HEADERS.length; i++) {
    if (seen[i]! > 1) throw new SipParseError(`multiple ${SINGLE_HEADERS[i]} headers`);
  }
  for (let i = 0; i < REQUIRED_HEADERS.length; i++) {
    if (seen[REQUIRED_SLOTS[i]!] === 0) throw new SipParseError(`missing ${REQUIRED_HEADERS[i]} header`);
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
  for (const name of ROUTE_HEADERS) {
    for (const h of msg.headers) {
      if ((h.key ?? canonicalName(h.name)) === name && h.value !== '') parseNameAddr(h.value.split(',')[0] ?? '');
    }
  }
}

const ROUTE_HEADERS = ['route', 'record-route'];

/** Stream framing state: feed bytes, get whole messages back (RFC 3261 §18.3). */
export interface StreamFrame {
  message?: SipMessage;
  error?: SipParseError;
}

function errorFor(head: Buffer, reason: string): SipParseError {
  try {
    const text = head.toString('utf8');
    const first = firstLineEnd(text);
    const startLine = text.slice(0, first.end);
    const isRequest = !startLine.startsWith('SIP/');
    return new SipMessageError(
      reason,
      400,
      isRequest,
      splitHeaders(text, first.next),
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
