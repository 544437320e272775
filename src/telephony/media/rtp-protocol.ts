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
  | {
      type: 'remote';
      sessionId: number;
      address: string;
      port: number;
      codec: G711Codec;
      payloadType: number;
      telephoneEventPt: number | null;
    }
  | { type: 'play'; sessionId: number; playId: number; audio: Uint8Array }
  | { type: 'stop'; sessionId: number }
  | { type: 'dtmf'; sessionId: number; requestId: number; keys: string; durationMs: number }
  | { type: 'close'; sessionId: number }
  /** Forward (or stop forwarding) the caller's voice frames to the main thread (AI agents listen). */
  | { type: 'listen'; sessionId: number; on: boolean }
  | { type: 'stats'; requestId: number }
  | { type: 'reset-stats'; requestId: number }
  | { type: 'relay-open'; relayId: number; timeoutMs: number | null }
  | { type: 'relay-remote'; relayId: number; side: RelaySideName; address: string; port: number }
  | { type: 'relay-revert'; relayId: number; side: RelaySideName }
  | { type: 'relay-arm'; relayId: number; armed: boolean }
  | { type: 'relay-close'; relayId: number }
  | { type: 'shutdown' };

/** The two sides of a relayed call: the caller's (trunk customer) and the callee's (supplier). */
export type RelaySideName = 'caller' | 'callee';

export interface WorkerStats {
  sessions: number;
  framesSent: number;
  lateFrames: number;
  maxLatenessMs: number;
  packetsReceived: number;
  /** Wall time spent inside clock ticks (sending), a measure of the worker's load. */
  busyMs: number;
  /** Media relays open (proxy media mode) and packets they forwarded. */
  relays: number;
  packetsRelayed: number;
}

export type FromWorker =
  | { type: 'opened'; sessionId: number; port: number }
  | { type: 'open-failed'; sessionId: number; message: string }
  | { type: 'played'; sessionId: number; playId: number; interrupted: boolean }
  | { type: 'dtmf-sent'; sessionId: number; requestId: number }
  | { type: 'dtmf'; sessionId: number; key: DtmfKey }
  | { type: 'timeout'; sessionId: number }
  | { type: 'closed'; sessionId: number }
  /** One received voice packet's payload, in the session's codec (only while listening). */
  | { type: 'audio'; sessionId: number; payload: Uint8Array }
  | { type: 'stats'; requestId: number; stats: WorkerStats }
  | { type: 'relay-opened'; relayId: number; callerPort: number; calleePort: number }
  | { type: 'relay-open-failed'; relayId: number; message: string }
  | { type: 'relay-timeout'; relayId: number }
  | { type: 'relay-closed'; relayId: number }
  | { type: 'error'; message: string };
