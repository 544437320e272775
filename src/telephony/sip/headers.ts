/** Typed views of SIP header values (RFC 3261 §25). Each parser throws SipParseError with a reason. */

export class SipParseError extends Error {
  /** 400 for a malformed request, 505 for an unknown SIP version. */
  readonly status: number;
  constructor(
    readonly reason: string,
    status = 400,
  ) {
    super(reason);
    this.name = 'SipParseError';
    this.status = status;
  }
}

export interface SipUri {
  scheme: string;
  user?: string;
  password?: string;
  host: string;
  port?: number;
  params: Record<string, string | null>;
  headers: Record<string, string>;
}

export interface NameAddr {
  displayName?: string;
  uri: SipUri;
  params: Record<string, string | null>;
  /** Whether the URI was inside <>; a Contact `*` is represented by `star`. */
  wildcard?: boolean;
}

export interface Via {
  protocol: string;
  transport: string;
  host: string;
  port?: number;
  params: Record<string, string | null>;
}

export interface CSeq {
  seq: number;
  method: string;
}

export interface DigestParams {
  scheme: string;
  params: Record<string, string>;
}

const TOKEN = /^[A-Za-z0-9\-.!%*_+`'~]+$/;
const HOST = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-.]+)$/;

export function isToken(s: string): boolean {
  return TOKEN.test(s);
}

/**
 * Split on `sep` outside quotes and angle brackets. Scans indices and slices once per part: building
 * each part a character at a time made a string per character on every header read.
 */
export function splitOutside(value: string, sep: string): string[] {
  const out: string[] = [];
  let from = 0;
  let quoted = false;
  let angle = false;
  for (let i = 0; i < value.length; i++) {
    const ch = value[i] as string;
    if (quoted) {
      if (ch === '\\' && i + 1 < value.length) i++;
      else if (ch === '"') quoted = false;
      continue;
    }
    if (ch === '"') quoted = true;
    else if (ch === '<') angle = true;
    else if (ch === '>') angle = false;
    if (ch === sep && !angle) {
      out.push(value.slice(from, i));
      from = i + 1;
    }
  }
  if (quoted) throw new SipParseError('unterminated quoted string');
  out.push(value.slice(from));
  return out;
}

// Parameter names repeat on every message (tag, branch, rport, transport, lr): each spelling is
// trimmed, lower-cased and checked once (a bounded cache; one outside it takes the same slow path).
const paramNames = new Map<string, string>();
const MAX_PARAM_NAMES = 1000;

/** A copy of `s` that holds no larger string alive (V8 copies strings under 13 characters instead of slicing). */
const copied = (s: string): string => (s.length < 13 ? s : Buffer.from(s, 'utf8').toString('utf8'));

function paramName(raw: string, what: string): string {
  const hit = paramNames.get(raw);
  if (hit !== undefined) return hit;
  const name = raw.trim().toLowerCase();
  if (!isToken(name)) throw new SipParseError(`bad parameter name in ${what}`);
  // Copies: a slice kept in the cache would keep its message's whole header text alive.
  if (paramNames.size < MAX_PARAM_NAMES) paramNames.set(copied(raw), copied(name));
  return name;
}

function parseParams(parts: string[], what: string): Record<string, string | null> {
  const params: Record<string, string | null> = {};
  for (const raw of parts) {
    const p = raw.trim();
    if (p === '') throw new SipParseError(`empty parameter in ${what}`);
    const eq = p.indexOf('=');
    const name = paramName(eq < 0 ? p : p.slice(0, eq), what);
    let val: string | null = eq < 0 ? null : p.slice(eq + 1).trim();
    if (val !== null && val.startsWith('"')) {
      if (!val.endsWith('"') || val.length < 2) throw new SipParseError(`bad quoted parameter in ${what}`);
      val = val.slice(1, -1);
    } else if (val !== null && (val === '' || /\s/.test(val))) {
      throw new SipParseError(`bad parameter value in ${what}`);
    }
    params[name] = val;
  }
  return params;
}

export function parseUri(text: string): SipUri {
  const s = text.trim();
  if (s === '' || /\s/.test(s)) throw new SipParseError('bad URI: whitespace');
  const colon = s.indexOf(':');
  if (colon <= 0) throw new SipParseError('bad URI: no scheme');
  // Every message carries several URIs, so the usual ones are read without a regex match or a split
  // (their arrays and substrings were a large share of the SIP plane's garbage).
  let scheme: string;
  if (colon === 3 && s.startsWith('sip')) scheme = 'sip';
  else if (colon === 4 && s.startsWith('sips')) scheme = 'sips';
  else {
    scheme = s.slice(0, colon).toLowerCase();
    if (!/^[a-z][a-z0-9+\-.]*$/.test(scheme)) throw new SipParseError('bad URI scheme');
  }
  const rest = s.slice(colon + 1);
  if (scheme !== 'sip' && scheme !== 'sips') {
    return { scheme, host: rest, params: {}, headers: {} };
  }
  let hostPart = rest;
  let user: string | undefined;
  let password: string | undefined;
  const at = rest.lastIndexOf('@');
  if (at >= 0) {
    const userinfo = rest.slice(0, at);
    hostPart = rest.slice(at + 1);
    const pc = userinfo.indexOf(':');
    user = pc >= 0 ? userinfo.slice(0, pc) : userinfo;
    if (pc >= 0) password = userinfo.slice(pc + 1);
    if (user === '') throw new SipParseError('bad URI: empty user');
  }
  let headersText = '';
  const q = hostPart.indexOf('?');
  if (q >= 0) {
    headersText = hostPart.slice(q + 1);
    hostPart = hostPart.slice(0, q);
  }
  const semi = hostPart.indexOf(';');
  const hostport = semi < 0 ? hostPart : hostPart.slice(0, semi);
  // host, [IPv6] or host:port, [IPv6]:port
  let hostEnd = hostport.length;
  if (hostport.startsWith('[')) {
    const close = hostport.indexOf(']');
    if (close < 0) throw new SipParseError('bad URI host');
    hostEnd = close + 1;
  } else {
    const c = hostport.indexOf(':');
    if (c >= 0) hostEnd = c;
  }
  let port: number | undefined;
  if (hostEnd < hostport.length) {
    const digits = hostport.slice(hostEnd + 1);
    if (hostport.charCodeAt(hostEnd) !== 58 || !/^\d{1,5}$/.test(digits)) throw new SipParseError('bad URI host');
    port = Number(digits);
    if (port > 65535) throw new SipParseError('bad URI port');
  }
  const host = hostport.slice(0, hostEnd).toLowerCase();
  if (!HOST.test(host)) throw new SipParseError('bad URI host');
  const headers: Record<string, string> = {};
  if (headersText !== '') {
    for (const h of headersText.split('&')) {
      const eq = h.indexOf('=');
      if (eq <= 0) throw new SipParseError('bad URI header');
      headers[h.slice(0, eq)] = h.slice(eq + 1);
    }
  }
  const params = semi < 0 ? {} : parseParams(hostPart.slice(semi + 1).split(';'), 'URI');
  const uri: SipUri = { scheme, host, params, headers };
  if (user !== undefined) uri.user = user;
  if (password !== undefined) uri.password = password;
  if (port !== undefined) uri.port = port;
  return uri;
}

export function formatUri(u: SipUri): string {
  if (u.scheme !== 'sip' && u.scheme !== 'sips') return `${u.scheme}:${u.host}`;
  let s = `${u.scheme}:`;
  if (u.user !== undefined) s += u.user + (u.password !== undefined ? `:${u.password}` : '') + '@';
  s += u.host;
  if (u.port !== undefined) s += `:${u.port}`;
  for (const [k, v] of Object.entries(u.params)) s += v === null ? `;${k}` : `;${k}=${v}`;
  const hs = Object.entries(u.headers);
  if (hs.length) s += '?' + hs.map(([k, v]) => `${k}=${v}`).join('&');
  return s;
}

/** Percent-decodes a URI user part (RFC 3261 §19.1.4 compares unescaped). */
export function unescapeUser(user: string): string {
  try {
    return decodeURIComponent(user);
  } catch {
    return user;
  }
}

/** Parses one name-addr or addr-spec with its header parameters (From, To, Contact, Route…). */
export function parseNameAddr(text: string): NameAddr {
  const s = text.trim();
  if (s === '*') return { uri: { scheme: '*', host: '', params: {}, headers: {} }, params: {}, wildcard: true };
  let displayName: string | undefined;
  let i = 0;
  if (s.startsWith('"')) {
    let j = 1;
    let dn = '';
    for (; j < s.length; j++) {
      const ch = s[j] as string;
      if (ch === '\\') {
        dn += s[++j] ?? '';
        continue;
      }
      if (ch === '"') break;
      dn += ch;
    }
    if (j >= s.length) throw new SipParseError('unterminated quoted display name');
    displayName = dn;
    i = j + 1;
  }
  const lt = s.indexOf('<', i);
  if (lt >= 0) {
    const dnRaw = s.slice(i, lt).trim();
    if (displayName === undefined && dnRaw !== '') {
      // An unquoted display name is a run of tokens (RFC 3261 §25.1).
      for (const word of dnRaw.split(/\s+/)) if (!isToken(word)) throw new SipParseError('bad display name');
      displayName = dnRaw;
    } else if (displayName !== undefined && dnRaw !== '') {
      throw new SipParseError('text after quoted display name');
    }
    const gt = s.indexOf('>', lt);
    if (gt < 0) throw new SipParseError('unterminated <');
    const inner = s.slice(lt + 1, gt);
    if (inner !== inner.trim()) throw new SipParseError('whitespace inside <>');
    const uri = parseUri(inner);
    const after = s.slice(gt + 1).trim();
    let params: Record<string, string | null> = {};
    if (after !== '') {
      if (!after.startsWith(';')) throw new SipParseError('junk after name-addr');
      params = parseParams(splitOutside(after.slice(1), ';'), 'name-addr');
    }
    const na: NameAddr = { uri, params };
    if (displayName !== undefined) na.displayName = displayName;
    return na;
  }
  if (displayName !== undefined) throw new SipParseError('display name without <URI>');
  // addr-spec: header params follow the first ';' and the URI may not carry '?' or ','.
  const [uriText = '', ...paramParts] = s.split(';');
  if (uriText.includes('?')) throw new SipParseError('URI with headers must be enclosed in <>');
  const uri = parseUri(uriText);
  return { uri, params: paramParts.length ? parseParams(paramParts, 'addr-spec') : {} };
}

export function formatNameAddr(na: NameAddr): string {
  if (na.wildcard) return '*';
  let s = na.displayName !== undefined ? `"${na.displayName.replace(/(["\\])/g, '\\$1')}" ` : '';
  s += `<${formatUri(na.uri)}>`;
  for (const [k, v] of Object.entries(na.params)) s += v === null ? `;${k}` : `;${k}=${v}`;
  return s;
}

