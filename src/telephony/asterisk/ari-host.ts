import type { AriClient, AriEvent } from 'ari-client';
import type { Logger } from 'pino';
import type { AsteriskMetrics } from './metrics.js';

/**
 * One Asterisk host over ARI: the `ari-client` connection (REST generated from the host's Swagger,
 * events on its websocket), a health check of `GET /asterisk/info`, and reconnection with backoff.
 *
 * Two kinds of trouble are told apart. A dropped websocket only takes the host out of rotation for
 * new calls: its channels live on in Asterisk, and once the socket is back the engine asks which of
 * its calls still have a channel. ARI not answering `health_failures` checks in a row means the host
 * is gone: `onLost` listeners end its calls.
 */

export interface AriHostConfig {
  url: string;
  username: string;
  password: string;
  app: string;
}

export interface AriHostOptions extends AriHostConfig {
  log: Logger;
  metrics: AsteriskMetrics;
  requestTimeoutMs: number;
  healthIntervalMs: number;
  healthFailures: number;
  reconnectMaxMs: number;
}

export class AriRequestError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
  ) {
    super(message);
    this.name = 'AriRequestError';
  }
}

export interface AriHost {
  /** host:port of the ARI URL, the metrics label. */
  readonly name: string;
  readonly app: string;
  /** Connected with its websocket open and answering health checks: may take new calls. */
  readonly eligible: boolean;
  /** Runs one ARI request with the timeout, timed into the latency histogram. */
  request<T>(operation: string, fn: (client: AriClient) => Promise<T>): Promise<T>;
  onEvent(listener: (event: AriEvent) => void): void;
  /** The websocket (re)connected: events may have been missed since the last one. */
  onConnected(listener: () => void): void;
  /** The host stopped answering ARI. */
  onLost(listener: () => void): void;
  start(): void;
  close(): Promise<void>;
}

/** ari-client reports HTTP failures as errors carrying the response; keep the status. */
function statusOf(err: unknown): number | null {
  const e = err as { statusCode?: unknown; status?: unknown; response?: { statusCode?: unknown } } | null;
  const s = e?.statusCode ?? e?.response?.statusCode ?? e?.status;
  return typeof s === 'number' ? s : null;
}

