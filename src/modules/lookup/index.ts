import type { CoreDeps } from '../../platform/core.js';
import type { Module } from '../../platform/module.js';
import type { Routing } from '../marketplace/routing/routing.js';
import { lookupRoutes } from './routes.js';
import { createLookupService } from './service.js';

/** Number lookup: numbering plan, range network, risk and the caller's cheapest prices, without a carrier query. */
export function buildLookupModule(core: CoreDeps, deps: { routing: Routing }) {
  const service = createLookupService({ routing: deps.routing, clock: core.clock });
  const module: Module = { name: 'lookup', routes: lookupRoutes(service) };
  return { module, service };
}
