import type { Ledger, LedgerEventSink } from '../../ledger/ledger.js';
import type { CoreDeps } from '../../platform/core.js';
import type { Module } from '../../platform/module.js';
import type { AccountsService } from '../accounts/service.js';
import type { KeysService } from '../keys/service.js';
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
  const module: Module = { name: 'application', routes: applicationRoutes(service) };
  return { module, service };
}
