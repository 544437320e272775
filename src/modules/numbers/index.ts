import { readFileSync } from 'node:fs';
import type { Ledger } from '../../ledger/ledger.js';
import type { CoreDeps } from '../../platform/core.js';
import type { Module } from '../../platform/module.js';
import { supplierGuardFrom } from '../../platform/outbound-guard.js';
import { every } from '../../platform/periodic.js';
import type { AccountsService } from '../accounts/service.js';
import { createCatalog } from './catalog.js';
import { createInboundSms, type PayerMarkupsOf, type SellerSmsRoute } from './inbound-sms.js';

export { createNumberCalls } from './inbound-calls.js';
import { createInventory } from './inventory.js';
import { createListingRequests } from './listing.js';
import { createNumberMessages, type SmsSend } from './messages.js';
import { createNumberManagement, type CallUsage, type SipProbe } from './manage.js';
import { createOrders, type KycCheck, type SubAccountOf } from './orders.js';
import { createNumberSettings } from './number-settings.js';
import { createPortIns } from './port-ins.js';
import { createProvisioning } from './provisioning.js';
import { createRenewals } from './renewals.js';
import { createReservations } from './reservations.js';
import { didRoutes, type CliSets } from './routes-dids.js';
import { inboundRoutes, type RouteSecret } from './routes-inbound.js';
import { inventoryRoutes } from './routes-inventory.js';
import { messageRoutes } from './routes-messages.js';
import { portInRoutes } from './routes-port-ins.js';
import { settingsRoutes } from './routes-settings.js';
import { storeRoutes } from './routes-store.js';
import { createTelnyxProvider } from './telnyx-provisioning.js';

/** How often the SMPP binds of sellers with rented numbers are checked open (a new seller's, a changed route's). */
const SELLER_BINDS_MS = 60_000;

/**
 * Phone numbers (issue 22): the catalogue and sellers' inventory, listing requests, buying,
 * provisioning, the renewal job, routing and the number reads. `kyc` answers whether an owner's
 * identity is verified (Compliance); `subAccountOf` resolves a caller's sub-account (Application
 * Manager); `sipProbe` sends the OPTIONS of endpoint checks over the SIP plane; `smsSend` is the SMS
 * send path that messages from a number go through; `routeSecret` and `sellerSmsRoute` authenticate a
 * seller's inbound SMS callback by its SMS route.
 */
