import type { Ledger, LedgerEventSink } from '../../ledger/ledger.js';
import type { CoreDeps } from '../../platform/core.js';
import type { Module } from '../../platform/module.js';
import type { AccountsService } from '../accounts/service.js';
import type { KeysService } from '../keys/service.js';
import type { CdrFilter, CdrReports, CdrRow } from '../cdrs/index.js';
import { createSubAccountLifecycle } from './lifecycle.js';
import { manageRoutes } from './manage-routes.js';
import { markupRoutes } from './markup-routes.js';
import { applicationRoutes } from './routes.js';
import { createApplicationService, type RouteRequirement } from './service.js';

/**
 * The Application Manager: sub-accounts, their credit and caps.
 * `routeRequirement`: the marketplace's "active purchase or own route" check for sub-accounts.
 */
export function buildApplicationModule(
  core: CoreDeps,
  deps: {
    ledger: Ledger;
    accounts: AccountsService;
    keys: KeysService;
    events: LedgerEventSink;
    routeRequirement?: RouteRequirement | null;
    /** Records and their daily usage, per sub-account. */
    cdrs: Pick<CdrReports, 'dailyUsage'> & { listCdrs(f: CdrFilter): Promise<CdrRow[]> };
  },
) {
  const service = createApplicationService({
    ...core,
    ledger: deps.ledger,
    accounts: deps.accounts,
    keys: deps.keys,
    events: deps.events,
    routeRequirement: deps.routeRequirement ?? null,
  });
  const lifecycle = createSubAccountLifecycle({
    ...core,
    ledger: deps.ledger,
    accounts: deps.accounts,
    keys: deps.keys,
    application: service,
    cdrs: deps.cdrs,
  });
  const module: Module = {
    name: 'application',
    routes: (app) => {
      applicationRoutes(service)(app);
      manageRoutes(lifecycle, async (operatorId) => {
        const s = await service.settings(operatorId);
        return { operatorId, brandName: s.brandName, brandColor: s.brandColor, brandLogoUrl: s.brandLogoUrl };
      })(app);
      markupRoutes(service.routeMarkups)(app);
    },
  };
  return { module, service: Object.assign(service, { lifecycle }) };
}
