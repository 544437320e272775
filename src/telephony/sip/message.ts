/** SIP message model: raw header lines kept in order, typed views computed on demand (RFC 3261 §7). */
import {
  parseCSeq,
  parseNameAddr,
  parseVia,
  splitOutside,
  SipParseError,
  type CSeq,
  type NameAddr,
  type Via,
} from './headers.js';

export interface HeaderField {
  /** The name as it appeared on the wire (compact or long, any case). */
  name: string;
  /** The value with folding undone and surrounding whitespace trimmed. */
  value: string;
  /** Canonical (lower-case, long-form) name, filled in by the parser so look-ups skip re-normalising. */
  key?: string;
}

interface MessageBase {
  version: string;
  headers: HeaderField[];
  body: Buffer;
}

export interface SipRequest extends MessageBase {
  kind: 'request';
  method: string;
  uri: string;
}

export interface SipResponse extends MessageBase {
  kind: 'response';
  status: number;
  reason: string;
}

export type SipMessage = SipRequest | SipResponse;

const COMPACT: Record<string, string> = {
  v: 'via',
  f: 'from',
  t: 'to',
  i: 'call-id',
  m: 'contact',
  l: 'content-length',
  c: 'content-type',
  k: 'supported',
  s: 'subject',
  e: 'content-encoding',
  o: 'event',
  r: 'refer-to',
  b: 'referred-by',
  u: 'allow-events',
  x: 'session-expires',
  y: 'identity',
};

/** Headers whose comma-separated values are separate entries (RFC 3261 §7.3.1). */
const LIST_HEADERS = new Set([
  'via',
  'contact',
  'route',
  'record-route',
  'allow',
  'supported',
  'require',
  'proxy-require',
  'unsupported',
]);

/** Headers that may appear at most once; a second copy makes the request a 400 (RFC 4475 §3.1.2.x). */
export const SINGLE_HEADERS = ['to', 'from', 'call-id', 'cseq', 'max-forwards', 'content-length', 'content-type'];

const COMPACT_MAP = new Map(Object.entries(COMPACT));
// Header names repeat on every message; a bounded cache keeps this off the profile.
const canonicalCache = new Map<string, string>();

export function canonicalName(name: string): string {
  const hit = canonicalCache.get(name);
  if (hit !== undefined) return hit;
  const n = name.toLowerCase();
  const c = COMPACT_MAP.get(n) ?? n;
  if (canonicalCache.size < 2000) canonicalCache.set(name, c);
  return c;
}

/** Raw values of every line with this (canonical) name, in order. */
export function headerLines(msg: { headers: HeaderField[] }, name: string): string[] {
  const want = canonicalName(name);
  const out: string[] = [];
  for (const h of msg.headers) if ((h.key ?? canonicalName(h.name)) === want) out.push(h.value);
  return out;
}

/** Every value of a header, list headers split on commas outside quotes and <>. */
export function headerValues(msg: { headers: HeaderField[] }, name: string): string[] {
  const lines = headerLines(msg, name);
  if (!LIST_HEADERS.has(canonicalName(name))) return lines;
  const out: string[] = [];
  for (const line of lines) for (const v of splitOutside(line, ',')) out.push(v.trim());
  return out;
}

export function getHeader(msg: { headers: HeaderField[] }, name: string): string | undefined {
  return headerLines(msg, name)[0];
}

export function setHeader(msg: { headers: HeaderField[] }, name: string, value: string): void {
  const want = canonicalName(name);
  let done = false;
  const out: HeaderField[] = [];
  for (const h of msg.headers) {
    if (canonicalName(h.name) !== want) out.push(h);
    else if (!done) {
      out.push({ name: h.name, value });
      done = true;
    }
  }
  if (!done) out.push({ name, value });
  msg.headers = out;
}

export function removeHeader(msg: { headers: HeaderField[] }, name: string): void {
  const want = canonicalName(name);
  msg.headers = msg.headers.filter((h) => canonicalName(h.name) !== want);
}

export function addHeader(msg: { headers: HeaderField[] }, name: string, value: string): void {
  msg.headers.push({ name, value });
}

