import type { G711Codec } from './g711.js';
import type { DtmfKey } from './dtmf.js';

/** Messages between the media pool (main thread) and an RTP worker. */

export interface RtpWorkerData {
  bindAddress: string;
  portMin: number;
  portMax: number;
  /** Milliseconds after which a session with no incoming RTP is reported dead. */
  rtpTimeoutMs: number;
  /** A frame sent later than this after its 20 ms slot counts as late. */
  lateThresholdMs: number;
}

export type ToWorker =
  | { type: 'open'; sessionId: number; codec: G711Codec; rtpTimeoutMs: number | null }
  | { type: 'remote'; sessionId: number; address: string; port: number; codec: G711Codec; payloadType: number; telephoneEventPt: number | null }
  | { type: 'play'; sessionId: number; playId: number; audio: Uint8Array }
  | { type: 'stop'; sessionId: number }
  | { type: 'dtmf'; sessionId: number; requestId: number; keys: string; durationMs: number }
  | { type: 'close'; sessionId: number }
  | { type: 'stats'; requestId: number }
  | { type: 'reset-stats'; requestId: number }
  | { type: 'shutdown' };

export interface WorkerStats {
  sessions: number;
  framesSent: number;
  lateFrames: number;
  maxLatenessMs: number;
  packetsReceived: number;
  /** Wall time spent inside clock ticks (sending), a measure of the worker's load. */
  busyMs: number;
}

export type FromWorker =
  | { type: 'opened'; sessionId: number; port: number }
  | { type: 'open-failed'; sessionId: number; message: string }
  | { type: 'played'; sessionId: number; playId: number; interrupted: boolean }
  | { type: 'dtmf-sent'; sessionId: number; requestId: number }
  | { type: 'dtmf'; sessionId: number; key: DtmfKey }
  | { type: 'timeout'; sessionId: number }
  | { type: 'closed'; sessionId: number }
  | { type: 'stats'; requestId: number; stats: WorkerStats }
  | { type: 'error'; message: string };