export function parseVia(text: string): Via {
  const s = text.trim();
  const m =
    /^([A-Za-z0-9\-.!%*_+`'~]+\s*\/\s*[A-Za-z0-9\-.!%*_+`'~]+)\s*\/\s*([A-Za-z0-9\-.!%*_+`'~]+)\s+([^;]+)(.*)$/.exec(s);
  if (!m) throw new SipParseError('bad Via');
  const protocol = (m[1] ?? '').replace(/\s+/g, '').toUpperCase();
  const transport = (m[2] ?? '').toUpperCase();
  const hp = (m[3] ?? '').trim();
  const hm = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-.]+)(?:\s*:\s*(\d{1,5}))?$/.exec(hp);
  if (!hm) throw new SipParseError('bad Via sent-by');
  const via: Via = { protocol, transport, host: (hm[1] ?? '').toLowerCase(), params: {} };
  if (hm[2] !== undefined) {
    via.port = Number(hm[2]);
    if (via.port > 65535) throw new SipParseError('bad Via port');
  }
  const rest = (m[4] ?? '').trim();
  if (rest !== '') {
    if (!rest.startsWith(';')) throw new SipParseError('bad Via params');
    via.params = parseParams(splitOutside(rest.slice(1), ';'), 'Via');
  }
  return via;
}

