import type { CoreDeps } from '../../../platform/core.js';
import type { Mailer } from '../../../platform/mailer.js';
import type { SwitchSubscriptions } from '../subscriptions.js';
import { switchInvoiceRoutes } from './routes.js';
import { createSwitchInvoices, type SwitchCustomer } from './service.js';

/** What Switch invoicing needs from outside the Switch: the mailer, customers and the issuer's identity. */
export interface SwitchInvoicingDeps {
  mailer: Mailer;
  /** The operator's sub-account `id` (a NOT_FOUND AppError for any other). */
  customer(operatorId: string, id: string): Promise<SwitchCustomer>;
  issuer(operatorId: string): Promise<Record<string, unknown>>;
}

/** Switch invoicing: the service and its routes. */
export function buildSwitchInvoices(core: CoreDeps, subscriptions: SwitchSubscriptions, deps: SwitchInvoicingDeps) {
  const service = createSwitchInvoices({
    sql: core.sql,
    clock: core.clock,
    log: core.log.child({ module: 'switch-invoices' }),
    ...deps,
  });
  return { service, routes: switchInvoiceRoutes(service, subscriptions) };
}
