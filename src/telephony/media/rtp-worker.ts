import { createSocket } from 'node:dgram';
import type { Socket } from 'node:dgram';
import { randomInt } from 'node:crypto';
import { parentPort, workerData } from 'node:worker_threads';
import { G711_SILENCE } from './g711.js';
import type { G711Codec } from './g711.js';
import { RTP_HEADER_SIZE, parseRtp } from './rtp.js';
import { createDtmfReceiver, isDtmfKey, telephoneEventPackets } from './dtmf.js';
import type { OutgoingEventPacket } from './dtmf.js';
import { TELEPHONE_EVENT_PT } from './sdp.js';
import type { FromWorker, RtpWorkerData, ToWorker, WorkerStats } from './rtp-protocol.js';
import { createRelayTable, type BoundPair } from './rtp-relay.js';

/**
 * One RTP worker: it owns a UDP port range and a single 20 ms clock that sends one packet per
 * session every 20 ms. Slots are computed from an absolute epoch (slot n is due at
 * epoch + n·5 ms), so a late wake-up never pushes later slots back.
 *
 * Sessions are spread over four phases 5 ms apart, each session sending in its own phase of
 * every 20 ms frame. Each one still sends exactly every 20 ms, but a wake-up serves a quarter
 * of the sessions: with hundreds of calls, one burst of sends (a syscall each) would otherwise
 * push the last of them past the 5 ms lateness bound.
 */

const FRAME_SAMPLES = 160;
const PHASES = 4;
const SLOT_NS = 5_000_000n;
const EARLY_TOLERANCE_NS = 1_000_000n;
/** After a stall longer than this many slots (debugger, suspended VM) the clock restarts from now. */
const MAX_CATCH_UP_SLOTS = 40n;
/** Slots between RTP timeout checks (0.5 s). */
const TIMEOUT_CHECK_EVERY = 100n;

interface Playback {
  playId: number;
  audio: Uint8Array;
  offset: number;
}

interface DtmfSend {
  requestId: number;
  packets: OutgoingEventPacket[];
  index: number;
  timestamp: number | null;
  /** Silent 20 ms slots still to send before this key (the gap between keys). */
  gap: number;
}

interface Session {
  id: number;
  phase: number;
  socket: Socket;
  port: number;
  codec: G711Codec;
  payloadType: number;
  silence: Uint8Array;
  remoteAddress: string | null;
  remotePort: number;
  eventPt: number;
  sequence: number;
  timestamp: number;
  ssrc: number;
  marker: boolean;
  queue: Playback[];
  dtmf: DtmfSend[];
  receiver: { handle(sequence: number, timestamp: number, payload: Uint8Array): void };
  lastReceived: bigint;
  timeoutNs: bigint;
  timedOut: boolean;
  closed: boolean;
  /** Voice payloads go to the main thread (an AI agent listens to the caller). */
  listening: boolean;
  /**
   * Whether this session's next slot is skipped: its frame went out early, as audio started on a
   * silent session (see `startNow`), so the stream's timestamps stay on the clock.
   */
  sentAhead: boolean;
}

const config = workerData as RtpWorkerData;
const port = parentPort;
if (!port) throw new Error('rtp-worker must run in a worker thread');

const post = (msg: FromWorker): void => port.postMessage(msg);
const sessions = new Map<number, Session>();
const phases: Set<Session>[] = Array.from({ length: PHASES }, () => new Set<Session>());
const usedPorts = new Set<number>();
let nextPort = config.portMin + (config.portMin % 2);
const lateThresholdNs = BigInt(Math.round(config.lateThresholdMs * 1e6));
const timeoutNs = BigInt(Math.round(config.rtpTimeoutMs * 1e6));

const stats: Omit<WorkerStats, 'sessions' | 'relays' | 'packetsRelayed'> = {
  framesSent: 0,
  lateFrames: 0,
  maxLatenessMs: 0,
  packetsReceived: 0,
  busyMs: 0,
};

let epoch = 0n;
let slot = 0n;
let timer: NodeJS.Timeout | null = null;

function silenceFrame(codec: G711Codec): Uint8Array {
  return new Uint8Array(FRAME_SAMPLES).fill(G711_SILENCE[codec]);
}

function bindOne(socket: Socket, candidate: number): Promise<boolean> {
  return new Promise((resolve) => {
    const onError = (): void => resolve(false);
    socket.once('error', onError);
    socket.bind({ port: candidate, address: config.bindAddress, exclusive: true }, () => {
      socket.off('error', onError);
      resolve(true);
    });
  });
}

