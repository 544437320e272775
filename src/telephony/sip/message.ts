/** SIP message model: raw header lines kept in order, typed views computed on demand (RFC 3261 §7). */
import {
  parseCSeq,
  parseNameAddr,
  parseUri,
  parseVia,
  splitOutside,
  SipParseError,
  type CSeq,
  type NameAddr,
  type SipUri,
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
  return firstLine(msg, canonicalName(name))?.value;
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

/**
 * Typed views parsed once per header line. A HeaderField is never changed once parsed (setHeader,
 * stampVia and the dialog code put new lines in place of old ones), so the view parsed for one
 * reader (the parser's validation, the stack's matching, the B2BUA) serves the next. Views are
 * frozen: a caller that needs a changed header builds a new value rather than editing a shared one.
 * The value is kept beside the view so a line whose text did change is parsed again.
 */
interface CachedView {
  value: string;
  view: unknown;
}
const VIEW = Symbol('sip.view');
type WithView = HeaderField & { [VIEW]?: CachedView };

/** Freezes a parsed view and what it holds (params, URI); a frozen object reads as fast as another. */
function freezeView<T>(view: T): T {
  if (view === null || typeof view !== 'object') return view;
  if (Array.isArray(view)) {
    for (const v of view) freezeView(v);
  } else {
    const o = view as { params?: object; uri?: { params: object; headers: object } };
    if (o.params) o.params = frozen(o.params);
    if (o.uri) {
      o.uri.params = frozen(o.uri.params);
      o.uri.headers = frozen(o.uri.headers);
      Object.freeze(o.uri);
    }
  }
  return Object.freeze(view);
}

/** One frozen empty object for every empty params or URI headers of a view (most of them): no freeze each. */
const FROZEN_EMPTY: Record<string, never> = Object.freeze({});

function frozen(o: object): object {
  for (const _ in o) return Object.freeze(o);
  return FROZEN_EMPTY;
}

function viewOf<T>(h: HeaderField, parse: (value: string) => T): T {
  const hit = (h as WithView)[VIEW];
  if (hit !== undefined && hit.value === h.value) return hit.view as T;
  const view = freezeView(parse(h.value));
  (h as WithView)[VIEW] = { value: h.value, view };
  return view;
}

/** Records `view` as the parsed form of `h` (for a line built from an already parsed value). */
export function primeView(h: HeaderField, view: Via[] | NameAddr | CSeq): void {
  (h as WithView)[VIEW] = { value: h.value, view: freezeView(view) };
}

/**
 * A copy of `s` that holds nothing else alive, for a value kept as long as a call lasts. A header
 * value is a slice of its datagram's whole header text (or a concatenation of such slices), and V8
 * keeps the text alive as long as the value. (V8 copies strings shorter than 13 characters instead
 * of slicing them.)
 */
export function detached(s: string): string {
  return s.length < 13 ? s : Buffer.from(s, 'utf8').toString('utf8');
}

/**
 * A copy of `b` in memory of its own, for a body kept as long as a call lasts (its SDP). A parsed
 * body is a slice of Node's shared 8 KiB pool, and one slice kept keeps the whole pool block.
 */
export function detachedBytes(b: Buffer): Buffer {
  if (b.length === 0) return b;
  const own = Buffer.allocUnsafeSlow(b.length);
  b.copy(own);
  return own;
}

const REQUEST_URI = Symbol('sip.requestUri');
type WithRequestUri = SipRequest & { [REQUEST_URI]?: CachedView };

/**
 * The Request-URI parsed once per request (frozen, see `viewOf`): the parser's validation, the
 * revenue share and number answering handlers and the B2BUA each read it. Kept beside the text it
 * came from, so a request whose `uri` was replaced is parsed again. Throws as `parseUri` does.
 */
export function requestUriOf(req: SipRequest): SipUri {
  const hit = (req as WithRequestUri)[REQUEST_URI];
  if (hit !== undefined && hit.value === req.uri) return hit.view as SipUri;
  const view = parseUri(req.uri);
  Object.freeze(view.params);
  Object.freeze(view.headers);
  Object.freeze(view);
  (req as WithRequestUri)[REQUEST_URI] = { value: req.uri, view };
  return view;
}

const keyOf = (h: HeaderField): string => h.key ?? canonicalName(h.name);

function firstLine(msg: { headers: HeaderField[] }, want: string): HeaderField | undefined {
  for (const h of msg.headers) if (keyOf(h) === want) return h;
  return undefined;
}

function requiredLine(msg: SipMessage, name: string): HeaderField {
  const h = firstLine(msg, name);
  if (h === undefined) throw new SipParseError(`missing ${name}`);
  return h;
}

function required(msg: SipMessage, name: string): string {
  return requiredLine(msg, name).value;
}

const splitList = (value: string): string[] =>
  value.indexOf(',') < 0 ? [value] : splitOutside(value, ',').map((v) => v.trim());
const parseViaLine = (value: string): Via[] => splitList(value).map(parseVia);
const parseNameAddrLine = (value: string): NameAddr[] => splitList(value).map(parseNameAddr);

/** Every entry of a list header parsed, each line's views from the cache; one line's array is returned as is. */
function listOf<T>(msg: SipMessage, name: string, parse: (value: string) => T[]): readonly T[] {
  let out: T[] | undefined;
  let only: readonly T[] | undefined;
  for (const h of msg.headers) {
    if (keyOf(h) !== name) continue;
    const v = viewOf(h, parse);
    if (only === undefined && out === undefined) only = v;
    else {
      out ??= [...(only ?? [])];
      out.push(...v);
    }
  }
  return out ?? only ?? [];
}

/** The Vias of one header line, parsed once (see `viewOf`). */
export const viasOfLine = (h: HeaderField): readonly Via[] => viewOf(h, parseViaLine);
export const vias = (msg: SipMessage): readonly Via[] => listOf(msg, 'via', parseViaLine);
export const topVia = (msg: SipMessage): Via => {
  const h = firstLine(msg, 'via');
  const v = h === undefined ? undefined : viewOf(h, parseViaLine)[0];
  if (v === undefined) throw new SipParseError('missing Via');
  return v;
};
export const fromOf = (msg: SipMessage): NameAddr => viewOf(requiredLine(msg, 'from'), parseNameAddr);
export const toOf = (msg: SipMessage): NameAddr => viewOf(requiredLine(msg, 'to'), parseNameAddr);
export const callIdOf = (msg: SipMessage): string => required(msg, 'call-id');
export const cseqOf = (msg: SipMessage): CSeq => viewOf(requiredLine(msg, 'cseq'), parseCSeq);
export const contactsOf = (msg: SipMessage): readonly NameAddr[] => listOf(msg, 'contact', parseNameAddrLine);
export const routesOf = (msg: SipMessage): readonly NameAddr[] => listOf(msg, 'route', parseNameAddrLine);
export const recordRoutesOf = (msg: SipMessage): readonly NameAddr[] => listOf(msg, 'record-route', parseNameAddrLine);
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

/**
 * Copies every line of a header, keeping the name as written. The lines themselves are shared (no
 * code changes a HeaderField in place), so the response reuses the request's parsed views.
 */
function copyLines(from: SipMessage, to: HeaderField[], name: string): void {
  const want = canonicalName(name);
  for (const h of from.headers) if (keyOf(h) === want) to.push(h);
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
  const toLine = firstLine(req, 'to');
  if (toLine) {
    if (opts.toTag !== undefined && status > 100 && !/;\s*tag\s*=/i.test(toLine.value)) {
      headers.push({ name: toLine.name, value: `${toLine.value};tag=${opts.toTag}`, key: 'to' });
    } else headers.push(toLine);
  }
  copyLines(req, headers, 'call-id');
  copyLines(req, headers, 'cseq');
  if (opts.headers) headers.push(...opts.headers);
  return { kind: 'response', version: 'SIP/2.0', status, reason, headers, body: opts.body ?? Buffer.alloc(0) };
}

/**
 * Serialises with a Content-Length matching the body (a stream transport needs it, RFC 3261 §18.3).
 * `own`: in memory of its own, for bytes kept to be resent, where a slice of Node's shared 8 KiB
 * pool would keep the whole pool block alive.
 */
export function serialize(msg: SipMessage, own = false): Buffer {
  const start =
    msg.kind === 'request' ? `${msg.method} ${msg.uri} ${msg.version}` : `${msg.version} ${msg.status} ${msg.reason}`;
  let head = start + '\r\n';
  let sawLength = false;
  for (const h of msg.headers) {
    if (keyOf(h) === 'content-length') {
      if (sawLength) continue;
      sawLength = true;
      head += `${h.name}: ${msg.body.length}\r\n`;
      continue;
    }
    head += `${h.name}: ${h.value}\r\n`;
  }
  if (!sawLength) head += `Content-Length: ${msg.body.length}\r\n`;
  head += '\r\n';
  if (!msg.body.length && !own) return Buffer.from(head, 'utf8');
  // The head written once into a buffer that has room for the body too (no copy of a concat).
  const headBytes = Buffer.byteLength(head, 'utf8');
  const size = headBytes + msg.body.length;
  const out = own ? Buffer.allocUnsafeSlow(size) : Buffer.allocUnsafe(size);
  out.write(head, 0, 'utf8');
  msg.body.copy(out, headBytes);
  return out;
}
