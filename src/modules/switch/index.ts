import type { CoreDeps } from '../../platform/core.js';
import { supplierGuardFrom } from '../../platform/outbound-guard.js';
import type { Module } from '../../platform/module.js';
import { switchRoutes } from './routes.js';
import { createSwitchSubscriptions } from './subscriptions.js';

/**
 * The carrier-side Switch (spec "Switch"): so far its plans and trials, which every Switch
 * operation needs, and the check of SMS delivery details before they are saved.
 */
export function buildSwitchModule(core: CoreDeps) {
  const subscriptions = createSwitchSubscriptions(core);
  const module: Module = {
    name: 'switch',
    routes: switchRoutes(
      subscriptions,
      supplierGuardFrom(core.config, { ...(core.self ? { isSelf: core.self.isSelf } : {}) }),
    ),
  };
  return { module, subscriptions };
}
export { buildSwitchDncModule } from './dnc/index.js';
