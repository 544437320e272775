import pino from 'pino';
import { loadConfig, type DeepPartial } from '../../src/config/load.js';
import type { Config } from '../../src/config/schema.js';
import { buildApp, type ApiModule, type App } from '../../src/http/app.js';
import { createAuthenticator } from '../../src/http/auth.js';
import { createRateLimiters } from '../../src/http/rate-limit.js';
import { buildModules, type Services } from '../../src/modules/index.js';
import type { Module } from '../../src/platform/module.js';
import { systemClock, type Clock } from '../../src/platform/clock.js';
import { createHealthRegistry } from '../../src/platform/health.js';
import { connect, type Sql } from '../../src/db/connection.js';
import type { Redis } from 'ioredis';
import { createTestDatabase } from './db.js';
import { TEST_NETWORKS, TEST_SCRYPT_COST } from './daemon.js';

type Teardown = { teardown(fn: () => unknown): void };

/** Test suppliers and trunks: loopback and documentation addresses; attack tests override `security` with empty lists. */
const TEST_SECURITY = { private_supplier_networks: TEST_NETWORKS, private_trunk_networks: TEST_NETWORKS };

export interface TestApp {
  app: App;
  /** The modules, not started (a test starts what it needs). */
  modules: Module[];
  dbUrl: string;
  sql: Sql;
  config: Readonly<Config>;
  services: Services;
  /** A new customer account with a session token. */
  signUp(email?: string): Promise<{ accountId: string; email: string; password: string; session: string }>;
}

/**
 * The real app without a socket (requests through `app.inject`), on a fresh database, with
 * every real module plus `extra` modules a test declares.
 */
export async function buildTestApp(
  t: Teardown,
  opts: {
    overrides?: DeepPartial<Config>;
    extra?: ApiModule[];
    redis?: Redis | null;
    clock?: Clock;
    /** Another app's database (its `dbUrl`): a second daemon, with its own pool, beside the first. */
    dbUrl?: string;
  } = {},
): Promise<TestApp> {
  const { sql, url: dbUrl } = opts.dbUrl === undefined ? await createTestDatabase(t) : attach(t, opts.dbUrl);
  const overrides = opts.overrides ?? {};
  const config = loadConfig({
    overrides: {
      log: { level: 'silent' },
      security: TEST_SECURITY,
      ...overrides,
      // Schemas compile when a route is first called, as in startTestDaemon.
      http: { schema_compile: 'first_use', ...(overrides.http ?? {}) },
      auth: { scrypt_cost: TEST_SCRYPT_COST, ...(overrides.auth ?? {}) },
    } as DeepPartial<Config>,
  });
  const log = pino({ level: process.env['SVC_TEST_LOG'] ?? 'silent' });
  const clock = opts.clock ?? systemClock;
  const core = { config, sql, log, clock, redis: opts.redis ?? null, health: createHealthRegistry() };
  const modules = await buildModules(core);
  const app = await buildApp({
    config,
    log,
    authenticator: createAuthenticator(modules.services),
    limiters: createRateLimiters(opts.redis ?? null),
    idempotency: modules.idempotency,
    modules: [...modules.list, ...(opts.extra ?? [])],
    tls: null,
  });
  t.teardown(() => app.close());
  let n = 0;
  return {
    app,
    modules: modules.list,
    dbUrl,
    sql,
    config,
    services: modules.services,
    async signUp(email = `user${++n}-${Math.random().toString(36).slice(2, 8)}@example.test`) {
      const password = 'correct horse battery';
      const account = await modules.services.accounts.createAccount({ email, password });
      const tokens = await modules.services.accounts.login(email, password, {});
      return { accountId: account.id, email, password, session: tokens.accessToken };
    },
  };
}

function attach(t: Teardown, url: string): { sql: Sql; url: string } {
  const sql = connect({ url, max: 10, log: pino({ level: 'silent' }) });
  t.teardown(() => sql.end({ timeout: 5 }));
  return { sql, url };
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