/** Binds the next free even port of the range (RTP convention, RFC 3550 §11). */
async function allocatePort(): Promise<{ socket: Socket; port: number } | null> {
  const span = Math.floor((config.portMax - config.portMin) / 2) + 1;
  for (let tries = 0; tries < span; tries++) {
    const candidate = nextPort;
    nextPort += 2;
    if (nextPort > config.portMax) nextPort = config.portMin + (config.portMin % 2);
    if (candidate > config.portMax || usedPorts.has(candidate)) continue;
    const socket = createSocket({ type: config.bindAddress.includes(':') ? 'udp6' : 'udp4' });
    if (await bindOne(socket, candidate)) return { socket, port: candidate };
    socket.close();
  }
  return null;
}

/** An even RTP port and the RTCP port after it, both bound (media relays). */
async function allocatePair(): Promise<BoundPair | null> {
  const span = Math.floor((config.portMax - config.portMin) / 2) + 1;
  // Even ports whose odd neighbour was taken: kept out of the scan until it ends.
  const skipped: number[] = [];
  try {
    for (let tries = 0; tries < span; tries++) {
      const rtp = await allocatePort();
      if (!rtp) return null;
      usedPorts.add(rtp.port);
      const rtcp =
        rtp.port + 1 <= config.portMax
          ? createSocket({ type: config.bindAddress.includes(':') ? 'udp6' : 'udp4' })
          : null;
      if (rtcp && (await bindOne(rtcp, rtp.port + 1))) return { rtp: rtp.socket, rtcp, port: rtp.port };
      rtcp?.close();
      rtp.socket.close();
      skipped.push(rtp.port);
    }
    return null;
  } finally {
    for (const p of skipped) usedPorts.delete(p);
  }
}

function releasePair(pair: BoundPair): Promise<void> {
  const closed = (s: Socket) => new Promise<void>((resolve) => s.close(() => resolve()));
  return Promise.all([closed(pair.rtp), closed(pair.rtcp)]).then(() => void usedPorts.delete(pair.port));
}

const relays = createRelayTable({ post, allocatePair, releasePair, defaultTimeoutMs: config.rtpTimeoutMs });

async function open(sessionId: number, codec: G711Codec, rtpTimeoutMs: number | null): Promise<void> {
  const bound = await allocatePort();
  if (!bound) {
    post({ type: 'open-failed', sessionId, message: 'no free RTP port in range' });
    return;
  }
  usedPorts.add(bound.port);
  const phase = phases.reduce((best, set, i) => (set.size < (phases[best] as Set<Session>).size ? i : best), 0);
  const session: Session = {
    id: sessionId,
    phase,
    socket: bound.socket,
    port: bound.port,
    codec,
    payloadType: codec === 'PCMU' ? 0 : 8,
    silence: silenceFrame(codec),
    remoteAddress: null,
    remotePort: 0,
    eventPt: TELEPHONE_EVENT_PT,
    sequence: randomInt(0, 0x10000),
    timestamp: randomInt(0, 0x100000000),
    ssrc: randomInt(0, 0x100000000),
    marker: true,
    queue: [],
    dtmf: [],
    receiver: createDtmfReceiver((key) => post({ type: 'dtmf', sessionId, key })),
    lastReceived: process.hrtime.bigint(),
    timeoutNs: rtpTimeoutMs === null ? timeoutNs : BigInt(Math.round(rtpTimeoutMs * 1e6)),
    timedOut: false,
    closed: false,
    listening: false,
    sentAhead: false,
  };
  bound.socket.on('message', (msg, rinfo) => receive(session, msg, rinfo.address));
  bound.socket.on('error', (err) => post({ type: 'error', message: `session ${sessionId} socket: ${err.message}` }));
  sessions.set(sessionId, session);
  phases[phase]?.add(session);
  post({ type: 'opened', sessionId, port: bound.port });
  startClock();
}

function receive(session: Session, msg: Buffer, from: string): void {
  // Only the address the SDP named may feed this session; anything else could inject key presses.
  if (session.remoteAddress === null || from !== session.remoteAddress) return;
  const packet = parseRtp(msg);
  if (!packet) return;
  stats.packetsReceived++;
  session.lastReceived = process.hrtime.bigint();
  if (packet.payloadType === session.eventPt)
    session.receiver.handle(packet.sequence, packet.timestamp, packet.payload);
  else if (session.listening && packet.payloadType === session.payloadType)
    post({ type: 'audio', sessionId: session.id, payload: packet.payload.slice() });
}

function finishPlayback(session: Session, item: Playback, interrupted: boolean): void {
  post({ type: 'played', sessionId: session.id, playId: item.playId, interrupted });
}

