import type { Ledger } from '../../ledger/index.js';
import type { CoreDeps } from '../../platform/core.js';
import type { Module } from '../../platform/module.js';
import { cdrReportRoutes } from './report-routes.js';
import { createCdrReports } from './reports.js';
import { cdrsRoutes } from './routes.js';
export { cdrCsv } from './routes.js';
export type { CdrReports } from './reports.js';
export { countryOf } from './reports.js';
import { createCdrsService } from './service.js';

/**
 * Billing records: the settlement and CDRs every plane (trunk calls, API calls, SMS) writes in
 * its own transaction, and GET /billing/cdrs. Built before the planes that use it.
 */
export function buildCdrsModule(core: CoreDeps, deps: { ledger: Ledger }) {
  const service = createCdrsService({ sql: core.sql, ledger: deps.ledger });
  const reports = createCdrReports(core.sql);
  const reportRoutes = cdrReportRoutes(reports, core.clock);
  const module: Module = {
    name: 'cdrs',
    routes: (app) => {
      cdrsRoutes(service)(app);
      reportRoutes(app);
    },
  };
  return { module, service, reports };
}

export {
  agreementOf,
  buildCdr,
  voiceBilled,
  type Agreement,
  type CdrBilled,
  type CdrLeg,
  type CdrsService,
  type Settled,
  type Settlement,
  type SettleCharge,
} from './service.js';
export type { CdrInsert, CdrRow, CdrFilter, NumberUsageMonth, RouteTerms } from './repo.js';
export {
  affordableSeconds,
  chargeLeg,
  holdFor,
  NO_MARKUP,
  routeMarkup,
  withMarkup,
  type LegCharge,
  type MarkupTerms,
  type PricedRoute,
  type SellPrice,
} from './call-charge.js';
export { chargeMarkup, markupOn, markupPctOn, type MarkupCharge, type PayerMarkups } from './markup.js';