export function buildNumbersModule(
  core: CoreDeps,
  deps: {
    ledger: Ledger;
    accounts: AccountsService;
    kyc: KycCheck;
    subAccountOf: SubAccountOf;
    sipProbe: SipProbe;
    smsSend: SmsSend;
    routeSecret: RouteSecret;
    sellerSmsRoute: SellerSmsRoute;
    /** A sub-account renter's reseller markups (Application Manager): priced on its received messages. */
    payerMarkups: PayerMarkupsOf;
    cliSets: CliSets;
    /** Monthly figures of calls on numbers, from CDRs (the cdrs module's service). */
    callUsage: CallUsage;
    /** Opens (keeps) the SMPP binds of these sellers' SMS routes: their SMSCs deliver messages to rented numbers over them. */
    keepSellerBinds?: (sellerIds: string[]) => Promise<void>;
  },
) {
  const { sql, clock, config } = core;
  const log = core.log.child({ module: 'numbers' });
  const settings = config.numbers;
  const store = { enabled: settings.store_enabled, message: settings.store_disabled_message };
  const catalog = createCatalog({ sql, clock, log });
  const inventory = createInventory({ sql, clock, log });
  const listing = createListingRequests({ sql, clock, log, accounts: deps.accounts });
  const orders = createOrders({
    sql,
    clock,
    log,
    ledger: deps.ledger,
    kyc: deps.kyc,
    subAccountOf: deps.subAccountOf,
    platformFeePercent: settings.platform_fee_percent,
  });
  const renewals = createRenewals({
    sql,
    clock,
    log,
    ledger: deps.ledger,
    platformFeePercent: settings.platform_fee_percent,
    portedMonthlyFee: settings.ported_monthly_fee,
  });
  const guard = supplierGuardFrom(config, {
    ...(core.self ? { isSelf: core.self.isSelf } : {}),
    ...(core.lookup ? { lookup: core.lookup } : {}),
  });
  const manage = createNumberManagement({
    sql,
    clock,
    log,
    guard,
    sipProbe: deps.sipProbe,
    probeTimeoutMs: settings.endpoint_probe_timeout_ms,
    callUsage: deps.callUsage,
  });

  const messages = createNumberMessages({ sql, clock, log, manage, smsSend: deps.smsSend });
  const inbound = createInboundSms({
    sql,
    clock,
    log,
    ledger: deps.ledger,
    sellerSmsRoute: deps.sellerSmsRoute,
    payerMarkups: deps.payerMarkups,
    platformFeePercent: settings.platform_fee_percent,
    dedupWindowSeconds: settings.mo_dedup_window_seconds,
    portedInboundTrunk: settings.ported_inbound_trunk,
  });

  const reservations = createReservations({
    sql,
    clock,
    log,
    orders,
    maxMinutes: settings.reservation_max_minutes,
    perAccount: settings.reservations_per_account,
  });
  // CNAM and emergency addresses go to the configured provider (Telnyx v2 protocol) through the outbound guard.
  const provisioning = createProvisioning({
    sql,
    clock,
    log,
    intervalSeconds: settings.provisioning_interval_seconds,
    provider: settings.provisioning_url
      ? createTelnyxProvider({
          url: settings.provisioning_url,
          apiKey: settings.provisioning_api_key,
          guard,
          ...(settings.provisioning_ca_file ? { ca: readFileSync(settings.provisioning_ca_file) } : {}),
          timeoutMs: settings.provisioning_timeout_ms,
          log,
        })
      : null,
  });
  const numberSettings = createNumberSettings({
    sql,
    clock,
    log,
    manage,
    provisioning,
    portedInboundTrunk: settings.ported_inbound_trunk,
  });
  const portIns = createPortIns({
    sql,
    clock,
    log,
    ported: { monthlyFee: settings.ported_monthly_fee, graceDays: settings.ported_grace_days },
  });

  /** Expired holds back on sale, scheduled releases carried out, old SMPP re-send keys forgotten. */
  const sweep = async () => {
    await reservations.expire();
    await numberSettings.releaseDue();
    await inbound.forgetOldResends();
  };

  /** Opens the SMPP binds of the sellers whose numbers are rented (run every minute, and at start). */
  const keepSellerBinds = async () => {
    if (deps.keepSellerBinds) await deps.keepSellerBinds(await inbound.sellersWithNumbers());
  };

  const loops: { stop(): Promise<void> }[] = [];
  const guarded = (what: string, fn: () => Promise<unknown>) => async () => {
    try {
      await fn();
    } catch (err) {
      log.error({ err }, `${what} failed`);
    }
  };
  const refreshSummary = guarded('number catalogue summary', () => catalog.refreshSummary());

  const module: Module = {
    name: 'numbers',
    routes: (app) => {
      storeRoutes({ catalog, listing, store })(app);
      didRoutes({ orders, manage, store, cliSets: deps.cliSets })(app);
      inventoryRoutes({ inventory, listing })(app);
      messageRoutes(messages)(app);
      settingsRoutes({ reservations, settings: numberSettings })(app);
      portInRoutes(portIns)(app);
      inboundRoutes({
        inbound,
        routeSecret: deps.routeSecret,
        clock,
        toleranceSec: config.sms.receipt_callback_tolerance_seconds,
      })(app);
    },
    start() {
      // The first summary waits for the start to settle (`ready: false` until then), then is kept fresh.
      const first = setTimeout(() => void refreshSummary(), settings.summary_first_delay_seconds * 1000);
      first.unref();
      loops.push(
        { stop: async () => clearTimeout(first) },
        every(settings.summary_refresh_seconds * 1000, refreshSummary),
        every(
          settings.renewal_interval_seconds * 1000,
          guarded('number renewals', () => renewals.run()),
        ),
        every(settings.release_sweep_seconds * 1000, guarded('number holds and scheduled releases', sweep)),
        every(
          settings.provision_interval_seconds * 1000,
          guarded('number provisioning', () => orders.provisionPending()),
        ),
      );
      if (provisioning.configured) {
        const sendProvisioning = guarded('number CNAM and emergency provisioning', async () => {
          await provisioning.queueUnsent();
          await provisioning.run();
        });
        loops.push(every(settings.provisioning_interval_seconds * 1000, sendProvisioning));
      }
      if (deps.keepSellerBinds) {
        const bindSellers = guarded('number seller binds', keepSellerBinds);
        void bindSellers();
        loops.push(every(SELLER_BINDS_MS, bindSellers));
      }
    },
    async stop() {
      await Promise.all(loops.splice(0).map((l) => l.stop()));
      await orders.settled();
    },
  };
  const service = {
    catalog,
    inventory,
    listing,
    orders,
    renewals,
    manage,
    messages,
    inbound,
    keepSellerBinds,
    reservations,
    settings: numberSettings,
    sweep,
    portIns,
    provisioning,
  };
  return { module, service };
}

export type NumbersService = ReturnType<typeof buildNumbersModule>['service'];
