import type { CoreDeps } from '../../platform/core.js';
import type { Mailer } from '../../platform/mailer.js';
import type { Module } from '../../platform/module.js';
import { accountsRoutes } from './routes.js';
import { accountSecurityRoutes } from './security-routes.js';
import { createAccountSecurityService, type AccountSecurityService } from './security-service.js';
import { createAccountsService } from './service.js';
import { loadSigningSecret } from './signing-secret.js';

/** Sign-up, sessions, passwords, e-mail verification, two-factor sign-in; reads the token signing secret from the database. */
export async function buildAccountsModule(core: CoreDeps, deps: { mailer: Mailer }) {
  const signingSecret = await loadSigningSecret(core.sql, core.config.auth.jwt_secret);
  // The security service needs the accounts service, which tells it of registrations: bound after both exist.
  let security: AccountSecurityService | null = null;
  const service = createAccountsService({
    ...core,
    signingSecret,
    onRegistered: async (account) => security?.welcome(account),
  });
  security = createAccountSecurityService({ ...core, mailer: deps.mailer, accounts: service, signingSecret });
  const loginLimit = core.config.auth.login_attempts_per_minute;
  const module: Module = {
    name: 'accounts',
    start: () => service.startCache(),
    stop: () => service.stopCache(),
    routes: async (app) => {
      await accountsRoutes(service, loginLimit)(app);
      await accountSecurityRoutes(security, loginLimit)(app);
    },
  };
  return { module, service, security };
}
