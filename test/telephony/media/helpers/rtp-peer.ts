import { createSocket } from 'node:dgram';
import type { Socket } from 'node:dgram';
import { once } from 'node:events';
import { buildRtp, parseRtp } from '../../../../src/telephony/media/rtp.js';
import type { RtpPacket } from '../../../../src/telephony/media/rtp.js';
import { buildTelephoneEvent, keyToEvent } from '../../../../src/telephony/media/dtmf.js';

/** A UDP socket on 127.0.0.1 standing in for the far end of a call. */
export interface RtpPeer {
  port: number;
  socket: Socket;
  packets: RtpPacket[];
  /** performance.now() at each packet's arrival, by index into `packets`. */
  arrivedAt: number[];
  answerSdp(codec?: 'PCMU' | 'PCMA', eventPt?: number): string;
  offerSdp(): string;
  /** Resolves once `predicate` holds over the packets received so far. */
  waitFor(predicate: (packets: RtpPacket[]) => boolean, timeoutMs?: number): Promise<RtpPacket[]>;
  send(target: number, packet: RtpPacket): void;
  /** Sends one key press as start, continuation and three end packets (in the order given). */
  pressKey(
    target: number,
    key: string,
    opts: { timestamp: number; sequence: number; order?: number[]; eventPt?: number },
  ): void;
  /** Keeps the stream alive by sending a silent PCMU packet every 20 ms. */
  keepAlive(target: number): () => void;
  close(): Promise<void>;
}

export async function createRtpPeer(): Promise<RtpPeer> {
  const socket = createSocket('udp4');
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  const port = socket.address().port;
  const packets: RtpPacket[] = [];
  const arrivedAt: number[] = [];
  const waiters = new Set<() => void>();
  socket.on('message', (msg) => {
    const p = parseRtp(msg);
    if (!p) return;
    packets.push({ ...p, payload: Uint8Array.from(p.payload) });
    arrivedAt.push(performance.now());
    for (const w of waiters) w();
  });
  const ssrc = 0x1234;
  const peer: RtpPeer = {
    port,
    socket,
    packets,
    arrivedAt,
    answerSdp(codec = 'PCMU', eventPt = 101) {
      const pt = codec === 'PCMU' ? 0 : 8;
      return `v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio ${port} RTP/AVP ${pt} ${eventPt}\r\na=rtpmap:${pt} ${codec}/8000\r\na=rtpmap:${eventPt} telephone-event/8000\r\na=fmtp:${eventPt} 0-16\r\n`;
    },
    offerSdp() {
      return `v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio ${port} RTP/AVP 8 0 101\r\na=rtpmap:8 PCMA/8000\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:101 telephone-event/8000\r\n`;
    },
    waitFor(predicate, timeoutMs = 5000) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          if (predicate(packets)) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(packets);
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`RTP peer: condition not met within ${timeoutMs} ms (${packets.length} packets)`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    send(target, packet) {
      socket.send(buildRtp(packet), target, '127.0.0.1');
    },
    pressKey(target, key, { timestamp, sequence, order, eventPt = 101 }) {
      const event = keyToEvent(key) as number;
      const list = [
        { marker: true, end: false, duration: 160 },
        { marker: false, end: false, duration: 320 },
        { marker: false, end: true, duration: 480 },
        { marker: false, end: true, duration: 480 },
        { marker: false, end: true, duration: 480 },
      ].map((p, i) => ({ ...p, sequence: (sequence + i) & 0xffff }));
      for (const i of order ?? [0, 1, 2, 3, 4]) {
        const p = list[i];
        if (!p) continue;
        peer.send(target, {
          payloadType: eventPt,
          marker: p.marker,
          sequence: p.sequence,
          timestamp,
          ssrc,
          payload: buildTelephoneEvent({ event, end: p.end, volume: 10, duration: p.duration }),
        });
      }
    },
    keepAlive(target) {
      let seq = 1;
      const timer = setInterval(() => {
        peer.send(target, {
          payloadType: 0,
          marker: false,
          sequence: seq++,
          timestamp: seq * 160,
          ssrc,
          payload: new Uint8Array(160).fill(0xff),
        });
      }, 20);
      return () => clearInterval(timer);
    },
    async close() {
      await new Promise<void>((resolve) => socket.close(() => resolve()));
    },
  };
  return peer;
}
