import type { CoreDeps } from '../../platform/core.js';
import type { Module } from '../../platform/module.js';
import { accountProfileRoutes } from './routes.js';
import { createAccountProfile } from './service.js';

/** The account's own settings: profile, display preferences, billing details, audit log. */
export function buildAccountProfileModule(core: CoreDeps) {
  const service = createAccountProfile({ ...core, defaultLowBalance: core.config.billing.low_balance_threshold });
  const module: Module = { name: 'account-profile', routes: accountProfileRoutes(service) };
  return { module, service };
}
