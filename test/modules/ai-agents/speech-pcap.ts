import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeG711 } from '../../../src/telephony/media/g711.js';
import { parseWav, wavToTelephony } from '../../../src/telephony/media/pcm.js';

/** `text` spoken by espeak-ng as 8 kHz PCMU, then `silenceMs` of quiet; `dir` holds the WAV. */
export function speechAudio(text: string, silenceMs: number, dir: string): Uint8Array {
  const wavPath = join(dir, 'speech.wav');
  execFileSync('espeak-ng', ['-v', 'en-us', '-s', '170', '-w', wavPath, text]);
  const speech = encodeG711('PCMU', wavToTelephony(parseWav(readFileSync(wavPath))));
  const quiet = new Uint8Array(Math.round(silenceMs * 8)).fill(0xff);
  const audio = new Uint8Array(speech.length + quiet.length);
  audio.set(speech);
  audio.set(quiet, speech.length);
  return audio;
}

/**
 * A caller's speech as a phone sends it: `text` spoken by espeak-ng, 8 kHz PCMU in 20 ms RTP
 * packets, followed by `silenceMs` of quiet frames (a phone keeps sending while the caller listens),
 * written as a pcap that sipp replays with `play_pcap_audio`. Returns the file and its length.
 */
export function speechPcap(
  t: { teardown(fn: () => void): void },
  text: string,
  silenceMs = 1500,
): { path: string; ms: number } {
  const dir = mkdtempSync(join(tmpdir(), 'svc-speech-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const audio = speechAudio(text, silenceMs, dir);
  const frames = Math.ceil(audio.length / 160);

  const records: Buffer[] = [];
  const header = Buffer.alloc(24);
  header.writeUInt32LE(0xa1b2c3d4, 0);
  header.writeUInt16LE(2, 4);
  header.writeUInt16LE(4, 6);
  header.writeUInt32LE(65535, 16);
  header.writeUInt32LE(1, 20); // Ethernet
  records.push(header);
  for (let i = 0; i < frames; i++) {
    const payload = Buffer.alloc(160, 0xff);
    payload.set(audio.subarray(i * 160, (i + 1) * 160));
    const rtp = Buffer.alloc(12);
    rtp[0] = 0x80;
    rtp[1] = (i === 0 ? 0x80 : 0) | 0;
    rtp.writeUInt16BE((1000 + i) & 0xffff, 2);
    rtp.writeUInt32BE(160_000 + i * 160, 4);
    rtp.writeUInt32BE(0x5eec4, 8);
    const udpLen = 8 + rtp.length + payload.length;
    const udp = Buffer.alloc(8);
    udp.writeUInt16BE(6000, 0);
    udp.writeUInt16BE(6000, 2);
    udp.writeUInt16BE(udpLen, 4);
    const ip = Buffer.alloc(20);
    ip[0] = 0x45;
    ip.writeUInt16BE(20 + udpLen, 2);
    ip[8] = 64;
    ip[9] = 17;
    ip.set([127, 0, 0, 1], 12);
    ip.set([127, 0, 0, 1], 16);
    const eth = Buffer.alloc(14);
    eth.writeUInt16BE(0x0800, 12);
    const frame = Buffer.concat([eth, ip, udp, rtp, payload]);
    const rec = Buffer.alloc(16);
    const us = i * 20_000;
    rec.writeUInt32LE(1_700_000_000 + Math.floor(us / 1e6), 0);
    rec.writeUInt32LE(us % 1e6, 4);
    rec.writeUInt32LE(frame.length, 8);
    rec.writeUInt32LE(frame.length, 12);
    records.push(rec, frame);
  }
  const path = join(dir, 'speech.pcap');
  writeFileSync(path, Buffer.concat(records));
  return { path, ms: frames * 20 };
}
