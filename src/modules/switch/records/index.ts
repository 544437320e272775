import type { CoreDeps } from '../../../platform/core.js';
import type { Module } from '../../../platform/module.js';
import type { SwitchSubscriptions } from '../subscriptions.js';
import { switchRecordRoutes } from './routes.js';
import { createSwitchRecords } from './service.js';

/**
 * Call records and analytics of the Switch (spec "Switch"): adds their routes to the Switch
 * module, and waits for exports in flight when it stops.
 */
export function attachSwitchRecords(module: Module, core: CoreDeps, subscriptions: SwitchSubscriptions) {
  const records = createSwitchRecords({
    sql: core.sql,
    clock: core.clock,
    log: core.log.child({ module: 'switch-records' }),
    stateDir: core.config.paths.state,
  });
  const routes = module.routes;
  const stop = module.stop;
  module.routes = (app) => {
    routes?.(app);
    switchRecordRoutes(records, subscriptions)(app);
  };
  module.stop = async () => {
    await stop?.();
    await records.stop();
  };
  return records;
}
