/**
 * The turn-latency bench's phone, in a worker thread of its own: it sends the caller's 20 ms RTP
 * frames on its own clock and reads the agent's packets as they arrive. The daemon runs in the
 * bench's main thread, so a phone there would stamp a packet only when the daemon's event loop let
 * it (a GC pause after the packet left would count against the exchange), and its frames would go
 * out late whenever the daemon was busy; a real phone is neither.
 *
 * Any message in starts a turn (the recorded speech, then quiet frames).
 * Messages out: `{ type: 'ready', port }`, `{ type: 'target' }` once the daemon's first packet
 * told it where to send, and per turn `{ type: 'turn', speechEndAt, heardAt, stragglers }`:
 * absolute times (performance.timeOrigin + now) of the last voiced frame sent and of the first
 * voiced packet of the reply, sent once the reply is over (`replyGapMs` of quiet).
 */
import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import { buildRtp, parseRtp } from '../../src/telephony/media/rtp.js';

export interface PhoneData {
  /** The caller's speech, PCMU. */
  speech: Uint8Array;
  /** Bytes of `speech` up to the end of its last voiced frame. */
  voicedEnd: number;
  replyGapMs: number;
}

export type FromPhone =
  | { type: 'ready'; port: number }
  | { type: 'target' }
  | { type: 'turn'; speechEndAt: number; heardAt: number; stragglers: number };

const port = parentPort!;
const { speech, voicedEnd, replyGapMs } = workerData as PhoneData;
const now = () => performance.timeOrigin + performance.now();
const post = (m: FromPhone) => port.postMessage(m);
const quiet = new Uint8Array(160).fill(0xff);
const silent = (payload: Uint8Array) => payload.every((b) => b === 0xff || b === 0x7f);

const socket = createSocket('udp4');
socket.bind(0, '127.0.0.1');
await once(socket, 'listening');

let target = 0;
let sent = 0;
let epoch = 0;
let queue: Uint8Array = new Uint8Array(0);
// A turn: speaking, then waiting for the reply, then hearing it until `replyGapMs` of quiet.
let turn: { speechEndAt: number; heardAt: number; stragglers: number } | null = null;
let gapTimer: NodeJS.Timeout | null = null;

/** Frame n goes out at epoch + n·20 ms: a late wake-up does not push the later frames back. */
function tick(): void {
  const frame = queue.length ? queue.subarray(0, 160) : quiet;
  if (queue.length) {
    queue = queue.subarray(160);
    if (speech.length - queue.length === voicedEnd && turn) turn.speechEndAt = now();
  }
  const packet = { payloadType: 0, marker: false, sequence: sent & 0xffff, timestamp: sent * 160, ssrc: 0x99 };
  socket.send(buildRtp({ ...packet, payload: frame }), target, '127.0.0.1');
  sent++;
  setTimeout(tick, Math.max(0, epoch + sent * 20 - performance.now()));
}

function replyOver(): void {
  gapTimer = null;
  if (!turn) return;
  post({ type: 'turn', speechEndAt: turn.speechEndAt, heardAt: turn.heardAt, stragglers: turn.stragglers });
  turn = null;
}

socket.on('message', (msg, from) => {
  if (!target) {
    target = from.port;
    post({ type: 'target' });
    epoch = performance.now();
    tick();
  }
  const p = parseRtp(msg);
  if (!p || silent(p.payload) || !turn) return;
  const at = now();
  // Voiced packets while the phone speaks are the previous reply's tail: counted, never taken for the answer.
  if (turn.speechEndAt === 0) {
    turn.stragglers++;
    return;
  }
  if (turn.heardAt === 0) turn.heardAt = at;
  if (gapTimer) clearTimeout(gapTimer);
  gapTimer = setTimeout(replyOver, replyGapMs);
});

port.on('message', () => {
  turn = { speechEndAt: 0, heardAt: 0, stragglers: 0 };
  queue = speech;
});

post({ type: 'ready', port: socket.address().port });
