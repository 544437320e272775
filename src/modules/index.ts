import { createIdempotencyStore } from '../http/idempotency.js';
import type { CoreDeps } from '../platform/core.js';
import { createSelfAddresses } from '../platform/self-addresses.js';
import type { Module } from '../platform/module.js';
import { buildAccountProfileModule } from './account-profile/index.js';
import { buildAccountsModule } from './accounts/index.js';
import { buildTeamModule } from './team/index.js';
import { buildAccountLifecycleModule } from './account-lifecycle/index.js';
import { buildComplianceModule } from './compliance/index.js';
import { buildNotificationsModule } from './notifications/index.js';
import { buildOnboardingModule } from './onboarding/index.js';
import { buildSupportModule } from './support/index.js';
import { buildApplicationModule } from './application/index.js';
import { buildBillingModule, buildLedger } from './billing/index.js';
import { buildKeysModule } from './keys/index.js';
import { buildMarketplaceModule } from './marketplace/index.js';
import { buildPayoutsModule } from './payouts/index.js';
import { buildStatusModule } from './status/index.js';
import { buildSystemModule } from './system/index.js';
import { buildTopupsModule } from './topups/index.js';
import { buildWebhooksModule } from './webhooks/index.js';
import { buildCdrsModule } from './cdrs/index.js';
import { buildSipTrunksModule } from './sip-trunks/index.js';
import { buildApiCallsModule } from './api-calls/index.js';
import { buildSmsModule } from './sms/index.js';
import {
  buildSwitchCustomersModule,
  buildSwitchDncModule,
  buildSwitchModule,
  createSellRateDecks,
} from './switch/index.js';
import { buildVerifyModule } from './verify/index.js';
import { buildLookupModule } from './lookup/index.js';
import { buildRouteChecksModule } from './route-checks/index.js';
import { buildCliTestsModule } from './cli-tests/index.js';
import { buildNumbersModule, createNumberCalls } from './numbers/index.js';
import { buildRevenueShareModule } from './revenue-share/index.js';
import { buildNumberVoice } from './numbers/voice/index.js';
import { trunkIpPolicy } from './sip-trunks/routes.js';
import { parseNetworks, supplierGuardFrom } from '../platform/outbound-guard.js';
import { buildDncModule } from './dnc/index.js';
import { buildDialerModule } from './dialer/index.js';
import { buildAiAgentsModule } from './ai-agents/index.js';
import { buildInterconnectionsModule, buildPeeringTerms } from './interconnections/index.js';
import { buildConnectionsModule } from './connections/index.js';
import { createSipPlane } from '../platform/sip-plane.js';
import { createMailer } from '../platform/mailer.js';
import { createSharedMediaPool } from '../telephony/media/shared-pool.js';
import { createSharedAsteriskFarm } from '../telephony/asterisk/index.js';
import { createCounters } from '../platform/counters.js';
import { loadNodeId } from '../platform/node-id.js';

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
  // Account e-mail: the [mail] SMTP server, else .eml files under <state>/mail/.
  const mailer = await createMailer(core);
  const accountsModule = await buildAccountsModule(core, { mailer });
  const accounts = accountsModule.service;
  // Team members, invitations and member sessions (through the accounts service's logins).
  const team = buildTeamModule(core, { mailer, accounts });
  // Identity verification: number purchases and payouts ask `requireVerified` (KYC_REQUIRED).
  const compliance = buildComplianceModule(core, {
    parentOf: async (id) => (await accounts.getAccount(id))?.parentId ?? null,
  });
  const keysModule = buildKeysModule(core);
  const keys = keysModule.service;
  // Early: other modules emit events with `emit` from src/webhooks/emit.ts inside their transactions.
  const webhooks = buildWebhooksModule(core);
  // The SIP stack for trunk calls, API calls and endpoint probes; the calls module binds its ports at start.
  const sip = await createSipPlane(core);
  // Interconnection terms between accounts, which rating applies (the module itself is built below).
  const peeringTerms = buildPeeringTerms(core);
  // Listings, rate decks, purchases, Smart Routing; bulk SIP endpoint changes probe the endpoint once.
  // Live calls and calls per second per route, shared by the daemons through Redis: the SIP plane
  // takes them, the marketplace shows a seller its listings' use of them.
  const liveCounters = createCounters(core.redis, loadNodeId(core.config.paths.state), () =>
    core.clock.now().getTime(),
  );
  const marketplace = buildMarketplaceModule(core, {
    sipProbe: (target) => sip.probe(target, { timeoutMs: BULK_PROBE_TIMEOUT_MS }),
    peering: peeringTerms,
    counters: liveCounters,
  });
  const { purchases } = marketplace.services;
  // Bilateral terms between two accounts: found by the accounts service, priced by routing.
  const interconnections = buildInterconnectionsModule(core, {
    terms: peeringTerms,
    account: (id) => accounts.getAccount(id),
    candidatesFor: (q) => marketplace.services.routing.candidatesFor(q),
  });
  // The ledger and the modules over it; balance and sub-account events go to the webhooks outbox.
  const { ledger, events } = buildLedger(core);
  // Settlement and CDRs of calls and messages, GET /billing/cdrs: used by the Application Manager,
  // billing exports and the planes below.
  const cdrs = buildCdrsModule(core, { ledger });
  // Switch customers' sell-rate decks, read by the call and SMS planes, written by the Switch customers module.
  const sellRates = createSellRateDecks(core);
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
    // A payout needs verified identity (compliance records).
    kyc: compliance.service,
  });
  const accountProfile = buildAccountProfileModule(core);
  // The account as receipts, invoices and statements name it (its billing details when set).
  const billingIdentity = async (id: string) => {
    const a = await accounts.repo.byId(id);
    return accountProfile.service.identity(id, { email: a?.email ?? null, name: a?.label ?? null });
  };
  const topups = await buildTopupsModule(core, {
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
  // `[media] engine = "asterisk"`: one farm for API calls and anchored trunk media, connected on first use.
  const asterisk =
    core.config.media.engine === 'asterisk'
      ? createSharedAsteriskFarm(
          {
            ...core.config.asterisk,
            prompt_dir: core.config.asterisk.prompt_dir || `${core.config.paths.state}/asterisk-prompts`,
          },
          core.log,
        )
      : undefined;
  // SIP trunks in, supplier routes out.
  const calls = buildSipTrunksModule(core, {
    sellRates,
    accounts,
    ...money.services,
    ...marketplace.services,
    media,
    ...(asterisk ? { asterisk } : {}),
    sip,
    cdrs: cdrs.service,
    // A number's seller bringing in calls for the numbers it rented out: delivered where the renter points them.
    counters: liveCounters,
    numberCalls: createNumberCalls({
      sql: core.sql,
      platformFeePercent: core.config.numbers.platform_fee_percent,
      agentFeePerMinute: core.config.ai.agent_fee_per_minute,
      agentsAvailable: core.config.ai.chat_url !== '' && core.config.ai.stt_url !== '',
      portedInboundTrunk: core.config.numbers.ported_inbound_trunk,
    }),
    // Numbers the exchange answers itself: asked at call time, once every module is built.
    localAnswer: (kind, callGroupId, didId) => numberVoice.service.answering.localEndpoint(kind, callGroupId, didId),
    // A Switch customer's call to a number its Switch lists: asked at call time, once every module is built.
    dncRefuses: (q) => switchDnc.gate.refuses(q),
  });
  // AI voice agents over the [ai] providers; its chat model also serves the dialer assistant, and
  // its agents hold API and campaign calls named with an agent.
  const aiAgents = buildAiAgentsModule(core);
  // Calls placed through the API over the same SIP stack.
  const commsCalls = buildApiCallsModule(core, {
    agents: aiAgents.calls,
    accounts,
    ...money.services,
    ...marketplace.services,
    sip,
    admission: calls.service,
    callRecords: calls.service.records,
    cdrs: cdrs.service,
    extendLease: (a, k, sec) => idempotency.extendLease(a, k, sec),
    media,
    ...(asterisk ? { asterisk } : {}),
    // A Switch customer's API call: its sell-rate deck, and its operator's do-not-call list asked at call time.
    sellRates,
    dncRefuses: (q) => switchDnc.gate.refuses(q),
  });
  // SMS through the API, supplier SMPP binds per route, receipts.
  const sms = buildSmsModule(core, {
    sellRates,
    smppTls: core.tls ?? null,
    ledger: money.services.ledger,
    routing: marketplace.services.routing,
    application: money.services.application,
    cdrs: cdrs.service,
    // A message a handset sent to a rented number, over its seller's SMPP bind.
    onMobileOriginated: (routeId, mo) => numbers.service.inbound.fromSmsc(routeId, mo),
    // A Switch customer's message to a number its Switch lists: asked at send time, once every module is built.
    dncRefuses: (q) => switchDnc.gate.refuses(q),
  });
  // The account's connection points (trunk addresses, purchase SIP credentials, SMPP) and reachability tests.
  const connections = buildConnectionsModule(core, {
    trunkIps: (id) => calls.service.repo.listTrunkIps(id),
    trunkCredentials: (id) => calls.service.repo.listTrunkCredentials(id),
    smppAccounts: (id) => sms.smppCredentials.list(id),
    updateTrunkIp: (account, id, patch) => calls.service.points.updateIp(account, id, patch),
    updateTrunkCredentials: (account, id, patch) => calls.service.points.updateCredentials(account, id, patch),
    updateSmpp: (account, id, patch) => sms.smppCredentials.update(account, id, patch),
    load: (ids) => calls.service.points.load(ids),
    binds: () => sms.customerBinds(),
    probe: (target) => sip.probe(target, { timeoutMs: core.config.sip.options_timeout_ms }),
  });
  // Verify: codes over the SMS send path or a voice one-time-code call.
  const verify = await buildVerifyModule(core, { sms: sms.service, calls: commsCalls.service });
  // Number lookup: offline numbering, range and risk data with the caller's cheapest route prices.
  const lookup = buildLookupModule(core, { routing: marketplace.services.routing });
  // Do-not-call lists, checked by the dialer at dial time and by test SMS.
  const dnc = buildDncModule(core);
  // Route checks: short real calls over the API calls' engine, counted against the calls module's limits.
  const routeChecks = buildRouteChecksModule(core, {
    ledger: money.services.ledger,
    routes: marketplace.services.routes,
    purchases,
    calls: commsCalls.service,
    admission: calls.service,
    sms: sms.service,
    blends: marketplace.services.blends,
    application: money.services.application,
    dnc: dnc.service,
    // A Switch customer's check calls are billed at its sell rates.
    sellRates,
  });
  // Caller-ID tests on handsets: calls through the route checks' view of routes, observed on the SIP plane.
  const cliTests = buildCliTestsModule(core, {
    ledger: money.services.ledger,
    sip,
    routeChecks: routeChecks.service,
    calls: commsCalls.service,
    admission: calls.service,
    blends: marketplace.services.blends,
    application: money.services.application,
    checkResults: marketplace.services.routes,
  });
  // Switch plans and the Switch operations built so far.
  const switchModule = buildSwitchModule(core, {
    // Supplier trunks: portal invitations by e-mail, OPTIONS through the connections' reachability test.
    providers: { mailer, probe: (accountId, target) => connections.service.test(accountId, target) },
    // Switch customers are the operator's sub-accounts; invoices go out through the account mailer.
    invoicing: {
      mailer,
      customer: (operatorId, id) => money.services.application.get(operatorId, id),
      issuer: billingIdentity,
    },
  });
  const switchCustomers = buildSwitchCustomersModule(core, {
    subscriptions: switchModule.subscriptions,
    decks: sellRates,
    mailer,
  });
  // The Switch DNC: the account's do-not-call list honored for its customers' calls and messages.
  const switchDnc = buildSwitchDncModule(core, {
    dnc: dnc.service,
    application: money.services.application,
    subscriptions: switchModule.subscriptions,
  });
  // Campaigns over the API call plane and the SMS plane; numbers on the do-not-call list never dialled.
  const dialer = buildDialerModule(core, {
    accounts,
    application: money.services.application,
    ledger: money.services.ledger,
    routing: marketplace.services.routing,
    usableRoutesNow: (accountId, type) => purchases.usableRoutesNow(accountId, type),
    commsCalls: commsCalls.service,
    sms: sms.service,
    dnc: dnc.service,
    chat: aiAgents.chat,
    agents: aiAgents.calls,
    // A Switch customer's campaign: budgeted at its sell rates, screened against its operator's list.
    sellRates,
    operatorRefused: (q) => switchDnc.gate.refusedAmong(q),
  });
  // Phone numbers: catalogue, inventory, orders, renewals and routing of rented numbers.
  const numbers = buildNumbersModule(core, {
    ledger: money.services.ledger,
    accounts,
    // Catalogue groups that require identity ask the compliance records (KYC_REQUIRED).
    kyc: compliance.service,
    subAccountOf: async (operatorId, subAccountId) =>
      (await money.services.application.get(operatorId, subAccountId)).id,
    sipProbe: (target) => sip.probe(target, { timeoutMs: core.config.numbers.endpoint_probe_timeout_ms }),
    smsSend: (sender, input) => sms.service.send(sender, input),
    routeSecret: (routeId) => sms.service.httpSigningSecret(routeId),
    sellerSmsRoute: async (routeId, sellerId) => {
      const r = await marketplace.services.routes.visibleRoute(routeId, sellerId);
      return r?.sellerId === sellerId && r.type === 'sms';
    },
    payerMarkups: (accountId) => money.services.application.payerMarkups(accountId),
    // POST /dids/to-cli-set puts numbers into the dialer's caller-ID sets.
    cliSets: dialer.service.library,
    callUsage: (q) => cdrs.service.numberUsage(q),
    keepSellerBinds: async (sellerIds) => {
      const { routes } = marketplace.services;
      for (const sellerId of sellerIds) {
        const delivery = await routes.smsDeliveryFor(await routes.ownSmsRouteIds(sellerId));
        sms.service.keepBound([...delivery].map(([routeId, d]) => ({ routeId, delivery: d })));
      }
    },
  });
  // Revenue share numbers: calls to them are answered on the SIP plane (a request handler registered
  // here, before the trunk B2BUA's at its start) with the shared media pool, and credited to holders.
  const revenueShare = buildRevenueShareModule(core, {
    sip,
    media,
    sourceIps: trunkIpPolicy(
      parseNetworks(core.config.security.private_trunk_networks, 'security.private_trunk_networks'),
      (ip) => core.self?.isOwnAddress(ip) ?? false,
    ),
    accountExists: async (id) => (await accounts.getAccount(id)) !== null,
    cdrs: cdrs.service,
    guard: supplierGuardFrom(core.config, {
      ...(core.self ? { isSelf: core.self.isSelf } : {}),
      ...(core.lookup ? { lookup: core.lookup } : {}),
    }),
    // A number's `forward`: the holder's outbound call through the trunk B2BUA.
    forward: (...a) => calls.service.forward(...a),
  });
  // Voicemail and AI agents answering rented numbers: the trunk B2BUA dials this daemon's answering endpoint.
  const numberVoice = buildNumberVoice(core, {
    sip,
    media,
    manage: numbers.service.manage,
    agents: aiAgents.calls,
    transfer: (o) => commsCalls.service.transferCall(o),
    agentLeft: (callGroupId, at) => calls.service.agentLeft(callGroupId, at),
  });
  // Readiness of the planes the status page shows that register no probe of their own.
  core.health.register('media', async () => {
    const pool = media.running();
    if (!pool) return { ok: true, started: false };
    return { ok: (await pool.stats()).length > 0, started: true };
  });
  const status = buildStatusModule(core, { mailer });
  const system = buildSystemModule(core);
  const support = buildSupportModule(core);
  // The getting-started checklist asks each step's owner.
  const onboarding = buildOnboardingModule(core, {
    probes: {
      verify_email: async (id) => (await accountsModule.security.emailStatus(id).catch(() => null))?.verified ?? false,
      top_up: async (id) => (await money.services.billing.transactions(id, { type: 'topup' }, 1)).length > 0,
      buy_route: async (id) => (await purchases.list(id, { limit: 1 })).length > 0,
      create_api_key: async (id) => (await keys.list(id)).some((k) => k.revokedAt === null),
      first_traffic: async (id) => (await cdrs.service.listCdrs({ viewerId: id, limit: 1 })).length > 0,
    },
  });
  // The in-app feed, filled from the outbox events every module above emits.
  const notifications = buildNotificationsModule(core, { mailer });
  // Deletion, data export and devices of an account: ends what the account holds through each owner's service.
  const accountLifecycle = buildAccountLifecycleModule(core, {
    ledger: money.services.ledger,
    accounts,
    team: team.service,
    open: {
      liveCalls: (id) => calls.service.openCallCount(id),
      pendingPayout: (id) => payouts.service.hasPending(id),
      subAccounts: (id) => application.service.openSubAccountCount(id),
      numbers: async (id) =>
        (await numbers.service.manage.list(id, { status: 'active', limit: 1000 }))
          .concat(await numbers.service.manage.list(id, { status: 'suspended', limit: 1000 }))
          .map((d) => d.id),
      releaseNumber: (id, didId) => numbers.service.manage.release(id, didId),
      purchases: async (id) =>
        (await purchases.list(id, { status: 'active', limit: 1000 }))
          .concat(await purchases.list(id, { status: 'paused', limit: 1000 }))
          .map((p) => p.id),
      cancelPurchase: (id, purchaseId) => purchases.cancel(id, purchaseId),
    },
    sources: {
      account: {
        kind: 'object',
        read: async (id) => {
          const a = await accounts.getAccount(id);
          return a && { id: a.id, email: a.email, label: a.label, status: a.status, createdAt: a.createdAt };
        },
      },
      profile: {
        kind: 'object',
        read: async (id) => ({
          ...(await money.services.accountProfile.profile(id)),
          billingDetails: await money.services.accountProfile.billingDetails(id),
        }),
      },
      'team-members': { kind: 'object', read: (id) => team.service.members(id) },
      'api-keys': { kind: 'object', read: (id) => keys.list(id) },
      webhooks: { kind: 'object', read: (id) => webhooks.service.listEndpoints(id) },
      purchases: {
        kind: 'paged',
        read: (id, cursor, limit) => purchases.list(id, { ...(cursor ? { cursor } : {}), limit }),
      },
      transactions: {
        kind: 'paged',
        read: (id, cursor, limit) => money.services.billing.transactions(id, { cursor }, limit),
      },
      records: { kind: 'paged', read: (id, cursor, limit) => cdrs.service.listCdrs({ viewerId: id, cursor, limit }) },
      'audit-log': {
        kind: 'paged',
        read: (id, cursor, limit) => money.services.accountProfile.auditLog(id, cursor, limit),
      },
    },
  });

  const list: Module[] = [
    status.module,
    system.module,
    { name: 'mail', stop: () => mailer.close() },
    accountsModule.module,
    team.module,
    compliance.module,
    keysModule.module,
    webhooks.module,
    ...money.modules,
    ...marketplace.modules,
    interconnections.module,
    // Stopped after the modules below it (in reverse), which relay or play media through it.
    { name: 'media', stop: () => media.close() },
    ...(asterisk ? [{ name: 'asterisk', stop: () => asterisk.close() }] : []),
    cdrs.module,
    calls.module,
    commsCalls.module,
    sms.module,
    connections.module,
    verify.module,
    lookup.module,
    routeChecks.module,
    cliTests.module,
    switchModule.module,
    numbers.module,
    revenueShare.module,
    notifications.module,
    accountLifecycle.module,
    onboarding.module,
    support.module,
    dnc.module,
    // After the call and SMS planes, so it stops placing calls before they stop.
    dialer.module,
    aiAgents.module,
    numberVoice.module,
    switchCustomers.module,
    switchDnc.module,
  ];

  return {
    idempotency,
    services: {
      accounts,
      accountSecurity: accountsModule.security,
      compliance: compliance.service,
      notifications: notifications.service,
      status: status.service,
      system: system.service,
      onboarding: onboarding.service,
      support: support.service,
      mailer,
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
      verify: verify.service,
      lookup: lookup.service,
      switchSubscriptions: switchModule.subscriptions,
      switchInvoices: switchModule.invoices,
      numbers: numbers.service,
      revenueShare: revenueShare.service,
      dnc: dnc.service,
      dialer: dialer.service,
      aiAgents: aiAgents.service,
      interconnections: interconnections.service,
      team: team.service,
      accountLifecycle: accountLifecycle.service,
      numberVoice: numberVoice.service,
      interconnectionStatements: interconnections.statements,
      switchCustomers: switchCustomers.service,
      switchDnc: switchDnc.service,
    },
    list,
  };
}

export type Modules = Awaited<ReturnType<typeof buildModules>>;
export type Services = Modules['services'];
