import type { AddressInfo } from 'node:net';
import type { Server as HttpsServer } from 'node:https';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Config } from './config/schema.js';
import { connect, type Sql } from './db/connection.js';
import { embeddedOptions, startEmbeddedPostgres, type EmbeddedDatabase } from './db/embedded.js';
import { migrate } from './db/migrate.js';
import { buildApp, type App } from './http/app.js';
import { createAuthenticator } from './http/auth.js';
import { createFailedAuthGuard, createRateLimiters } from './http/rate-limit.js';
import { loadTls } from './http/tls.js';
import { buildModules, type Modules } from './modules/index.js';
import { createSelfAddresses } from './platform/self-addresses.js';
import { systemClock, type Clock } from './platform/clock.js';
import type { Lookup } from './platform/outbound-guard.js';
import type { CoreDeps } from './platform/core.js';
import { connectionCaps } from './platform/fd-budget.js';
import { createHealthRegistry } from './platform/health.js';
import { startMetricsServer, type MetricsServer } from './platform/metrics.js';

export interface FirstStart {
  email: string;
  password: string;
  /** The one-time password signs in once, before this time, and must then be changed. */
  passwordExpiresAt: Date;
  testKey: string;
}

export interface Daemon {
  app: App;
  sql: Sql;
  core: CoreDeps;
  modules: Modules;
  ports: Record<string, number>;
  /** Set on the first start against an empty database; printed once by main.ts. */
  firstStart: FirstStart | null;
  /**
   * Re-reads the TLS key, certificate and CA files (SIGHUP) into the HTTPS and SIP listeners and
   * the SIP outbound trust; open connections and live calls are kept. Throws, changing nothing
   * further, when a file cannot be read.
   */
  reload(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts every plane in order and returns a handle that stops them in reverse
 * (CONVENTIONS 3). Tests start it on port 0 against a database of their own.
 */
export async function startDaemon(
  config: Readonly<Config>,
  opts: { log: Logger; clock?: Clock; version?: string; lookup?: Lookup },
): Promise<Daemon> {
  const { log } = opts;
  const clock = opts.clock ?? systemClock;
  const stops: (() => Promise<void> | void)[] = [];
  const stopAll = async () => {
    for (const stop of stops.reverse()) {
      try {
        await stop();
      } catch (err) {
        log.warn({ err }, 'error while stopping');
      }
    }
  };
  try {
    let embedded: EmbeddedDatabase | null = null;
    let url = config.database.url;
    if (!url) {
      embedded = await startEmbeddedPostgres(embeddedOptions(config, log));
      stops.push(() => embedded!.stop());
      url = embedded.url;
    }
    const sql = connect({ url, max: config.database.pool_max, log });
    stops.push(() => sql.end({ timeout: 5 }));
    await migrate(sql, log);

    let redis: Redis | null = null;
    if (config.redis.url) {
      // Loaded only with a Redis configured: its import is about a tenth of a second of CPU that
      // every daemon start without one paid for. The package's module.exports is the client class
      // (Node's default export of it), which its type declarations describe as the whole module.
      const { default: RedisClient } = (await import('ioredis')) as unknown as { default: typeof Redis };
      redis = new RedisClient(config.redis.url, {
        lazyConnect: true,
        maxRetriesPerRequest: 2,
        enableOfflineQueue: false,
      });
      await redis.connect();
      stops.push(async () => void (await redis!.quit().catch(() => redis!.disconnect())));
    }

    const health = createHealthRegistry();
    health.register('database', async () => {
      await sql`select 1`;
      return { ok: true, embedded: embedded !== null };
    });
    health.register('redis', async () =>
      redis ? { ok: (await redis.ping()) === 'PONG', backend: 'redis' } : { ok: true, backend: 'in-process' },
    );
    const tls = await loadTls(config, log);
    const self = createSelfAddresses(config);
    const core: CoreDeps = {
      config,
      sql,
      log,
      clock,
      redis,
      health,
      tls,
      self,
      ...(opts.lookup ? { lookup: opts.lookup } : {}),
    };
    const modules = await buildModules(core);
    const { accounts, keys } = modules.services;

    let firstStart: FirstStart | null = null;
    const boot = await accounts.bootstrapOperator(config.bootstrap.operator_email);
    if (boot) {
      const { secret } = await keys.create(boot.account.id, { name: 'first-start test key', mode: 'test' });
      firstStart = {
        email: boot.account.email!,
        password: boot.password,
        passwordExpiresAt: boot.account.passwordExpiresAt!,
        testKey: secret,
      };
    }

    const app = await buildApp({
      config,
      log,
      authenticator: createAuthenticator({
        accounts,
        keys,
        checkMemberRequest: modules.services.team.checkMemberRequest,
      }),
      limiters: createRateLimiters(redis),
      failedAuth: createFailedAuthGuard(redis, {
        points: config.auth.failed_auth_per_source,
        seconds: config.auth.failed_auth_window_seconds,
      }),
      idempotency: modules.idempotency,
      modules: modules.list,
      tls,
      ...(opts.version ? { version: opts.version } : {}),
    });
    const caps = connectionCaps(config);
    if (caps.lowered) {
      log.warn(
        { fdLimit: caps.fdLimit, http: caps.http, sipTcp: caps.sipTcp, smpp: caps.smpp },
        'connection caps lowered to fit the open-file limit',
      );
    }
    // Past this the listener closes new sockets at once: the API's descriptors stay within its budget.
    app.server.maxConnections = caps.http;
    await app.listen({ host: config.http.host, port: config.http.port });
    stops.push(() => app.close());
    const ports: Record<string, number> = { http: (app.server.address() as AddressInfo).port };
    health.register('http', () => ({ ok: true, port: ports['http'], tls: config.http.tls_mode }));

    if (config.metrics.enabled) {
      const metrics: MetricsServer = await startMetricsServer({
        host: config.metrics.host,
        port: config.metrics.port,
        log,
      });
      stops.push(() => metrics.close());
      ports['metrics'] = metrics.port;
    }

    for (const m of modules.list) {
      await m.start?.();
      if (m.stop) stops.push(() => m.stop!());
      Object.assign(ports, m.ports?.() ?? {});
    }
    // Bound ports (0 in the settings means any free one): supplier targets must not be the exchange itself.
    self.addPorts(Object.values(ports));
    log.info({ ports }, 'svc-exchanged listening');
    const reload = async () => {
      const material = await loadTls(config, log);
      if (material && 'setSecureContext' in app.server) {
        (app.server as HttpsServer).setSecureContext({ key: material.key, cert: material.cert });
      }
      for (const m of modules.list) await m.reload?.(material);
      log.info({}, 'tls material reloaded');
    };
    return { app, sql, core, modules, ports, firstStart, reload, stop: stopAll };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
