import type { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { MediaError } from './errors.js';
import type { G711Codec } from './g711.js';
import type { DtmfKey } from './dtmf.js';
import { createAnswer, createOffer, parseAnswer } from './sdp.js';
import type { RemoteMedia } from './sdp.js';
import { siblingModule, startWorker } from './start-worker.js';
import type { FromWorker, RelaySideName, RtpWorkerData, ToWorker, WorkerStats } from './rtp-protocol.js';

export interface MediaPoolOptions {
  /** Number of RTP worker threads; the port range is split evenly between them. */
  workers: number;
  portMin: number;
  portMax: number;
  log: Logger;
  /** Address the RTP sockets bind to (default 0.0.0.0). */
  bindAddress?: string;
  /** Address written into our SDP (default: bindAddress, or 127.0.0.1 when binding to all). */
  advertiseAddress?: string;
  /** Codecs we accept, in order of preference (default PCMU, PCMA). */
  codecs?: readonly G711Codec[];
  /** No incoming RTP for this long reports the call dead (default 30 s). */
  rtpTimeoutMs?: number;
  /** A frame sent later than this after its slot is counted late (default 5 ms). */
  lateThresholdMs?: number;
}

export interface PlayResult {
  /** True when stop() or close() cut the audio short. */
  interrupted: boolean;
}

/** One call's audio stream, owned by an RTP worker. */
export interface MediaSession {
  readonly id: number;
  readonly localPort: number;
  /** The negotiated codec (the requested one until an answer or offer says otherwise). */
  readonly codec: G711Codec;
  /** Plays queue in the worker and go out back to back (see `ActionMedia.gapless`). */
  readonly gapless: true;
  /** Our SDP offer for an outgoing call. */
  offerSdp(): string;
  /** Applies the callee's SDP answer to our offer and starts the stream. */
  acceptAnswer(answerSdp: string): RemoteMedia;
  /** Answers a caller's SDP offer and starts the stream. */
  answerSdp(offerSdp: string): string;
  /** Queues G.711 audio in the session's codec; resolves when it has been sent or cut short. */
  play(audio: Uint8Array): Promise<PlayResult>;
  /** Drops all queued audio; pending play() calls resolve with interrupted: true. */
  stop(): void;
  /** Sends keys as RFC 4733 telephone-events; resolves when the last end packet is out. */
  sendDtmf(keys: string, durationMs?: number): Promise<void>;
  /** Subscribes to received key presses; returns an unsubscribe function. */
  onDtmf(listener: (key: DtmfKey) => void): () => void;
  /** Called once when no RTP has arrived for the configured time. */
  onTimeout(listener: () => void): () => void;
  /**
   * Subscribes to the far end's voice frames (G.711 in `codec`, one RTP payload each); the worker
   * forwards them only while someone listens. Returns an unsubscribe function.
   */
  onAudio(listener: (frame: Uint8Array) => void): () => void;
  close(): Promise<void>;
}

/**
 * One call's media relay (proxy media mode): audio from the caller's side leaves from the callee
 * side's port and back. The worker latches each side's source (see rtp-relay.ts).
 */
export interface RtpRelay {
  readonly id: number;
  /** Our address and the port each side sends its audio to (RTCP on port + 1). */
  readonly address: string;
  readonly callerPort: number;
  readonly calleePort: number;
  /** Where a side's SDP says it takes audio. */
  setRemote(side: RelaySideName, address: string, port: number): void;
  /** The offer behind the side's latest new target was refused: back to its earlier target and latch. */
  revertRemote(side: RelaySideName): void;
  /** Armed: no packet either way for the timeout reports the call dead (off while on hold). */
  arm(armed: boolean): void;
  onTimeout(listener: () => void): void;
  close(): Promise<void>;
}

export interface PoolStats extends WorkerStats {
  worker: number;
}

export interface MediaPool {
  /** `rtpTimeoutMs` overrides the pool's RTP timeout for this session. */
  openSession(options?: { codec?: G711Codec; rtpTimeoutMs?: number }): Promise<MediaSession>;
  /** `timeoutMs` overrides the pool's RTP timeout for this relay. */
  openRelay(options?: { timeoutMs?: number }): Promise<RtpRelay>;
  /** Per-worker frame counters; `reset` zeroes them after reading (benchmarks). */
  stats(options?: { reset?: boolean }): Promise<PoolStats[]>;
  close(): Promise<void>;
}

interface SessionHandlers {
  opened(port: number): void;
  openFailed(message: string): void;
  played(playId: number, interrupted: boolean): void;
  dtmfSent(requestId: number): void;
  dtmf(key: DtmfKey): void;
  audio(payload: Uint8Array): void;
  timeout(): void;
  closed(): void;
}

interface RelayHandlers {
  opened(callerPort: number, calleePort: number): void;
  openFailed(message: string): void;
  timeout(): void;
  closed(): void;
}

interface WorkerSlot {
  index: number;
  worker: Worker;
  sessions: Map<number, SessionHandlers>;
  relays: Map<number, RelayHandlers>;
  statsWaiters: Map<number, (s: WorkerStats) => void>;
  exited: Promise<void>;
}

const DEFAULTS = {
  bindAddress: '0.0.0.0',
  rtpTimeoutMs: 30_000,
  lateThresholdMs: 5,
  codecs: ['PCMU', 'PCMA'] as const,
};

/** Starts the RTP workers. Bad options throw here rather than on the first call. */
export function createMediaPool(options: MediaPoolOptions): MediaPool {
  const { workers, portMin, portMax, log } = options;
  if (!Number.isInteger(workers) || workers < 1) throw new RangeError('workers must be a positive integer');
  if (
    !Number.isInteger(portMin) ||
    !Number.isInteger(portMax) ||
    portMin < 1024 ||
    portMax > 65535 ||
    portMax < portMin
  ) {
    throw new RangeError('portMin/portMax must be a range within 1024–65535');
  }
  const perWorker = Math.floor((portMax - portMin + 1) / workers);
  if (perWorker < 2) throw new RangeError('port range too small for the number of workers');
  const bindAddress = options.bindAddress ?? DEFAULTS.bindAddress;
  const advertiseAddress =
    options.advertiseAddress ?? (bindAddress === '0.0.0.0' || bindAddress === '::' ? '127.0.0.1' : bindAddress);
  const codecs = options.codecs ?? DEFAULTS.codecs;
  const workerUrl = siblingModule(import.meta.url, 'rtp-worker');

  let nextSessionId = 1;
  let nextRequestId = 1;
  let closed = false;

  const slots: WorkerSlot[] = Array.from({ length: workers }, (_, index) => {
    const data: RtpWorkerData = {
      bindAddress,
      portMin: portMin + index * perWorker,
      portMax: portMin + (index + 1) * perWorker - 1,
      rtpTimeoutMs: options.rtpTimeoutMs ?? DEFAULTS.rtpTimeoutMs,
      lateThresholdMs: options.lateThresholdMs ?? DEFAULTS.lateThresholdMs,
    };
    const worker = startWorker(workerUrl, data);
    const slot: WorkerSlot = {
      index,
      worker,
      sessions: new Map(),
      relays: new Map(),
      statsWaiters: new Map(),
      exited: new Promise((resolve) => worker.once('exit', () => resolve())),
    };
    worker.on('message', (msg: FromWorker) => dispatch(slot, msg));
    worker.on('error', (err) => log.error({ err, worker: index }, 'rtp worker failed'));
    return slot;
  });

  function dispatch(slot: WorkerSlot, msg: FromWorker): void {
    if (msg.type === 'stats') {
      slot.statsWaiters.get(msg.requestId)?.(msg.stats);
      slot.statsWaiters.delete(msg.requestId);
      return;
    }
    if (msg.type === 'error') {
      log.warn({ worker: slot.index, detail: msg.message }, 'rtp worker error');
      return;
    }
    if (
      msg.type === 'relay-opened' ||
      msg.type === 'relay-open-failed' ||
      msg.type === 'relay-timeout' ||
      msg.type === 'relay-closed'
    ) {
      const r = slot.relays.get(msg.relayId);
      if (!r) return;
      if (msg.type === 'relay-opened') r.opened(msg.callerPort, msg.calleePort);
      else if (msg.type === 'relay-open-failed') r.openFailed(msg.message);
      else if (msg.type === 'relay-timeout') r.timeout();
      else r.closed();
      return;
    }
    const h = slot.sessions.get(msg.sessionId);
    if (!h) return;
    switch (msg.type) {
      case 'opened':
        h.opened(msg.port);
        break;
      case 'open-failed':
        h.openFailed(msg.message);
        break;
      case 'played':
        h.played(msg.playId, msg.interrupted);
        break;
      case 'dtmf-sent':
        h.dtmfSent(msg.requestId);
        break;
      case 'dtmf':
        h.dtmf(msg.key);
        break;
      case 'audio':
        h.audio(msg.payload);
        break;
      case 'timeout':
        h.timeout();
        break;
      case 'closed':
        h.closed();
        break;
    }
  }

  async function openSession(opts: { codec?: G711Codec; rtpTimeoutMs?: number } = {}): Promise<MediaSession> {
    if (closed) throw new MediaError('MEDIA_POOL_CLOSED', 'media pool is closed');
    const requested = opts.codec ?? codecs[0] ?? 'PCMU';
    const slot = leastLoaded();
    const id = nextSessionId++;
    const send = (msg: ToWorker): void => slot.worker.postMessage(msg);
    const plays = new Map<number, (r: PlayResult) => void>();
    const dtmfWaiters = new Map<number, () => void>();
    const dtmfListeners = new Set<(key: DtmfKey) => void>();
    const timeoutListeners = new Set<() => void>();
    const audioListeners = new Set<(frame: Uint8Array) => void>();
    let onClosed: (() => void) | null = null;
    let sessionClosed = false;
    let codec: G711Codec = requested;
    let nextPlayId = 1;

    const localPort = await new Promise<number>((resolve, reject) => {
      slot.sessions.set(id, {
        opened: resolve,
        openFailed: (message) => {
          slot.sessions.delete(id);
          reject(new MediaError('MEDIA_NO_PORT', message));
        },
        played: (playId, interrupted) => {
          plays.get(playId)?.({ interrupted });
          plays.delete(playId);
        },
        dtmfSent: (requestId) => {
          dtmfWaiters.get(requestId)?.();
          dtmfWaiters.delete(requestId);
        },
        dtmf: (key) => {
          for (const l of dtmfListeners) l(key);
        },
        audio: (payload) => {
          for (const l of audioListeners) l(payload);
        },
        timeout: () => {
          for (const l of timeoutListeners) l();
        },
        closed: () => {
          slot.sessions.delete(id);
          onClosed?.();
        },
      });
      send({ type: 'open', sessionId: id, codec: requested, rtpTimeoutMs: opts.rtpTimeoutMs ?? null });
    });

    const local = () => ({
      address: advertiseAddress,
      port: localPort,
      codecs: [requested, ...codecs.filter((c) => c !== requested)],
      sessionId: String(id),
    });
    const startStream = (remote: RemoteMedia): void => {
      codec = remote.codec;
      send({ type: 'remote', sessionId: id, ...remote });
    };
    const ensureOpen = (): void => {
      if (sessionClosed) throw new MediaError('MEDIA_SESSION_CLOSED', 'media session is closed');
    };

    const session: MediaSession = {
      id,
      localPort,
      gapless: true,
      get codec() {
        return codec;
      },
      offerSdp: () => createOffer(local()),
      acceptAnswer(answerSdp) {
        ensureOpen();
        const remote = parseAnswer(answerSdp, local());
        startStream(remote);
        return remote;
      },
      answerSdp(offerSdp) {
        ensureOpen();
        const answer = createAnswer(offerSdp, local());
        startStream(answer.remote);
        return answer.sdp;
      },
      play(audio) {
        if (sessionClosed) return Promise.resolve({ interrupted: true });
        const playId = nextPlayId++;
        return new Promise((resolve) => {
          plays.set(playId, resolve);
          send({ type: 'play', sessionId: id, playId, audio });
        });
      },
      stop() {
        if (!sessionClosed) send({ type: 'stop', sessionId: id });
      },
      sendDtmf(keys, durationMs = 100) {
        if (sessionClosed) return Promise.resolve();
        const requestId = nextRequestId++;
        return new Promise((resolve) => {
          dtmfWaiters.set(requestId, resolve);
          send({ type: 'dtmf', sessionId: id, requestId, keys, durationMs });
        });
      },
      onDtmf(listener) {
        dtmfListeners.add(listener);
        return () => dtmfListeners.delete(listener);
      },
      onTimeout(listener) {
        timeoutListeners.add(listener);
        return () => timeoutListeners.delete(listener);
      },
      onAudio(listener) {
        if (audioListeners.size === 0 && !sessionClosed) send({ type: 'listen', sessionId: id, on: true });
        audioListeners.add(listener);
        return () => {
          if (!audioListeners.delete(listener) || audioListeners.size > 0 || sessionClosed) return;
          send({ type: 'listen', sessionId: id, on: false });
        };
      },
      close() {
        if (sessionClosed) return Promise.resolve();
        sessionClosed = true;
        return new Promise((resolve) => {
          onClosed = () => {
            for (const r of plays.values()) r({ interrupted: true });
            plays.clear();
            dtmfListeners.clear();
            timeoutListeners.clear();
            audioListeners.clear();
            resolve();
          };
          send({ type: 'close', sessionId: id });
        });
      },
    };
    return session;
  }

  const leastLoaded = (): WorkerSlot =>
    slots.reduce((a, b) => (b.sessions.size + b.relays.size < a.sessions.size + a.relays.size ? b : a));

  async function openRelay(opts: { timeoutMs?: number } = {}): Promise<RtpRelay> {
    if (closed) throw new MediaError('MEDIA_POOL_CLOSED', 'media pool is closed');
    const slot = leastLoaded();
    // Shares the id space with sessions: one counter, no collisions in a worker's messages.
    const id = nextSessionId++;
    const send = (msg: ToWorker): void => slot.worker.postMessage(msg);
    const timeoutListeners: (() => void)[] = [];
    let onClosed: (() => void) | null = null;
    let relayClosed = false;
    const ports = await new Promise<{ callerPort: number; calleePort: number }>((resolve, reject) => {
      slot.relays.set(id, {
        opened: (callerPort, calleePort) => resolve({ callerPort, calleePort }),
        openFailed: (message) => {
          slot.relays.delete(id);
          reject(new MediaError('MEDIA_NO_PORT', message));
        },
        timeout: () => {
          for (const l of timeoutListeners) l();
        },
        closed: () => {
          slot.relays.delete(id);
          onClosed?.();
        },
      });
      send({ type: 'relay-open', relayId: id, timeoutMs: opts.timeoutMs ?? null });
    });
    return {
      id,
      address: advertiseAddress,
      ...ports,
      setRemote(side, address, port) {
        if (!relayClosed) send({ type: 'relay-remote', relayId: id, side, address, port });
      },
      revertRemote(side) {
        if (!relayClosed) send({ type: 'relay-revert', relayId: id, side });
      },
      arm(armed) {
        if (!relayClosed) send({ type: 'relay-arm', relayId: id, armed });
      },
      onTimeout(listener) {
        timeoutListeners.push(listener);
      },
      close() {
        if (relayClosed) return Promise.resolve();
        relayClosed = true;
        timeoutListeners.length = 0;
        return new Promise<void>((resolve) => {
          onClosed = resolve;
          send({ type: 'relay-close', relayId: id });
        });
      },
    };
  }

  async function stats(opts: { reset?: boolean } = {}): Promise<PoolStats[]> {
    return Promise.all(
      slots.map(
        (slot) =>
          new Promise<PoolStats>((resolve) => {
            const requestId = nextRequestId++;
            slot.statsWaiters.set(requestId, (s) => resolve({ worker: slot.index, ...s }));
            slot.worker.postMessage({ type: opts.reset ? 'reset-stats' : 'stats', requestId } satisfies ToWorker);
          }),
      ),
    );
  }

  async function close(): Promise<void> {
    if (closed) return;
    closed = true;
    for (const slot of slots) slot.worker.postMessage({ type: 'shutdown' } satisfies ToWorker);
    // A worker that does not exit promptly (a socket stuck closing) is terminated.
    await Promise.all(
      slots.map(async (slot) => {
        const timer = setTimeout(() => void slot.worker.terminate(), 2000);
        await slot.exited;
        clearTimeout(timer);
      }),
    );
  }

  return { openSession, openRelay, stats, close };
}
