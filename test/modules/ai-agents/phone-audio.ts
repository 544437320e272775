import type { Test } from 'tap';
import { parseRtp } from '../../../src/telephony/media/rtp.js';
import type { RtpPeer } from '../../telephony/media/helpers/rtp-peer.js';

/**
 * A phone's audio at a test's UDP socket (sipp keeps the signalling, its SDP points here): what the
 * phone says, and checks of what it heard.
 */

/** PCMU's two zero levels: a frame of only these is silence. */
const silent = (payload: Uint8Array) => payload.every((b) => b === 0xff || b === 0x7f);

/**
 * Sends `audio` as 20 ms PCMU packets to whoever sends to `peer` first, then `mark` frames until
 * stopped. With `afterVoice`, the phone starts only when a packet with sound in it arrives: the
 * daemon sends silence from the answer on, and its first words come once they are rendered, which
 * on a loaded machine can take a second or more; a caller timing its speech from the first packet
 * would then talk over a line that had barely started.
 */
export function talk(peer: RtpPeer, audio: Uint8Array, mark: number, opts: { afterVoice?: boolean } = {}): () => void {
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;
  const start = (_m: Buffer, from: { port: number }) => {
    if (stopped) return;
    let i = 0;
    timer = setInterval(() => {
      const payload = i * 160 < audio.length ? audio.subarray(i * 160, i * 160 + 160) : new Uint8Array(160).fill(mark);
      peer.send(from.port, {
        payloadType: 0,
        marker: i === 0,
        sequence: i & 0xffff,
        timestamp: i * 160,
        ssrc: 0x77,
        payload,
      });
      i++;
    }, 20);
  };
  if (!opts.afterVoice) peer.socket.once('message', start);
  else {
    const onMessage = (m: Buffer, from: { port: number }) => {
      const p = parseRtp(m);
      if (!p || p.payloadType !== 0 || silent(p.payload)) return;
      peer.socket.off('message', onMessage);
      start(m, from);
    };
    peer.socket.on('message', onMessage);
  }
  return () => {
    stopped = true;
    if (timer) clearInterval(timer);
  };
}

/** The caller received `audio`'s first 20 voiced frames, in order, in consecutive packets. */
export function heard(peer: RtpPeer, audio: Uint8Array): boolean {
  const frame = (i: number) => audio.subarray(i * 160, i * 160 + 160);
  let first = 0;
  while (first * 160 < audio.length && silent(frame(first))) first++;
  const equal = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);
  const packets = peer.packets;
  return packets.some(
    (_p, at) =>
      at + 20 <= packets.length &&
      Array.from({ length: 20 }, (_x, k) => k).every((k) => equal(packets[at + k]!.payload, frame(first + k))),
  );
}

export const frames = (peer: RtpPeer, mark: number) =>
  peer.packets.filter((p) => p.payload.length === 160 && p.payload.every((b) => b === mark)).length;

/**
 * Checks, right after an agent's call, that its audio crossed the engine both ways: the daemon's
 * stream reached the phone, and the phone's speech reached the agent (`transcribed` utterances).
 * Nothing later in such a test holds otherwise, so the caller stops there on false.
 */
export function audioCrossed(t: Test, phone: RtpPeer, transcribed: number, call: unknown): boolean {
  const reachedPhone = phone.packets.length > 0;
  t.ok(reachedPhone, "the daemon's audio reached the phone", { packets: phone.packets.length });
  t.ok(transcribed > 0, "the phone's audio reached the agent (an utterance was transcribed)", { call });
  return reachedPhone && transcribed > 0;
}
