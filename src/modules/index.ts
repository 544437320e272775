import type { ApiModule } from '../http/app.js';
import type { CoreDeps } from '../platform/core.js';
import { accountsRoutes } from './accounts/routes.js';
import { createAccountsService } from './accounts/service.js';
import { loadSigningSecret } from './accounts/signing-secret.js';
import { keysRoutes } from './keys/routes.js';
import { createKeysService } from './keys/service.js';
import { statusRoutes } from './status/routes.js';

/** A built module: its routes, and background work started and stopped by main.ts. */
export interface Module extends ApiModule {
  name: string;
  start?(): Promise<void> | void;
  stop?(): Promise<void> | void;
}

/**
 * The composition root of the domain modules, in dependency order. Each module is built from
 * the core dependencies and the services of modules built before it.
 */
export async function buildModules(core: CoreDeps) {
  const signingSecret = await loadSigningSecret(core.sql, core.config.auth.jwt_secret);
  const accounts = createAccountsService({ ...core, signingSecret });
  const keys = createKeysService(core);
  let usageTimer: NodeJS.Timeout | undefined;

  const list: Module[] = [
    { name: 'status', routes: statusRoutes(core.health, core.clock.now()) },
    { name: 'accounts', routes: accountsRoutes(accounts, core.config.auth.login_attempts_per_minute) },
    {
      name: 'keys',
      routes: keysRoutes(keys),
      start() {
        usageTimer = setInterval(() => void keys.flushUsage().catch((err) => core.log.warn({ err }, 'api usage flush failed')), 5000);
        usageTimer.unref();
      },
      async stop() {
        clearInterval(usageTimer);
        await keys.flushUsage();
      },
    },
  ];

  return { services: { accounts, keys }, list };
}

export type Modules = Awaited<ReturnType<typeof buildModules>>;
export type Services = Modules['services'];
