import type { App } from '../../http/app.js';
import type { CoreDeps } from '../../platform/core.js';
import { supplierGuardFrom } from '../../platform/outbound-guard.js';
import type { Module } from '../../platform/module.js';
import { switchRoutes } from './routes.js';
import { createSwitchSubscriptions } from './subscriptions.js';
import { buildSwitchProviders, type SwitchProvidersDeps } from './providers/index.js';

/** What the Switch parts take from the modules built before it, one key per part. */
export interface SwitchDeps {
  providers: SwitchProvidersDeps;
}

/**
 * The carrier-side Switch (spec "Switch"): so far its plans and trials, which every Switch
 * operation needs, and the check of SMS delivery details before they are saved.
 */
export function buildSwitchModule(core: CoreDeps, deps: SwitchDeps) {
  const subscriptions = createSwitchSubscriptions(core);
  const guard = supplierGuardFrom(core.config, { ...(core.self ? { isSelf: core.self.isSelf } : {}) });
  const providers = buildSwitchProviders(core, { ...deps.providers, subscriptions, guard });
  const module: Module = {
    name: 'switch',
    routes: (app: App) => {
      switchRoutes(subscriptions, guard)(app);
      providers.routes(app);
    },
  };
  return { module, subscriptions };
}
