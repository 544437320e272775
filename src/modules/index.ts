import { createIdempotencyStore } from '../http/idempotency.js';
import type { CoreDeps } from '../platform/core.js';
import { createSelfAddresses } from '../platform/self-addresses.js';
import type { Module } from '../platform/module.js';
import { buildAccountsModule } from './accounts/index.js';
import { buildApplicationModule } from './application/index.js';
import { buildBillingModule, buildLedger } from './billing/index.js';
import { buildKeysModule } from './keys/index.js';
import { buildMarketplaceModule } from './marketplace/index.js';
import { buildStatusModule } from './status/index.js';
import { buildTopupsModule } from './topups/index.js';
import { buildWebhooksModule } from './webhooks/index.js';
import { buildCdrsModule } from './cdrs/index.js';
import { buildSipTrunksModule } from './sip-trunks/index.js';
import { buildApiCallsModule } from './api-calls/index.js';
import { buildSmsModule } from './sms/index.js';
import { buildSwitchModule } from './switch/index.js';
import { buildRouteChecksModule } from './route-checks/index.js';
import { buildCliTestsModule } from './cli-tests/index.js';
import { createSipPlane } from '../platform/sip-plane.js';
import { createSharedMediaPool } from '../telephony/media/shared-pool.js';

// As the calls module's route test and health probes: a silent endpoint costs the seller 2 s.
const BULK_PROBE_TIMEOUT_MS = 2000;

/**
 * The composition root of the domain modules, in dependency order. Each module is built from
 * the core dependencies and the services of modules built before it, every dependency passed at
 * construction. Modules import their `Module` type from src/platform/module.ts, never this file.
 */
export async function buildModules(coreIn: CoreDeps) {
  const core: CoreDeps = { ...coreIn, self: coreIn.self ?? createSelfAddresses(coreIn.config) };
  // Built here so long-running handlers (synchronous calls) can extend their key's lease.
  const idempotency = createIdempotencyStore({
    sql: core.sql,
    clock: core.clock,
    leaseSeconds: core.config.limits.idempotency_lease_seconds,
    ttlHours: core.config.limits.idempotency_ttl_hours,
  });
  const accountsModule = await buildAccountsModule(core);
  const accounts = accountsModule.service;
  const keysModule = buildKeysModule(core);
  const keys = keysModule.service;
  // Early: other modules emit events with `emit` from src/webhooks/emit.ts inside their transactions.
  const webhooks = buildWebhooksModule(core);
  // The SIP stack for trunk calls, API calls and endpoint probes; the calls module binds its ports at start.
  const sip = await createSipPlane(core);
  // Listings, rate decks, purchases, Smart Routing; bulk SIP endpoint changes probe the endpoint once.
  const marketplace = buildMarketplaceModule(core, {
    sipProbe: (target) => sip.probe(target, { timeoutMs: BULK_PROBE_TIMEOUT_MS }),
  });
  const { purchases } = marketplace.services;
  // The ledger and the modules over it; balance and sub-account events go to the webhooks outbox.
  const { ledger, events } = buildLedger(core);
  const application = buildApplicationModule(core, {
    ledger,
    accounts,
    keys,
    events,
    // A sub-account needs an active route purchase or own active route; asked at request time.
    routeRequirement: async (operatorId) =>
      (await purchases.usableRoutesNow(operatorId, 'voice')).length > 0 ||
      (await purchases.usableRoutesNow(operatorId, 'sms')).length > 0,
  });
  const billing = buildBillingModule(core, { ledger, application: application.service });
  const topups = buildTopupsModule(core, { ledger });
  const money = {
    services: { ledger, billing: billing.service, topups: topups.service, application: application.service },
    modules: [billing.module, topups.module, application.module],
  };
  // One RTP port range and its workers for API calls and relayed trunk media, started on first use.
  const { rtp } = core.config;
  const media = createSharedMediaPool({
    workers: rtp.workers,
    portMin: rtp.port_min,
    portMax: rtp.port_max,
    bindAddress: rtp.bind_address,
    ...(rtp.advertise_address ? { advertiseAddress: rtp.advertise_address } : {}),
    rtpTimeoutMs: rtp.timeout_ms,
    log: core.log.child({ plane: 'media' }),
  });
  // Settlement and CDRs of calls and messages, GET /billing/cdrs: used by the three planes below.
  const cdrs = buildCdrsModule(core, { ledger: money.services.ledger });
  // SIP trunks in, supplier routes out.
  const calls = buildSipTrunksModule(core, {
    accounts,
    ...money.services,
    ...marketplace.services,
    media,
    sip,
    cdrs: cdrs.service,
  });
  // Calls placed through the API over the same SIP stack.
  const commsCalls = buildApiCallsModule(core, {
    accounts,
    ...money.services,
    ...marketplace.services,
    sip,
    admission: calls.service,
    callRecords: calls.service.records,
    cdrs: cdrs.service,
    extendLease: (a, k, sec) => idempotency.extendLease(a, k, sec),
    media,
  });
  // SMS through the API, supplier SMPP binds per route, receipts.
  const sms = buildSmsModule(core, {
    smppTls: core.tls ?? null,
    ledger: money.services.ledger,
    routing: marketplace.services.routing,
    application: money.services.application,
    cdrs: cdrs.service,
  });
  // Route checks: short real calls over the API calls' engine, counted against the calls module's limits.
  const routeChecks = buildRouteChecksModule(core, {
    ledger: money.services.ledger,
    routes: marketplace.services.routes,
    purchases,
    calls: commsCalls.service,
    admission: calls.service,
    sms: sms.service,
  });
  // Caller-ID tests on handsets: calls through the route checks' view of routes, observed on the SIP plane.
  const cliTests = buildCliTestsModule(core, {
    ledger: money.services.ledger,
    sip,
    routeChecks: routeChecks.service,
    calls: commsCalls.service,
    admission: calls.service,
  });
  // Switch plans and the Switch operations built so far.
  const switchModule = buildSwitchModule(core);
  const status = buildStatusModule(core);

  const list: Module[] = [
    status.module,
    accountsModule.module,
    keysModule.module,
    webhooks.module,
    ...money.modules,
    ...marketplace.modules,
    // Stopped after the modules below it (in reverse), which relay or play media through it.
    { name: 'media', stop: () => media.close() },
    cdrs.module,
    calls.module,
    commsCalls.module,
    sms.module,
    routeChecks.module,
    cliTests.module,
    switchModule.module,
  ];

  return {
    idempotency,
    services: {
      accounts,
      keys,
      webhooks: webhooks.service,
      webhookWorker: webhooks.worker,
      ...money.services,
      ...marketplace.services,
      cdrs: cdrs.service,
      calls: calls.service,
      commsCalls: commsCalls.service,
      sms: sms.service,
      routeChecks: routeChecks.service,
      cliTests: cliTests.service,
      smppCredentials: sms.smppCredentials,
      switchSubscriptions: switchModule.subscriptions,
    },
    list,
  };
}

export type Modules = Awaited<ReturnType<typeof buildModules>>;
export type Services = Modules['services'];
