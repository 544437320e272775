import type { ApiModule } from '../http/app.js';
import { createIdempotencyStore } from '../http/idempotency.js';
import type { CoreDeps } from '../platform/core.js';
import { createSelfAddresses } from '../platform/self-addresses.js';
import type { TlsMaterial } from '../http/tls.js';
import { accountsRoutes } from './accounts/routes.js';
import { buildMoneyModules } from './billing/module.js';
import { buildMarketplaceModules } from './routes/index.js';
import { createAccountsService } from './accounts/service.js';
import { loadSigningSecret } from './accounts/signing-secret.js';
import { keysRoutes } from './keys/routes.js';
import { createKeysService } from './keys/service.js';
import { statusRoutes } from './status/routes.js';
import { buildWebhooksModule } from './webhooks/index.js';
import { buildCdrsModule } from './cdrs/index.js';
import { buildCallsModule } from './calls/index.js';
import { buildCommsCallsModule } from './comms-calls/index.js';
import { buildSmsModule } from './sms/index.js';
import { buildSwitchModule } from './switch/index.js';
import { probeEndpoint } from '../telephony/sip/index.js';
import { createSharedMediaPool } from '../telephony/media/shared-pool.js';

// As the calls module's route test and health probes: a silent endpoint costs the seller 2 s.
const BULK_PROBE_TIMEOUT_MS = 2000;

/** A built module: its routes, and background work started and stopped by main.ts. */
export interface Module extends ApiModule {
  name: string;
  start?(): Promise<void> | void;
  stop?(): Promise<void> | void;
  /** Ports a listener of the module bound (known after start). */
  ports?(): Record<string, number>;
  /** Takes new TLS material and re-reads the module's own files (SIGHUP); live work is kept. */
  reload?(tls: TlsMaterial | null): Promise<void> | void;
}

/**
 * The composition root of the domain modules, in dependency order. Each module is built from
 * the core dependencies and the services of modules built before it.
 */
export async function buildModules(coreIn: CoreDeps) {
  const core: CoreDeps = { ...coreIn, self: coreIn.self ?? createSelfAddresses(coreIn.config) };
  const signingSecret = await loadSigningSecret(core.sql, core.config.auth.jwt_secret);
  // Built here so long-running handlers (synchronous calls) can extend their key's lease.
  const idempotency = createIdempotencyStore({
    sql: core.sql,
    clock: core.clock,
    leaseSeconds: core.config.limits.idempotency_lease_seconds,
    ttlHours: core.config.limits.idempotency_ttl_hours,
  });
  const accounts = createAccountsService({ ...core, signingSecret });
  const keys = createKeysService(core);
  // Early: other modules emit events with `emit` from src/webhooks/emit.ts inside their transactions.
  const webhooks = buildWebhooksModule(core);
  // Ledger, billing, top-ups, Application Manager; events go to the webhooks outbox.
  const money = buildMoneyModules(core, {
    accounts,
    keys,
    // A sub-account needs an active route purchase or own active route; asked at request time.
    routeRequirement: async (operatorId) =>
      (await marketplace.services.purchases.usableRoutesNow(operatorId, 'voice')).length > 0 ||
      (await marketplace.services.purchases.usableRoutesNow(operatorId, 'sms')).length > 0,
  });
  // Listings, rate decks, purchases, Smart Routing.
  const marketplace = buildMarketplaceModules(core);
  // One RTP port range and its workers for API calls and relayed trunk media, started on first use.
  const { rtp } = core.config;
  const media = createSharedMediaPool({
    workers: rtp.workers, portMin: rtp.port_min, portMax: rtp.port_max, bindAddress: rtp.bind_address,
    ...(rtp.advertise_address ? { advertiseAddress: rtp.advertise_address } : {}),
    rtpTimeoutMs: rtp.timeout_ms, log: core.log.child({ plane: 'media' }),
  });
  // Settlement and CDRs of calls and messages, GET /billing/cdrs: used by the three planes below.
  const cdrs = buildCdrsModule(core, { ledger: money.services.ledger });
  // SIP trunks in, supplier routes out.
  const calls = buildCallsModule(core, { accounts, ...money.services, ...marketplace.services, media, cdrs: cdrs.service });
  // Bulk SIP endpoint changes probe the endpoint once, over the calls module's stack.
  marketplace.services.routes.useSipProbe((target) => {
    const stack = calls.getStack();
    return stack === null ? null : probeEndpoint(stack, target, { timeoutMs: BULK_PROBE_TIMEOUT_MS });
  });
  // Calls placed through the API over the calls module's SIP stack.
  const commsCalls = buildCommsCallsModule(core, { accounts, ...money.services, ...marketplace.services, getStack: calls.getStack, getLoopMarker: calls.getLoopMarker, admission: calls.service, callRecords: calls.service.records, cdrs: cdrs.service, extendLease: (a, k, sec) => idempotency.extendLease(a, k, sec), media });
  // SMS through the API, supplier SMPP binds per route, receipts.
  const sms = buildSmsModule(core, { smppTls: core.tls ?? null, ledger: money.services.ledger, routing: marketplace.services.routing, application: money.services.application, cdrs: cdrs.service });
  // Switch plans and the Switch operations built so far.
  const switchModule = buildSwitchModule(core);
  let usageTimer: NodeJS.Timeout | undefined;

  const list: Module[] = [
    { name: 'status', routes: statusRoutes(core.health, core.clock.now()) },
    { name: 'accounts', routes: accountsRoutes(accounts, core.config.auth.login_attempts_per_minute) },
    {
      name: 'keys',
      routes: keysRoutes(keys),
      start() {
        usageTimer = setInterval(() => void keys.flushUsage().catch((err) => core.log.warn({ err }, 'api usage flush failed')), 5000);
        usageTimer.unref();
      },
      async stop() {
        clearInterval(usageTimer);
        await keys.flushUsage();
      },
    },
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

  return { idempotency, services: { accounts, keys, webhooks: webhooks.service, webhookWorker: webhooks.worker, ...money.services, ...marketplace.services, cdrs: cdrs.service, calls: calls.service, commsCalls: commsCalls.service, sms: sms.service, smppCredentials: sms.smppCredentials, switchSubscriptions: switchModule.subscriptions }, list };
}

export type Modules = Awaited<ReturnType<typeof buildModules>>;
export type Services = Modules['services'];
