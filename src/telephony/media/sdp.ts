import { parse, write } from 'sdp-transform';
import type { SessionDescription, MediaDescription } from 'sdp-transform';
import { MediaError } from './errors.js';
import { G711_PAYLOAD_TYPE, isG711Codec } from './g711.js';
import type { G711Codec } from './g711.js';

/**
 * SDP offer/answer (RFC 3264) for one audio stream. We offer and accept PCMU and PCMA plus
 * telephone-event/8000. G.729 is not offered: no permissively licensed decoder is available to
 * us (bcg729 is GPL), so we could not decode what we would be negotiating.
 */

export const TELEPHONE_EVENT_PT = 101;

export interface RemoteMedia {
  address: string;
  port: number;
  codec: G711Codec;
  payloadType: number;
  /** Payload type the peer uses for telephone-event, or null when it offers none. */
  telephoneEventPt: number | null;
}

export interface LocalMedia {
  address: string;
  port: number;
  /** Codecs in order of preference. */
  codecs: readonly G711Codec[];
  sessionId?: string;
}

function baseDescription(local: LocalMedia, version: number): SessionDescription {
  const family = local.address.includes(':') ? 6 : 4;
  return {
    version: 0,
    origin: {
      username: '-',
      sessionId: local.sessionId ?? String(Date.now()),
      sessionVersion: version,
      netType: 'IN',
      ipVer: family,
      address: local.address,
    },
    name: 'svc-exchange',
    timing: { start: 0, stop: 0 },
    connection: { version: family, ip: local.address },
    media: [],
  };
}

function audioSection(
  port: number,
  codecs: readonly { codec: G711Codec; pt: number }[],
  eventPt: number | null,
): MediaDescription {
  const rtp: MediaDescription['rtp'] = codecs.map(({ codec, pt }) => ({ payload: pt, codec, rate: 8000 }));
  const fmtp: MediaDescription['fmtp'] = [];
  if (eventPt !== null) {
    rtp.push({ payload: eventPt, codec: 'telephone-event', rate: 8000 });
    fmtp.push({ payload: eventPt, config: '0-16' });
  }
  const payloads = [...codecs.map((c) => c.pt), ...(eventPt !== null ? [eventPt] : [])].join(' ');
  return { type: 'audio', port, protocol: 'RTP/AVP', payloads, rtp, fmtp, ptime: 20, direction: 'sendrecv' };
}

/** Builds our offer for an outgoing call. */
export function createOffer(local: LocalMedia): string {
  if (local.codecs.length === 0) throw new MediaError('MEDIA_NO_COMMON_CODEC', 'no codec to offer');
  const desc = baseDescription(local, 1);
  const codecs = local.codecs.map((codec) => ({ codec, pt: G711_PAYLOAD_TYPE[codec] }));
  desc.media.push(audioSection(local.port, codecs, TELEPHONE_EVENT_PT));
  return write(desc);
}

function codecOf(media: MediaDescription, pt: number): string | null {
  const mapped = media.rtp.find((r) => r.payload === pt);
  if (mapped) return mapped.codec.toUpperCase() === 'TELEPHONE-EVENT' ? 'telephone-event' : mapped.codec.toUpperCase();
  // Static payload types may appear without an rtpmap (RFC 3551).
  if (pt === 0) return 'PCMU';
  if (pt === 8) return 'PCMA';
  return null;
}

interface ParsedAudio {
  address: string;
  port: number;
  /** G.711 payloads in the peer's order of preference. */
  codecs: { codec: G711Codec; pt: number }[];
  telephoneEventPt: number | null;
}

function parseAudio(sdp: string): ParsedAudio {
  let desc: SessionDescription;
  try {
    desc = parse(sdp);
  } catch (err) {
    throw new MediaError('MEDIA_BAD_SDP', 'SDP does not parse', { cause: err });
  }
  const media = desc.media.find((m) => m.type === 'audio' && m.port !== 0);
  if (!media) throw new MediaError('MEDIA_BAD_SDP', 'SDP has no active audio stream');
  if (!/^RTP\/AVP$/i.test(media.protocol)) throw new MediaError('MEDIA_BAD_SDP', 'audio stream is not RTP/AVP');
  const address = media.connection?.ip ?? desc.connection?.ip;
  if (!address) throw new MediaError('MEDIA_BAD_SDP', 'SDP has no connection address');
  const pts = String(media.payloads ?? '')
    .split(/\s+/)
    .filter((p) => p !== '')
    .map(Number);
  const codecs: { codec: G711Codec; pt: number }[] = [];
  let telephoneEventPt: number | null = null;
  for (const pt of pts) {
    const name = codecOf(media, pt);
    if (name === 'telephone-event') {
      const rate = media.rtp.find((r) => r.payload === pt)?.rate;
      if (rate === 8000 && telephoneEventPt === null) telephoneEventPt = pt;
    } else if (isG711Codec(name)) {
      codecs.push({ codec: name, pt });
    }
  }
  return { address, port: media.port, codecs, telephoneEventPt };
}

export interface AnswerResult {
  sdp: string;
  remote: RemoteMedia;
}

/** Answers a peer's offer with the first of its codecs we support (offerer's preference wins). */
export function createAnswer(offerSdp: string, local: LocalMedia): AnswerResult {
  const offer = parseAudio(offerSdp);
  const chosen = offer.codecs.find((c) => local.codecs.includes(c.codec));
  if (!chosen) throw new MediaError('MEDIA_NO_COMMON_CODEC', 'offer has no codec we support');
  const desc = baseDescription(local, 1);
  desc.media.push(audioSection(local.port, [chosen], offer.telephoneEventPt));
  return {
    sdp: write(desc),
    remote: {
      address: offer.address,
      port: offer.port,
      codec: chosen.codec,
      payloadType: chosen.pt,
      telephoneEventPt: offer.telephoneEventPt,
    },
  };
}

/** Reads the peer's answer to our offer; the first codec it kept is the one used. */
export function parseAnswer(answerSdp: string, local: LocalMedia): RemoteMedia {
  const answer = parseAudio(answerSdp);
  const chosen = answer.codecs.find((c) => local.codecs.includes(c.codec));
  if (!chosen) throw new MediaError('MEDIA_NO_COMMON_CODEC', 'answer has no codec we offered');
  return {
    address: answer.address,
    port: answer.port,
    codec: chosen.codec,
    payloadType: chosen.pt,
    telephoneEventPt: answer.telephoneEventPt,
  };
}
