import type { Logger } from 'pino';
import type { CallEngine } from '../engine.js';
import type { CallMediaRelay } from '../media/call-relay.js';
import type { PromptRenderer } from '../media/actions.js';
import type { SignallingDialer } from '../media/native-engine.js';
import type { MediaPool } from '../media/pool.js';
import { createAsteriskEngine } from './ari-engine.js';
import { createAriHost, type AriHost, type AriHostConfig } from './ari-host.js';
import { createLegListener, type LegListener } from './leg-listener.js';
import { createChannelBook } from './channels.js';
import { openMediaAnchor } from './media-anchor.js';
import { asteriskMetrics } from './metrics.js';
import { createHttpPromptStore } from './prompt-server.js';
import { createPromptStore, type PromptStore } from './prompts.js';

export type { AriHostConfig } from './ari-host.js';

/** The `[asterisk]` settings the engine needs (config keys in snake case, see config/default.toml). */
export interface AsteriskSettings {
  hosts: readonly AriHostConfig[];
  sip_bind: string;
  sip_port: number;
  sip_advertise: string;
  pjsip_endpoint: string;
  /** `http`: Asterisk fetches prompts from the exchange; `shared_dir`: it reads them from `prompt_dir_remote`. */
  prompt_transport: 'http' | 'shared_dir';
  /** The prompt listener's port, on `sip_bind` (0: any free port). */
  prompt_http_port: number;
  prompt_url_ttl_ms: number;
  /** shared_dir: where prompts are written, and the same directory as Asterisk sees it (empty: the same). */
  prompt_dir: string;
  prompt_dir_remote: string;
  request_timeout_ms: number;
  health_interval_ms: number;
  health_failures: number;
  reconnect_max_ms: number;
  leg_timeout_ms: number;
}

export interface AsteriskFarm {
  hosts: readonly AriHost[];
  /** `pool`: RTP sessions that calls' audio is tapped to when an AI agent listens and speaks. */
  createEngine(dialer: SignallingDialer, renderer: PromptRenderer, pool?: MediaPool): CallEngine;
  /** Anchors a trunk call's media (a route in proxy media mode) in a bridge on a healthy host. */
  openRelay(): Promise<CallMediaRelay>;
  close(): Promise<void>;
}

/** Connects to every configured host, binds the leg listener, and builds engines over them. */
export function createAsteriskFarm(settings: AsteriskSettings, log: Logger): AsteriskFarm {
  if (settings.hosts.length === 0) throw new Error('[media] engine = "asterisk" needs at least one [[asterisk.hosts]]');
  if (settings.prompt_transport === 'shared_dir' && !settings.prompt_dir) {
    throw new Error('[asterisk] prompt_dir is empty');
  }
  // ari-client keeps one set of REST credentials per process (swagger-client's global authorization),
  // so hosts with different users would be sent each other's passwords.
  const [first] = settings.hosts;
  if (first && settings.hosts.some((h) => h.username !== first.username || h.password !== first.password)) {
    throw new Error('[asterisk] every host must use the same ARI username and password');
  }
  const metrics = asteriskMetrics();
  const flog = log.child({ plane: 'asterisk' });
  const hosts = settings.hosts.map((h) =>
    createAriHost({
      ...h,
      log: flog,
      metrics,
      requestTimeoutMs: settings.request_timeout_ms,
      healthIntervalMs: settings.health_interval_ms,
      healthFailures: settings.health_failures,
      reconnectMaxMs: settings.reconnect_max_ms,
    }),
  );
  const book = createChannelBook(hosts, flog, metrics);
  for (const h of hosts) h.start();
  const legs: Promise<LegListener> = createLegListener({
    bind: settings.sip_bind,
    port: settings.sip_port,
    advertise: settings.sip_advertise,
    log: flog,
  });
  legs.catch((err: unknown) => flog.error({ err }, 'the Asterisk leg listener could not bind'));
  const prompts: PromptStore =
    settings.prompt_transport === 'http'
      ? createHttpPromptStore({
          bind: settings.sip_bind,
          port: settings.prompt_http_port,
          advertise: settings.sip_advertise,
          ttlMs: settings.prompt_url_ttl_ms,
          log: flog,
        })
      : createPromptStore({ dir: settings.prompt_dir, remoteDir: settings.prompt_dir_remote });
  const engines: CallEngine[] = [];
  return {
    hosts,
    createEngine(dialer, renderer, pool) {
      const engine = createAsteriskEngine({
        book,
        legs,
        dialer,
        renderer,
        prompts,
        ...(pool ? { pool } : {}),
        pjsipEndpoint: settings.pjsip_endpoint,
        legTimeoutMs: settings.leg_timeout_ms,
        log: flog,
      });
      engines.push(engine);
      return engine;
    },
    openRelay: () =>
      openMediaAnchor({
        book,
        legs,
        pjsipEndpoint: settings.pjsip_endpoint,
        legTimeoutMs: settings.leg_timeout_ms,
        log: flog,
      }),
    async close() {
      await Promise.all(engines.map((e) => e.close()));
      book.close();
      await Promise.all(hosts.map((h) => h.close()));
      await prompts.close();
      await (await legs.catch(() => null))?.close();
    },
  };
}

/**
 * The daemon's one Asterisk farm, shared by API calls (the ARI engine) and trunk calls whose route
 * anchors media; connected on first use, like the native media pool.
 */
export function createSharedAsteriskFarm(settings: AsteriskSettings, log: Logger) {
  let farm: AsteriskFarm | null = null;
  return {
    get(): AsteriskFarm {
      farm ??= createAsteriskFarm(settings, log);
      return farm;
    },
    async close(): Promise<void> {
      const f = farm;
      farm = null;
      await f?.close();
    },
  };
}

export type SharedAsteriskFarm = ReturnType<typeof createSharedAsteriskFarm>;