export function formatVia(v: Via): string {
  let s = `${v.protocol}/${v.transport} ${v.host}${v.port !== undefined ? `:${v.port}` : ''}`;
  for (const [k, val] of Object.entries(v.params)) s += val === null ? `;${k}` : `;${k}=${val}`;
  return s;
}

export function parseCSeq(text: string): CSeq {
  const m = /^\s*(\d{1,10})\s+([A-Za-z0-9\-.!%*_+`'~]+)\s*$/.exec(text);
  if (!m) throw new SipParseError('bad CSeq');
  const seq = Number(m[1]);
  // RFC 3261 §8.1.1.5: the sequence number is a 32-bit unsigned integer below 2**31.
  if (seq >= 2 ** 31) throw new SipParseError('CSeq number too large');
  return { seq, method: m[2] as string };
}

/** Parses a digest challenge or credentials header value (RFC 2617 §3.2). */
export function parseDigest(text: string): DigestParams {
  const s = text.trim();
  const sp = s.search(/\s/);
  if (sp <= 0) throw new SipParseError('bad auth header');
  const scheme = s.slice(0, sp);
  const params: Record<string, string> = {};
  for (const part of splitOutside(s.slice(sp + 1), ',')) {
    const p = part.trim();
    if (p === '') continue;
    const eq = p.indexOf('=');
    if (eq <= 0) throw new SipParseError('bad auth parameter');
    const name = p.slice(0, eq).trim().toLowerCase();
    let val = p.slice(eq + 1).trim();
    if (val.startsWith('"')) {
      if (!val.endsWith('"') || val.length < 2) throw new SipParseError('bad quoted auth parameter');
      val = val.slice(1, -1).replace(/\\(.)/g, '$1');
    }
    params[name] = val;
  }
  return { scheme, params };
}

const UNQUOTED = new Set(['algorithm', 'stale', 'nc', 'qop']);

export function formatDigest(d: DigestParams): string {
  const parts = Object.entries(d.params).map(([k, v]) =>
    UNQUOTED.has(k) ? `${k}=${v}` : `${k}="${v.replace(/(["\\])/g, '\\$1')}"`,
  );
  return `${d.scheme} ${parts.join(', ')}`;
}