function required(msg: SipMessage, name: string): string {
  const v = getHeader(msg, name);
  if (v === undefined) throw new SipParseError(`missing ${name}`);
  return v;
}

export const vias = (msg: SipMessage): Via[] => headerValues(msg, 'via').map(parseVia);
export const topVia = (msg: SipMessage): Via => {
  const v = headerValues(msg, 'via')[0];
  if (v === undefined) throw new SipParseError('missing Via');
  return parseVia(v);
};
export const fromOf = (msg: SipMessage): NameAddr => parseNameAddr(required(msg, 'from'));
export const toOf = (msg: SipMessage): NameAddr => parseNameAddr(required(msg, 'to'));
export const callIdOf = (msg: SipMessage): string => required(msg, 'call-id');
export const cseqOf = (msg: SipMessage): CSeq => parseCSeq(required(msg, 'cseq'));
export const contactsOf = (msg: SipMessage): NameAddr[] => headerValues(msg, 'contact').map(parseNameAddr);
export const routesOf = (msg: SipMessage): NameAddr[] => headerValues(msg, 'route').map(parseNameAddr);
export const recordRoutesOf = (msg: SipMessage): NameAddr[] => headerValues(msg, 'record-route').map(parseNameAddr);
export function maxForwardsOf(msg: SipMessage): number | undefined {
  const v = getHeader(msg, 'max-forwards');
  if (v === undefined) return undefined;
  if (!/^\d{1,9}$/.test(v.trim()) || Number(v) > 255) throw new SipParseError('bad Max-Forwards');
  return Number(v);
}
export function tagOf(na: NameAddr): string | undefined {
  const t = na.params['tag'];
  return t === null ? undefined : t;
}

/** Copies the first line of a header, keeping the name as written. */
function copyLines(from: SipMessage, to: HeaderField[], name: string): void {
  const want = canonicalName(name);
  for (const h of from.headers) if (canonicalName(h.name) === want) to.push({ ...h });
}

export interface ResponseOptions {
  toTag?: string;
  headers?: HeaderField[];
  body?: Buffer;
}

/** Builds a response copying Via, From, To, Call-ID, CSeq (RFC 3261 §8.2.6.2). */
export function createResponse(
  req: SipRequest,
  status: number,
  reason: string,
  opts: ResponseOptions = {},
): SipResponse {
  const headers: HeaderField[] = [];
  copyLines(req, headers, 'via');
  copyLines(req, headers, 'from');
  const toLine = req.headers.find((h) => canonicalName(h.name) === 'to');
  if (toLine) {
    let value = toLine.value;
    if (opts.toTag !== undefined && status > 100 && !/;\s*tag\s*=/i.test(value)) value += `;tag=${opts.toTag}`;
    headers.push({ name: toLine.name, value });
  }
  copyLines(req, headers, 'call-id');
  copyLines(req, headers, 'cseq');
  if (opts.headers) headers.push(...opts.headers);
  return { kind: 'response', version: 'SIP/2.0', status, reason, headers, body: opts.body ?? Buffer.alloc(0) };
}

/** Serialises with a Content-Length matching the body (a stream transport needs it, RFC 3261 §18.3). */
export function serialize(msg: SipMessage): Buffer {
  const start =
    msg.kind === 'request' ? `${msg.method} ${msg.uri} ${msg.version}` : `${msg.version} ${msg.status} ${msg.reason}`;
  let head = start + '\r\n';
  let sawLength = false;
  for (const h of msg.headers) {
    if (canonicalName(h.name) === 'content-length') {
      if (sawLength) continue;
      sawLength = true;
      head += `${h.name}: ${msg.body.length}\r\n`;
      continue;
    }
    head += `${h.name}: ${h.value}\r\n`;
  }
  if (!sawLength) head += `Content-Length: ${msg.body.length}\r\n`;
  head += '\r\n';
  return msg.body.length ? Buffer.concat([Buffer.from(head, 'utf8'), msg.body]) : Buffer.from(head, 'utf8');
}
