import type { App } from '../../http/app.js';
import type { CoreDeps } from '../../platform/core.js';
import { supplierGuardFrom } from '../../platform/outbound-guard.js';
import type { Module } from '../../platform/module.js';
import { buildSwitchInvoices, type SwitchInvoicingDeps } from './invoices/index.js';
import { buildSwitchProviders, type SwitchProvidersDeps } from './providers/index.js';
import { attachSwitchRecords } from './records/index.js';
import { switchRoutes } from './routes.js';
import { createSwitchSubscriptions } from './subscriptions.js';

/** What the Switch parts take from the modules built before it, one key per part. */
export interface SwitchDeps {
  providers: SwitchProvidersDeps;
  invoicing: SwitchInvoicingDeps;
}

/**
 * The carrier-side Switch (spec "Switch", `docs/switch.md`): its plans and trials, which every
 * Switch operation needs; providers and supplier trunks; call records and analytics; invoicing.
 * Customers and their sell-rate decks are a module of their own (`customers/`), built where the
 * call and SMS planes can price with the decks.
 */
export function buildSwitchModule(core: CoreDeps, deps: SwitchDeps) {
  const subscriptions = createSwitchSubscriptions(core);
  const guard = supplierGuardFrom(core.config, { ...(core.self ? { isSelf: core.self.isSelf } : {}) });
  const providers = buildSwitchProviders(core, { ...deps.providers, subscriptions, guard });
  const invoices = buildSwitchInvoices(core, subscriptions, deps.invoicing);
  const module: Module = {
    name: 'switch',
    routes: (app: App) => {
      switchRoutes(subscriptions, guard)(app);
      providers.routes(app);
      invoices.routes(app);
    },
  };
  attachSwitchRecords(module, core, subscriptions);
  return { module, subscriptions, invoices: invoices.service };
}
export { buildSwitchCustomersModule, createSellRateDecks, type SellRateDecks } from './customers/index.js';
export { buildSwitchDncModule } from './dnc/index.js';
