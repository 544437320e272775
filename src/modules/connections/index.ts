import type { CoreDeps } from '../../platform/core.js';
import type { Module } from '../../platform/module.js';
import { supplierGuardFrom } from '../../platform/outbound-guard.js';
import { connectionsRoutes } from './routes.js';
import { createConnectionsService, type ConnectionsDeps } from './service.js';

/** The account's connection points gathered from their owners, and reachability tests (docs/interconnections.md). */
export function buildConnectionsModule(
  core: CoreDeps,
  deps: Omit<ConnectionsDeps, 'config' | 'guard' | 'sql' | 'clock'>,
) {
  // The one outbound guard, as for supplier targets: a customer's PBX is as customer-aimed as a supplier endpoint.
  const guard = supplierGuardFrom(core.config, {
    ...(core.self ? { isSelf: core.self.isSelf } : {}),
    ...(core.lookup ? { lookup: core.lookup } : {}),
  });
  const service = createConnectionsService({ ...deps, config: core.config, sql: core.sql, clock: core.clock, guard });
  const module: Module = { name: 'connections', routes: connectionsRoutes(service) };
  return { module, service };
}

export type { ConnectionsService } from './service.js';
