import type { CoreDeps } from '../../platform/core.js';
import type { Module } from '../../platform/module.js';
import { supplierGuardFrom } from '../../platform/outbound-guard.js';
import type { Ledger } from '../../ledger/index.js';
import type { RoutesService } from '../marketplace/listings/service.js';
import type { PurchasesService } from '../marketplace/purchases/service.js';
import { createCheckLimiter } from './limiter.js';
import { routeChecksRoutes } from './routes.js';
import { createRouteChecksService, type RouteChecksDeps } from './service.js';

/**
 * Route checks (spec "Route checks"): check calls over the API calls' engine on the shared SIP
 * plane, the operator's test lines, per-account limits in Redis (no fallback: 503 when unreachable).
 */
export function buildRouteChecksModule(
  core: CoreDeps,
  deps: {
    ledger: Ledger;
    routes: RoutesService;
    purchases: PurchasesService;
    calls: RouteChecksDeps['calls'];
    admission: RouteChecksDeps['admission'];
    sms: RouteChecksDeps['sms'];
    blends: RouteChecksDeps['blends'];
    application: RouteChecksDeps['application'];
    dnc: RouteChecksDeps['dnc'];
    sellRates?: RouteChecksDeps['sellRates'];
  },
) {
  const service = createRouteChecksService({
    sql: core.sql,
    clock: core.clock,
    config: core.config,
    log: core.log.child({ module: 'route-checks' }),
    ...deps,
    // The same guard the call path applies to supplier endpoints.
    guard: supplierGuardFrom(core.config, {
      ...(core.self ? { isSelf: core.self.isSelf } : {}),
      ...(core.lookup ? { lookup: core.lookup } : {}),
    }),
    limiter: createCheckLimiter(core.redis),
  });
  const module: Module = {
    name: 'route-checks',
    routes: routeChecksRoutes(service),
    async start() {
      const n = await service.closeAbandoned();
      if (n > 0) core.log.warn({ legs: n }, 'route checks left running by a stopped daemon closed as inconclusive');
    },
    stop: () => service.stop(),
  };
  return { module, service };
}
