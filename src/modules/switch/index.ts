import type { CoreDeps } from '../../platform/core.js';
import { supplierGuardFrom } from '../../platform/outbound-guard.js';
import type { Module } from '../../platform/module.js';
import { switchRoutes } from './routes.js';
import { createSwitchSubscriptions } from './subscriptions.js';
import { buildSwitchInvoices, type SwitchInvoicingDeps } from './invoices/index.js';
import { attachSwitchRecords } from './records/index.js';

/**
 * The carrier-side Switch (spec "Switch"): so far its plans and trials, which every Switch
 * operation needs, and the check of SMS delivery details before they are saved.
 */
export function buildSwitchModule(core: CoreDeps, deps: { invoicing: SwitchInvoicingDeps }) {
  const subscriptions = createSwitchSubscriptions(core);
  const routes = switchRoutes(
    subscriptions,
    supplierGuardFrom(core.config, { ...(core.self ? { isSelf: core.self.isSelf } : {}) }),
  );
  const invoices = buildSwitchInvoices(core, subscriptions, deps.invoicing);
  const module: Module = {
    name: 'switch',
    routes: (app) => {
      routes(app);
      invoices.routes(app);
    },
  };
  attachSwitchRecords(module, core, subscriptions);
  return { module, subscriptions, invoices: invoices.service };
}
export { buildSwitchCustomersModule, createSellRateDecks, type SellRateDecks } from './customers/index.js';