export function createAriHost(opts: AriHostOptions): AriHost {
  const base = opts.url.replace(/\/+$/, '');
  const name = new URL(base).host;
  const log = opts.log.child({ asteriskHost: name });
  const { metrics } = opts;
  const auth = `Basic ${Buffer.from(`${opts.username}:${opts.password}`).toString('base64')}`;
  const eventListeners: Array<(e: AriEvent) => void> = [];
  const connectedListeners: Array<() => void> = [];
  const lostListeners: Array<() => void> = [];
  let client: AriClient | null = null;
  let socketOpen = false;
  let answering = false;
  let lost = false;
  let failures = 0;
  let closed = false;
  let connecting = false;
  let checking = false;
  let healthTimer: NodeJS.Timeout | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let attempt = 0;

  const publish = (): void => {
    metrics.hostUp.set({ host: name }, socketOpen && answering ? 1 : 0);
  };
  const fire = (listeners: Array<() => void>, what: string): void => {
    for (const l of listeners) {
      try {
        l();
      } catch (err) {
        log.error({ err }, `${what} listener failed`);
      }
    }
  };

  function withTimeout<T>(operation: string, p: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new AriRequestError(`ARI ${operation} on ${name} timed out`, null)),
        opts.requestTimeoutMs,
      );
    });
    return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
  }

  async function request<T>(operation: string, fn: (c: AriClient) => Promise<T>): Promise<T> {
    const c = client;
    if (!c) throw new AriRequestError(`ARI on ${name} is not connected`, null);
    const end = metrics.requestSeconds.startTimer({ host: name, operation });
    try {
      return await withTimeout(operation, fn(c));
    } catch (err) {
      if (err instanceof AriRequestError) throw err;
      // ari-client rejects with Error objects and sometimes with plain `{ message }` objects.
      const text =
        err instanceof Error
          ? err.message
          : err !== null && typeof err === 'object' && 'message' in err
            ? String(err.message)
            : String(err);
      throw new AriRequestError(`ARI ${operation} on ${name} failed: ${text.slice(0, 200)}`, statusOf(err));
    } finally {
      end();
    }
  }

  function scheduleConnect(): void {
    if (closed || connecting || retryTimer) return;
    const delay = attempt === 0 ? 0 : Math.min(opts.reconnectMaxMs, 100 * 2 ** Math.min(attempt, 20));
    attempt++;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      void connect();
    }, delay);
    retryTimer.unref();
  }

  async function connect(): Promise<void> {
    if (closed) return;
    connecting = true;
    let c: AriClient | null = null;
    try {
      // ari-client's Swagger loader throws from an HTTP callback (an uncaught exception) when the
      // resource list answers other than 200; only a host that serves it to us now is handed over.
      const docs = await fetch(`${base}/ari/api-docs/resources.json`, {
        headers: { authorization: auth },
        signal: AbortSignal.timeout(opts.requestTimeoutMs),
      });
      await docs.body?.cancel();
      if (!docs.ok) throw new AriRequestError(`ARI resource list on ${name} answered ${docs.status}`, docs.status);
      // Loaded on the first connection: a daemon without Asterisk hosts never needs it, and its
      // import (swagger-client, request, the public-suffix list) costs about 0.3 s of CPU.
      const { default: ari } = await import('ari-client');
      c = await withTimeout('connect', ari.connect(base, opts.username, opts.password));
      const self = c;
      c.on('*', (event: AriEvent) => {
        // Only the current connection speaks: a replaced one still retrying must not double events.
        if (client !== self) return;
        for (const l of eventListeners) {
          try {
            l(event);
          } catch (err) {
            log.error({ err, type: event.type }, 'ARI event listener failed');
          }
        }
      });
      c.on('WebSocketReconnecting', () => {
        socketOpen = false;
        metrics.reconnects.inc({ host: name });
        publish();
        log.warn('ARI websocket dropped; reconnecting');
      });
      c.on('WebSocketConnected', () => {
        // The first open is reported once `start` resolves, below; this is for reconnects.
        if (socketOpen || client !== self) return;
        socketOpen = true;
        publish();
        log.info('ARI websocket reconnected');
        fire(connectedListeners, 'connected');
      });
      c.on('WebSocketMaxRetries', () => {
        // ari-client gave up; start over with a fresh connection (and a fresh Swagger load).
        socketOpen = false;
        publish();
        if (client === self) client = null;
        scheduleConnect();
      });
      await withTimeout('websocket', c.start(opts.app));
      if (closed) {
        c.stop();
        return;
      }
      client = c;
      socketOpen = true;
      attempt = 0;
      publish();
      log.info({ app: opts.app }, 'ARI connected');
      fire(connectedListeners, 'connected');
    } catch (err) {
      try {
        c?.stop();
      } catch {
        // its socket never opened
      }
      log.warn({ err: (err as Error).message }, 'ARI connect failed; retrying with backoff');
      metrics.reconnects.inc({ host: name });
      connecting = false;
      scheduleConnect();
      return;
    }
    connecting = false;
  }

  async function check(): Promise<void> {
    // One check at a time: checks that overlap (a slow host, a loaded machine) would fail together
    // on one dropped connection and count as consecutive failures that were never apart in time.
    if (checking) return;
    checking = true;
    const end = metrics.requestSeconds.startTimer({ host: name, operation: 'health' });
    let ok = false;
    try {
      const res = await fetch(`${base}/ari/asterisk/info`, {
        headers: { authorization: auth },
        signal: AbortSignal.timeout(opts.requestTimeoutMs),
      });
      ok = res.ok;
      await res.body?.cancel();
    } catch {
      // unreachable, refused or timed out: a failed check
    } finally {
      end();
      checking = false;
    }
    if (closed) return;
    if (ok) {
      failures = 0;
      if (!answering) log.info('ARI answering');
      answering = true;
      if (lost) {
        lost = false;
        // Whatever the client held is stale after an outage: a fresh connection, fresh events.
        if (!connecting && !socketOpen) {
          const old = client;
          client = null;
          try {
            old?.stop();
          } catch {
            // its socket is already down
          }
          scheduleConnect();
        }
      }
    } else {
      failures++;
      if (failures >= opts.healthFailures && !lost) {
        lost = true;
        answering = false;
        log.error({ failures }, 'ARI stopped answering; the host is taken out and its calls end');
        metrics.hostsLost.inc({ host: name });
        publish();
        fire(lostListeners, 'lost');
        return;
      }
    }
    publish();
  }

  return {
    name,
    app: opts.app,
    get eligible() {
      return socketOpen && answering && client !== null && !closed;
    },
    request,
    onEvent: (l) => void eventListeners.push(l),
    onConnected: (l) => void connectedListeners.push(l),
    onLost: (l) => void lostListeners.push(l),
    start() {
      scheduleConnect();
      void check();
      healthTimer = setInterval(() => void check(), opts.healthIntervalMs);
      healthTimer.unref();
    },
    async close() {
      closed = true;
      clearInterval(healthTimer);
      clearTimeout(retryTimer);
      socketOpen = false;
      metrics.hostUp.set({ host: name }, 0);
      const c = client;
      client = null;
      try {
        c?.stop();
      } catch {
        // already closed
      }
    },
  };
}
