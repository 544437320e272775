import { parse, write } from 'sdp-transform';
import type { MediaDescription, SessionDescription } from 'sdp-transform';

/**
 * SDP for calls whose media the exchange relays (a route in proxy media mode): the offer or answer
 * one side sent is passed to the other side with only the audio stream's address and port changed
 * to the relay's. Codecs, payload types, direction and everything else stay the two ends' business:
 * the relay forwards packets and never transcodes.
 */

/** Where one side wants its audio sent; null when it names none (no audio, port 0, or on hold as 0.0.0.0). */
export interface MediaTarget {
  address: string;
  port: number;
}

export interface RelayedStream extends MediaTarget {
  /** Audio both ways: neither on hold (a=sendonly, recvonly, inactive, or 0.0.0.0) nor one-way. */
  twoWay: boolean;
}

/** ICE would let the ends find each other around the relay; their candidates are dropped. */
const ICE_ATTRIBUTES = [
  'candidates',
  'iceUfrag',
  'icePwd',
  'iceOptions',
  'endOfCandidates',
  'remoteCandidates',
] as const;

function parseOrNull(sdp: string): SessionDescription | null {
  try {
    const desc = parse(sdp);
    return Array.isArray(desc.media) ? desc : null;
  } catch {
    return null;
  }
}

const relayedIndex = (desc: SessionDescription): number =>
  desc.media.findIndex((m) => m.type === 'audio' && m.port !== 0);

/** The audio target an SDP body names, and whether it asks for audio both ways (not held, not one-way). */
export function relayedStream(sdp: string): RelayedStream | null {
  const desc = parseOrNull(sdp);
  if (!desc) return null;
  const media = desc.media[relayedIndex(desc)];
  if (!media) return null;
  const address = media.connection?.ip ?? desc.connection?.ip;
  if (!address || address === '0.0.0.0' || address === '::') return null;
  if (!Number.isInteger(media.port) || media.port < 1 || media.port > 65535) return null;
  const direction = media.direction ?? desc.direction ?? 'sendrecv';
  return { address, port: media.port, twoWay: direction === 'sendrecv' };
}

/**
 * The same SDP with the first active audio stream pointed at `via` (its RTCP at `via.port + 1`).
 * Other streams (video, a second audio) are refused with port 0, as RFC 3264 §6 lets an answerer
 * do and an offerer do to withdraw one: only one audio stream is relayed. Null when the body is not
 * SDP with an active audio stream (the caller passes such a body on unchanged).
 */
export function rewriteForRelay(sdp: string, via: MediaTarget): string | null {
  const desc = parseOrNull(sdp);
  if (!desc) return null;
  const index = relayedIndex(desc);
  if (index < 0) return null;
  const family = via.address.includes(':') ? 6 : 4;
  const connection = { version: family, ip: via.address };
  const held = (m: MediaDescription): boolean => (m.connection?.ip ?? desc.connection?.ip) === '0.0.0.0';
  desc.media = desc.media.map((m, i) => {
    if (i !== index) return m.port === 0 ? m : { ...m, port: 0 };
    const out: MediaDescription = {
      ...m,
      port: via.port,
      connection: held(m) ? { version: 4, ip: '0.0.0.0' } : connection,
    };
    // Our RTCP is on the relay port + 1; multiplexing (rtcp-mux) is kept: the relay forwards
    // whatever arrives on a port, RTP or RTCP.
    delete out.rtcp;
    for (const a of ICE_ATTRIBUTES) delete (out as unknown as Record<string, unknown>)[a];
    return out;
  });
  if (desc.connection) desc.connection = connection;
  for (const a of ICE_ATTRIBUTES) delete (desc as unknown as Record<string, unknown>)[a];
  return write(desc);
}
