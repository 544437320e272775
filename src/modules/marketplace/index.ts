import type { CoreDeps } from '../../platform/core.js';
import { supplierGuardFrom } from '../../platform/outbound-guard.js';
import type { Module } from '../../platform/module.js';
import { marketsRoutes } from './markets/routes.js';
import { createMarketsService } from './markets/service.js';
import { purchasesRoutes } from './purchases/routes.js';
import { createPurchasesService } from './purchases/service.js';
import { createDeckCache } from './routing/deck-cache.js';
import { createCdrQualitySource } from './listings/quality.js';
import { createRoutingCache } from './routing/routing-cache.js';
import { routesRoutes } from './listings/routes.js';
import { createRouting } from './routing/routing.js';
import type { PeeringSource, QualitySource } from './routing/routing.js';
import { createRoutesService, type SipProbe } from './listings/service.js';
import { createListingLifecycle } from './listings/lifecycle.js';
import { lifecycleRoutes } from './listings/lifecycle-routes.js';
import { createListingChanges } from './listings/change-history.js';
import { listingChangeRoutes } from './listings/change-history-routes.js';
import { createLiveCapacity } from './listings/live-capacity.js';
import type { Counters } from '../../platform/counters.js';
import { createSellerTools } from './listings/seller-tools.js';
import { sellerToolRoutes } from './listings/seller-tools-routes.js';
import { createBlendCache } from './blends/blend-cache.js';
import { blendsRoutes } from './blends/routes.js';
import { createBlendsService } from './blends/service.js';
import { accessRoutes } from './access/routes.js';
import { messagesRoutes } from './messages/routes.js';
import { createSheetReads } from './rate-sheets/reads.js';
import { rateSheetRoutes } from './rate-sheets/routes.js';
import { createSheetTools } from './rate-sheets/tools.js';
import { sheetToolRoutes } from './rate-sheets/tools-routes.js';
import { reportsRoutes } from './reports/routes.js';
import { createReportsService } from './reports/service.js';
import { createMessagesService } from './messages/service.js';
import { createAccessService } from './access/service.js';
import { createPrivateRateCache } from './offers/private-rates.js';
import { offersRoutes } from './offers/routes.js';
import { createOffersService } from './offers/service.js';

export type {
  Candidate,
  CandidateQuery,
  PeeringSource,
  PeeringTerm,
  QualitySource,
  SipEndpoint,
} from './routing/routing.js';
export { createCdrQualitySource } from './listings/quality.js';

/**
 * The marketplace: listings and rate decks, purchases and routing order, Smart Routing.
 * `services.routing.candidatesFor` is what the call and SMS paths use. Purchases and markets are
 * built here, not from their own folders: routing needs the purchases service and both the routes
 * and the purchases HTTP routes need routing, so the three are one build step.
 */
export function buildMarketplaceModule(
  core: CoreDeps,
  opts: {
    quality?: QualitySource;
    sipProbe?: SipProbe;
    peering?: PeeringSource;
    /** The SIP plane's shared live-call and CPS counters, read for the seller's live capacity view. */
    counters?: Counters;
  } = {},
) {
  const decks = createDeckCache({
    sql: core.sql,
    clock: core.clock,
    log: core.log.child({ module: 'rate-decks' }),
    sliceMs: core.config.rate_sheets.slice_ms,
  });
  // Measured quality from the cdrs table unless the caller brings its own source.
  const cdrQuality = createCdrQualitySource({ sql: core.sql, clock: core.clock });
  const quality = opts.quality ?? cdrQuality.quality;
  const guard = supplierGuardFrom(core.config, {
    ...(core.self ? { isSelf: core.self.isSelf } : {}),
    ...(core.lookup ? { lookup: core.lookup } : {}),
  });
  const routingCache = createRoutingCache({ sql: core.sql, log: core.log.child({ module: 'routing-cache' }) });
  const routes = createRoutesService({ ...core, decks, quality, routingCache, guard, sipProbe: opts.sipProbe });
  const purchases = createPurchasesService({ ...core, routes, routingCache });
  const markets = createMarketsService({ clock: core.clock, routes, activity: cdrQuality.activity });
  const blendCache = createBlendCache({ sql: core.sql, log: core.log.child({ module: 'route-blends' }) });
  const privateRates = createPrivateRateCache({
    sql: core.sql,
    clock: core.clock,
    log: core.log.child({ module: 'private-rates' }),
  });
  const routing = createRouting({
    config: core.config,
    clock: core.clock,
    routes,
    purchases,
    quality,
    guard,
    blends: blendCache,
    privateRates,
    ...(opts.peering ? { peering: opts.peering } : {}),
  });
  const blends = createBlendsService({ ...core, routes, purchases, routing, cache: blendCache, routingCache });
  const offers = createOffersService({ ...core, routes, blends: blendCache, privateRates });
  let offerSweep: NodeJS.Timeout | undefined;
  const access = createAccessService({ ...core, routes, routingCache });
  const messages = createMessagesService({ ...core, routes });
  const reports = createReportsService({ ...core, routes, routingCache });
  const lifecycle = createListingLifecycle({ ...core, routes, routingCache });
  const modules: Module[] = [
    {
      name: 'marketplace',
      routes: routesRoutes(routes, routing),
      start: async () => {
        await routingCache.start();
        await blendCache.start();
        await privateRates.start();
        await decks.start();
        await routes.startSheetJobs();
      },
      stop: async () => {
        await routes.stopSheetJobs();
        await decks.stop();
        await privateRates.stop();
        await blendCache.stop();
        await routingCache.stop();
      },
    },
    { name: 'purchases', routes: purchasesRoutes(purchases, routing) },
    { name: 'markets', routes: marketsRoutes(markets) },
    { name: 'route-blends', routes: blendsRoutes(blends) },
    { name: 'route-access', routes: accessRoutes(access) },
    { name: 'route-messages', routes: messagesRoutes(messages) },
    { name: 'route-reports', routes: reportsRoutes(reports) },
    { name: 'listing-lifecycle', routes: lifecycleRoutes(lifecycle) },
    {
      name: 'listing-changes',
      routes: listingChangeRoutes(
        createListingChanges({ sql: core.sql, routes }),
        opts.counters ? createLiveCapacity({ ...core, counters: opts.counters }) : null,
      ),
    },
    {
      name: 'seller-tools',
      routes: sellerToolRoutes(createSellerTools({ ...core, routes, routingCache }), routes, lifecycle, core),
    },
    { name: 'rate-sheets', routes: rateSheetRoutes(routes, createSheetReads({ ...core, routes })) },
    {
      name: 'rate-sheet-tools',
      routes: sheetToolRoutes(routes, createSheetTools({ ...core, routes }), core.config.rate_sheets.async_rows),
    },
    {
      name: 'offers',
      routes: offersRoutes(offers),
      start: async () => {
        // Open offers past their time are expired (and both sides told) once a minute.
        offerSweep = setInterval(() => {
          offers.expireDue().catch((err: unknown) => core.log.error({ err }, 'offer expiry sweep failed'));
        }, 60_000);
        offerSweep.unref();
      },
      stop: async () => clearInterval(offerSweep),
    },
  ];
  return { modules, services: { routes, purchases, routing, markets, routingCache, blends, offers } };
}