function sendPacket(
  session: Session,
  payloadType: number,
  marker: boolean,
  timestamp: number,
  payload: Uint8Array,
  offset: number,
  length: number,
  padByte: number,
): void {
  const buf = Buffer.allocUnsafe(RTP_HEADER_SIZE + length);
  buf[0] = 0x80;
  buf[1] = (marker ? 0x80 : 0) | payloadType;
  buf.writeUInt16BE(session.sequence, 2);
  buf.writeUInt32BE(timestamp >>> 0, 4);
  buf.writeUInt32BE(session.ssrc, 8);
  const available = Math.max(0, Math.min(length, payload.length - offset));
  buf.set(payload.subarray(offset, offset + available), RTP_HEADER_SIZE);
  if (available < length) buf.fill(padByte, RTP_HEADER_SIZE + available);
  session.sequence = (session.sequence + 1) & 0xffff;
  session.socket.send(buf, session.remotePort, session.remoteAddress as string);
}

/** Sends this slot's packet: a key press if one is going out, else queued audio, else silence. */
function sendFrame(session: Session): void {
  const key = session.dtmf[0];
  if (key && key.gap === 0) {
    if (key.timestamp === null) key.timestamp = session.timestamp;
    const packet = key.packets[key.index] as OutgoingEventPacket;
    sendPacket(session, session.eventPt, packet.marker, key.timestamp, packet.payload, 0, packet.payload.length, 0);
    key.index++;
    if (key.index >= key.packets.length) {
      session.dtmf.shift();
      const next = session.dtmf[0];
      if (next && next.requestId === key.requestId) next.gap = 3;
      else post({ type: 'dtmf-sent', sessionId: session.id, requestId: key.requestId });
    }
  } else {
    if (key) key.gap--;
    const item = session.queue[0];
    if (item) {
      sendPacket(
        session,
        session.payloadType,
        session.marker,
        session.timestamp,
        item.audio,
        item.offset,
        FRAME_SAMPLES,
        G711_SILENCE[session.codec],
      );
      item.offset += FRAME_SAMPLES;
      if (item.offset >= item.audio.length) {
        session.queue.shift();
        finishPlayback(session, item, false);
      }
    } else {
      sendPacket(session, session.payloadType, session.marker, session.timestamp, session.silence, 0, FRAME_SAMPLES, 0);
    }
    session.marker = false;
  }
  session.timestamp = (session.timestamp + FRAME_SAMPLES) >>> 0;
}

/**
 * Audio that starts on a session sending silence goes out now rather than at the session's next
 * slot, up to 20 ms later (10 ms on average): that wait was the largest share of an AI agent's
 * reply time inside the exchange. The frame carries the timestamp its slot would have sent, and the
 * slot is skipped, so the far end sees one packet up to 20 ms early (jitter its buffer absorbs)
 * and the stream stays on the clock.
 */
function startNow(s: Session): void {
  if (s.remoteAddress === null || s.sentAhead || s.queue.length !== 1 || s.dtmf.length > 0 || timer === null) return;
  sendFrame(s);
  stats.framesSent++;
  s.sentAhead = true;
}

function startClock(): void {
  if (timer !== null) return;
  epoch = process.hrtime.bigint();
  slot = 0n;
  timer = setTimeout(tick, 0);
}

function schedule(due: bigint, now: bigint): void {
  const delayMs = Number(due - now) / 1e6;
  timer = setTimeout(tick, Math.max(0, Math.floor(delayMs)));
}

function tick(): void {
  timer = null;
  if (sessions.size === 0) return;
  let now = process.hrtime.bigint();
  let due = epoch + slot * SLOT_NS;
  if (now + EARLY_TOLERANCE_NS < due) {
    schedule(due, now);
    return;
  }
  const behind = (now - due) / SLOT_NS;
  if (behind > MAX_CATCH_UP_SLOTS) {
    // Those frames are gone; count them late and restart the clock rather than bursting.
    const frames = Number(behind) / PHASES;
    for (const s of sessions.values()) {
      if (s.remoteAddress === null) continue;
      stats.lateFrames += Math.floor(frames);
      stats.framesSent += Math.floor(frames);
      s.timestamp = (s.timestamp + Math.floor(frames) * FRAME_SAMPLES) >>> 0;
    }
    // Keep the phase order: restart at the phase that was due.
    epoch = now - (slot % BigInt(PHASES)) * SLOT_NS;
    slot = slot % BigInt(PHASES);
    due = now;
  }
  const started = now;
  const checkTimeouts = slot % TIMEOUT_CHECK_EVERY < BigInt(PHASES);
  const current = phases[Number(slot % BigInt(PHASES))] as Set<Session>;
  for (const s of current) {
    if (s.remoteAddress === null) continue;
    // A slot whose frame went out ahead sends nothing, but its session's timeout is still checked.
    if (s.sentAhead) s.sentAhead = false;
    else {
      sendFrame(s);
      now = process.hrtime.bigint();
      const lateness = now - due;
      stats.framesSent++;
      if (lateness > lateThresholdNs) {
        stats.lateFrames++;
        const ms = Number(lateness) / 1e6;
        if (ms > stats.maxLatenessMs) stats.maxLatenessMs = ms;
      }
    }
    if (checkTimeouts && !s.timedOut && now - s.lastReceived > s.timeoutNs) {
      s.timedOut = true;
      post({ type: 'timeout', sessionId: s.id });
    }
  }
  slot++;
  const finished = process.hrtime.bigint();
  stats.busyMs += Number(finished - started) / 1e6;
  schedule(epoch + slot * SLOT_NS, finished);
}

