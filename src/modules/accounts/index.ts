import type { CoreDeps } from '../../platform/core.js';
import type { Module } from '../../platform/module.js';
import { accountsRoutes } from './routes.js';
import { createAccountsService } from './service.js';
import { loadSigningSecret } from './signing-secret.js';

/** Sign-up, sessions, passwords and sub-accounts; reads the token signing secret from the database. */
export async function buildAccountsModule(core: CoreDeps) {
  const signingSecret = await loadSigningSecret(core.sql, core.config.auth.jwt_secret);
  const service = createAccountsService({ ...core, signingSecret });
  const module: Module = {
    name: 'accounts',
    routes: accountsRoutes(service, core.config.auth.login_attempts_per_minute),
  };
  return { module, service };
}
