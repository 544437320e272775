import { parse, write } from 'sdp-transform';
import type { MediaDescription, SessionDescription } from 'sdp-transform';
import type { MediaTarget } from '../media/sdp-relay.js';

/**
 * SDP for the two Asterisk channels that anchor a trunk call's media. Each channel offered its own
 * SDP when Asterisk placed it; the exchange answers each offer with the codec the supplier chose
 * (kept under Asterisk's own payload numbers, so the two channels share one codec and Asterisk
 * bridges them without transcoding) and the far end's address: the caller's for the caller-facing
 * channel, the supplier's for the supplier-facing one.
 */

/** Static payload types (RFC 3551) an SDP may name without an rtpmap. */
const STATIC: Readonly<Record<number, string>> = {
  0: 'pcmu/8000',
  3: 'gsm/8000',
  8: 'pcma/8000',
  9: 'g722/8000',
  18: 'g729/8000',
};

const ICE = ['candidates', 'iceUfrag', 'icePwd', 'iceOptions', 'endOfCandidates', 'remoteCandidates'] as const;

function parseOrNull(sdp: string): SessionDescription | null {
  try {
    const desc = parse(sdp);
    return Array.isArray(desc.media) ? desc : null;
  } catch {
    return null;
  }
}

const activeAudio = (d: SessionDescription): MediaDescription | undefined =>
  d.media.find((m) => m.type === 'audio' && m.port !== 0);

/** payload number → `name/rate`, lower case, in the m-line's order. */
function codecsOf(m: MediaDescription): Map<number, string> {
  const out = new Map<number, string>();
  for (const p of String(m.payloads ?? '')
    .split(/\s+/)
    .filter(Boolean)
    .map(Number)) {
    const r = m.rtp.find((x) => x.payload === p);
    const name = r ? `${r.codec}/${r.rate ?? 8000}`.toLowerCase() : STATIC[p];
    if (name) out.set(p, name);
  }
  return out;
}

/**
 * The answer to Asterisk's `offer`: its audio codecs narrowed to those `chosen` (the supplier's
 * answer) names, in that order, sent to `target` (null: nowhere, as on hold). Null when the offer
 * has no active audio stream. When nothing matches the offer's codecs are kept, so Asterisk
 * transcodes rather than drops the call.
 */
export function answerToOffer(offer: string, chosen: string, target: MediaTarget | null): string | null {
  const desc = parseOrNull(offer);
  if (!desc) return null;
  const index = desc.media.findIndex((m) => m.type === 'audio' && m.port !== 0);
  const audio = desc.media[index];
  if (!audio) return null;
  const chosenDesc = parseOrNull(chosen);
  const chosenAudio = chosenDesc ? activeAudio(chosenDesc) : undefined;
  const wanted = chosenAudio ? [...codecsOf(chosenAudio).values()] : [];
  const offered = [...codecsOf(audio)];
  let keep = offered.filter(([, name]) => wanted.includes(name));
  keep.sort((a, b) => wanted.indexOf(a[1]) - wanted.indexOf(b[1]));
  if (!keep.some(([, name]) => name !== 'telephone-event/8000')) keep = offered;
  const payloads = keep.map(([p]) => p);
  const ip = target?.address ?? '0.0.0.0';
  const connection = { version: ip.includes(':') ? 6 : 4, ip };
  desc.media = desc.media.map((m, i) => {
    if (i !== index) return { ...m, port: 0 };
    const out: MediaDescription = {
      ...m,
      port: target?.port ?? 9,
      payloads: payloads.join(' '),
      rtp: m.rtp.filter((r) => payloads.includes(r.payload)),
      fmtp: (m.fmtp ?? []).filter((f) => payloads.includes(f.payload)),
      direction: 'sendrecv',
    };
    delete out.connection;
    delete out.rtcp;
    for (const a of ICE) delete (out as unknown as Record<string, unknown>)[a];
    return out;
  });
  desc.connection = connection;
  if (desc.origin) desc.origin = { ...desc.origin, username: 'svc-exchange' };
  for (const a of ICE) delete (desc as unknown as Record<string, unknown>)[a];
  return write(desc);
}
