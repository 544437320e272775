/** Dialog state for UAC and UAS sides (RFC 3261 §12) and in-dialog request construction. */
import { formatNameAddr, formatUri, parseNameAddr, parseUri, type NameAddr, type SipUri } from './headers.js';
import {
  callIdOf,
  contactsOf,
  cseqOf,
  detached,
  fromOf,
  getHeader,
  recordRoutesOf,
  tagOf,
  toOf,
  type HeaderField,
  type SipRequest,
  type SipResponse,
} from './message.js';
import type { SipPeer, SipTransportName } from './transport.js';

export interface Dialog {
  callId: string;
  localTag: string;
  remoteTag: string;
  /** From/To values for requests we send (with tags). */
  localAddr: string;
  remoteAddr: string;
  localSeq: number;
  remoteSeq: number;
  remoteTarget: string;
  /** Route header values in the order they are sent. */
  routeSet: string[];
  transport: SipTransportName;
  contact: string;
  /** Send in-dialog requests here instead of the remote target (the caller's own flow, RFC 5626 style). */
  flow?: SipPeer;
}

/** A dialog's id as its owner knows it: Call-ID, our tag and the peer's (RFC 3261 §12). */
export function dialogId(d: Pick<Dialog, 'callId' | 'localTag' | 'remoteTag'>): string {
  return `${d.callId}|${d.localTag}|${d.remoteTag}`;
}

/**
 * The id of the dialog an incoming request belongs to, seen from our side (our tag is in To, the
 * peer's in From); undefined for a request outside any dialog (no To tag).
 */
export function requestDialogId(req: SipRequest): string | undefined {
  const local = tagOf(toOf(req));
  if (local === undefined) return undefined;
  return `${callIdOf(req)}|${local}|${tagOf(fromOf(req)) ?? ''}`;
}

/** Where a request for this URI goes: its host, port and transport parameter. */
export function uriDestination(uri: SipUri, fallback: SipTransportName): SipPeer {
  const tp = uri.params['transport'];
  const t = tp?.toLowerCase();
  const transport: SipTransportName = t ? (t === 'tcp' || t === 'tls' ? t : 'udp') : fallback;
  return { transport, host: uri.host.replace(/^\[|\]$/g, ''), port: uri.port ?? 5060 };
}

/** The dialog a UAC holds after a 2xx to its INVITE (RFC 3261 §12.1.2). */
export function createUacDialog(
  invite: SipRequest,
  res: SipResponse,
  transport: SipTransportName,
  contact: string,
): Dialog {
  // The header views the parser already made (a missing header throws as parsing '' did).
  const to = toOf(res);
  const from = fromOf(invite);
  const target = contactsOf(res)[0];
  // A dialog lasts as long as its call: its strings are copied, not slices of the messages' text.
  return {
    callId: detached(callIdOf(invite)),
    localTag: detached(from.params['tag'] ?? ''),
    remoteTag: detached(to.params['tag'] ?? ''),
    localAddr: detached(getHeader(invite, 'from') ?? ''),
    remoteAddr: detached(formatNameAddr(to)),
    localSeq: cseqOf(invite).seq,
    remoteSeq: 0,
    remoteTarget: detached(target ? formatUri(target.uri) : invite.uri),
    routeSet: recordRoutesOf(res)
      .map((r) => detached(formatNameAddr(r)))
      .reverse(),
    transport,
    contact,
  };
}

/** The dialog a UAS holds when it answers an INVITE with `localTag` (RFC 3261 §12.1.1). */
export function createUasDialog(
  invite: SipRequest,
  localTag: string,
  transport: SipTransportName,
  contact: string,
  flow?: SipPeer,
): Dialog {
  const inTo = toOf(invite);
  const to: NameAddr = { ...inTo, params: { ...inTo.params, tag: localTag } };
  const target = contactsOf(invite)[0];
  const from = fromOf(invite);
  return {
    callId: detached(callIdOf(invite)),
    localTag,
    remoteTag: detached(from.params['tag'] ?? ''),
    localAddr: detached(formatNameAddr(to)),
    remoteAddr: detached(getHeader(invite, 'from') ?? ''),
    localSeq: 0,
    remoteSeq: cseqOf(invite).seq,
    remoteTarget: detached(target ? formatUri(target.uri) : ''),
    routeSet: recordRoutesOf(invite).map((r) => detached(formatNameAddr(r))),
    transport,
    contact,
    ...(flow ? { flow } : {}),
  };
}

/** A request within the dialog, with its next hop (loose routing, RFC 3261 §12.2.1.1). */
export function dialogRequest(
  d: Dialog,
  method: string,
  opts: { body?: Buffer; headers?: HeaderField[]; cseq?: number } = {},
): { req: SipRequest; dest: SipPeer } {
  const seq = opts.cseq ?? ++d.localSeq;
  const headers: HeaderField[] = [
    { name: 'From', value: d.localAddr },
    { name: 'To', value: d.remoteAddr },
    { name: 'Call-ID', value: d.callId },
    { name: 'CSeq', value: `${seq} ${method}` },
    { name: 'Max-Forwards', value: '70' },
  ];
  for (const r of d.routeSet) headers.push({ name: 'Route', value: r });
  if (method !== 'BYE' && method !== 'ACK' && method !== 'CANCEL')
    headers.push({ name: 'Contact', value: `<${d.contact}>` });
  if (opts.headers) headers.push(...opts.headers);
  const req: SipRequest = {
    kind: 'request',
    method,
    uri: d.remoteTarget,
    version: 'SIP/2.0',
    headers,
    body: opts.body ?? Buffer.alloc(0),
  };
  return { req, dest: d.flow ?? uriDestination(nextHopUri(d), d.transport) };
}

const HOP = Symbol('sip.dialogHop');
type WithHop = Dialog & { [HOP]?: { text: string; routed: boolean; uri: SipUri } };

/**
 * The URI in-dialog requests are sent toward: the first route, else the remote target. Parsed once
 * per dialog (an answered call sends at least an ACK and a BYE on each side), again only when a
 * target refresh or a new route set changed the text.
 */
function nextHopUri(d: Dialog): SipUri {
  const first = d.routeSet[0];
  const routed = first !== undefined && first !== '';
  const text = routed ? first : d.remoteTarget;
  const hit = (d as WithHop)[HOP];
  if (hit !== undefined && hit.text === text && hit.routed === routed) return hit.uri;
  const uri = routed ? parseNameAddr(text).uri : parseUri(text);
  (d as WithHop)[HOP] = { text, routed, uri };
  return uri;
}