function closeSession(sessionId: number): void {
  const s = sessions.get(sessionId);
  if (!s) {
    post({ type: 'closed', sessionId });
    return;
  }
  s.closed = true;
  sessions.delete(sessionId);
  phases[s.phase]?.delete(s);
  for (const item of s.queue.splice(0)) finishPlayback(s, item, true);
  const requests = new Set(s.dtmf.map((d) => d.requestId));
  for (const requestId of requests) post({ type: 'dtmf-sent', sessionId, requestId });
  s.dtmf = [];
  s.socket.close(() => {
    usedPorts.delete(s.port);
    post({ type: 'closed', sessionId });
  });
}

port.on('message', (msg: ToWorker) => {
  switch (msg.type) {
    case 'open':
      void open(msg.sessionId, msg.codec, msg.rtpTimeoutMs);
      break;
    case 'remote': {
      const s = sessions.get(msg.sessionId);
      if (!s) break;
      s.remoteAddress = msg.address;
      s.remotePort = msg.port;
      if (s.codec !== msg.codec) {
        s.codec = msg.codec;
        s.silence = silenceFrame(msg.codec);
      }
      s.payloadType = msg.payloadType;
      s.eventPt = msg.telephoneEventPt ?? TELEPHONE_EVENT_PT;
      s.lastReceived = process.hrtime.bigint();
      s.timedOut = false;
      break;
    }
    case 'play': {
      const s = sessions.get(msg.sessionId);
      if (!s) {
        post({ type: 'played', sessionId: msg.sessionId, playId: msg.playId, interrupted: true });
        break;
      }
      if (msg.audio.length === 0) post({ type: 'played', sessionId: s.id, playId: msg.playId, interrupted: false });
      else {
        s.queue.push({ playId: msg.playId, audio: msg.audio, offset: 0 });
        startNow(s);
      }
      break;
    }
    case 'stop': {
      const s = sessions.get(msg.sessionId);
      if (s) for (const item of s.queue.splice(0)) finishPlayback(s, item, true);
      break;
    }
    case 'dtmf': {
      const s = sessions.get(msg.sessionId);
      const keys = [...msg.keys].filter(isDtmfKey);
      if (!s || keys.length === 0) {
        post({ type: 'dtmf-sent', sessionId: msg.sessionId, requestId: msg.requestId });
        break;
      }
      for (const k of keys)
        s.dtmf.push({
          requestId: msg.requestId,
          packets: telephoneEventPackets(k, msg.durationMs),
          index: 0,
          timestamp: null,
          gap: 0,
        });
      break;
    }
    case 'close':
      closeSession(msg.sessionId);
      break;
    case 'listen': {
      const s = sessions.get(msg.sessionId);
      if (s) s.listening = msg.on;
      break;
    }
    case 'relay-open':
      void relays.open(msg.relayId, msg.timeoutMs);
      break;
    case 'relay-remote':
      relays.remote(msg.relayId, msg.side, msg.address, msg.port);
      break;
    case 'relay-revert':
      relays.revert(msg.relayId, msg.side);
      break;
    case 'relay-arm':
      relays.arm(msg.relayId, msg.armed);
      break;
    case 'relay-close':
      void relays.close(msg.relayId);
      break;
    case 'stats':
    case 'reset-stats':
      post({
        type: 'stats',
        requestId: msg.requestId,
        stats: { sessions: sessions.size, ...stats, relays: relays.size(), packetsRelayed: relays.packetsRelayed() },
      });
      if (msg.type === 'reset-stats') {
        Object.assign(stats, { framesSent: 0, lateFrames: 0, maxLatenessMs: 0, packetsReceived: 0, busyMs: 0 });
        relays.resetStats();
      }
      break;
    case 'shutdown':
      if (timer !== null) clearTimeout(timer);
      timer = null;
      for (const id of [...sessions.keys()]) closeSession(id);
      void relays.closeAll().finally(() => port.close());
      break;
  }
});
