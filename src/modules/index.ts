import { createIdempotencyStore } from '../http/idempotency.js';
import type { CoreDeps } from '../platform/core.js';
import { createSelfAddresses } from '../platform/self-addresses.js';
import type { Module } from '../platform/module.js';
import { buildAccountProfileModule } from './account-profile/index.js';
import { buildAccountsModule } from './accounts/index.js';
import { buildApplicationModule } from './application/index.js';
import { buildBillingModule, buildLedger } from './billing/index.js';
import { buildKeysModule } from './keys/index.js';
import { buildMarketplaceModule } from './marketplace/index.js';
import { buildPayoutsModule } from './payouts/index.js';
import { buildStatusModule } from './status/index.js';
import { buildTopupsModule } from './topups/index.js';
import { buildWebhooksModule } from './webhooks/index.js';
import { buildCdrsModule } from './cdrs/index.js';
import { buildSipTrunksModule } from './sip-trunks/index.js';
import { buildApiCallsModule } from './api-calls/index.js';
import { buildSmsModule } from './sms/index.js';
import { buildSwitchModule } from './switch/index.js';
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
  // Settlement and CDRs of calls and messages, GET /billing/cdrs: used by the Application Manager,
  // billing exports and the planes below.
  const cdrs = buildCdrsModule(core, { ledger });
  const application = buildApplicationModule(core, {
    ledger,
    accounts,
    keys,
    events,
    // A sub-account needs an active route purchase or own active route; asked at request time.
    routeRequirement: async (operatorId) =>
      (await purchases.usableRoutesNow(operatorId, 'voice')).length > 0 ||
      (await purchases.usableRoutesNow(operatorId, 'sms')).length > 0,
    cdrs: { listCdrs: (f) => cdrs.service.listCdrs(f), dailyUsage: (...a) => cdrs.reports.dailyUsage(...a) },
  });
  const payouts = buildPayoutsModule(core, {
    ledger,
    // wired to compliance at merge
    kyc: { isVerified: async () => false },
  });
  const accountProfile = buildAccountProfileModule(core);
  // The account as receipts, invoices and statements name it (its billing details when set).
  const billingIdentity = async (id: string) => {
    const a = await accounts.repo.byId(id);
    return accountProfile.service.identity(id, { email: a?.email ?? null, name: a?.label ?? null });
  };
  const topups = buildTopupsModule(core, {
    ledger,
    identity: billingIdentity,
    email: async (id) => (await accounts.repo.byId(id))?.email ?? null,
  });
  const billing = buildBillingModule(core, {
    ledger,
    application: application.service,
    withdrawable: (id) => payouts.service.withdrawable(id),
    topups: topups.service.credited,
    cdrs: cdrs.service,
    holder: billingIdentity,
  });
  const money = {
    services: {
      ledger,
      billing: billing.service,
      topups: topups.service,
      application: application.service,
      payouts: payouts.service,
      accountProfile: accountProfile.service,
    },
    modules: [billing.module, topups.module, payouts.module, application.module, accountProfile.module],
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
      smppCredentials: sms.smppCredentials,
      switchSubscriptions: switchModule.subscriptions,
    },
    list,
  };
}

export type Modules = Awaited<ReturnType<typeof buildModules>>;
export type Services = Modules['services'];
