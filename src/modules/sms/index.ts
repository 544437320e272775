import { readFileSync } from 'node:fs';
import type { Config } from '../../config/schema.js';
import type { Ledger } from '../../ledger/index.js';
import { bindSlotKey, countedSlots, type SmppServer } from '../../messaging/index.js';
import type { CoreDeps } from '../../platform/core.js';
import { connectionCaps } from '../../platform/fd-budget.js';
import { supplierGuardFrom } from '../../platform/outbound-guard.js';
import type { ApplicationService } from '../application/service.js';
import type { CdrsService } from '../cdrs/index.js';
import type { Module } from '../../platform/module.js';
import type { Routing } from '../marketplace/routing/routing.js';
import { smppCredentialRoutes } from './smpp-routes.js';
import { smsReceiptRoutes } from './receipt-routes.js';
import { smsRoutes } from './routes.js';
import { createSmsService, type SmsDeps, type SmsOptions, type SupplierGateway } from './service.js';
import { createCustomerSmpp, createSmppCredentials } from './smpp-in.js';
import { createCacheListener } from '../../db/cache-listener.js';
import { createCounters } from '../../platform/counters.js';
import { loadNodeId } from '../../platform/node-id.js';

/** NOTIFY channel of migration 264: an SMPP credential's state or throughput changed (payload: system_id). */
const SMPP_ACCOUNTS_CHANNEL = 'svc_smpp_accounts';
/** How often this daemon rewrites its share of the open-bind counts (well inside the counters' 90 s heartbeat). */
const BIND_RECONCILE_MS = 30_000;

/** The service's settings from `[sms]` (config/default.toml explains each). */
export function optionsFrom(config: Readonly<Config>): SmsOptions {
  const c = config.sms;
  const port = config.http.port === 443 ? '' : `:${config.http.port}`;
  return {
    receiptTtlMs: c.receipt_expiry_hours * 3_600_000,
    maxRoutes: c.failover_routes,
    bind: {
      tps: c.bind_tps,
      windowSize: c.bind_window_size,
      responseTimeoutMs: c.pdu_response_timeout_ms,
      enquireLinkMs: c.enquire_link_interval_ms,
      reconnectMinMs: c.bind_backoff_min_ms,
      reconnectMaxMs: Math.max(c.bind_backoff_min_ms, c.bind_backoff_max_ms),
      queueTimeoutMs: c.bind_queue_timeout_ms,
    },
    http: {
      timeoutMs: c.https_delivery_timeout_ms,
      callbackBase: c.receipt_callback_base_url || `https://${config.http.public_hostname}${port}/api/v1`,
      ...(c.https_delivery_ca_file ? { ca: readFileSync(c.https_delivery_ca_file) } : {}),
    },
  };
}

/**
 * SMS: POST/GET /comms/sms and bulk, receipts from supplier SMPP binds kept per route,
 * a sweep that expires overdue receipts, and the customer SMPP server on `[smpp]` (plain port;
 * the TLS port needs `smppTls`, key and certificate, from the daemon).
 */
export function buildSmsModule(
  core: CoreDeps,
  deps: {
    ledger: Ledger;
    routing: Routing;
    application: ApplicationService;
    cdrs: CdrsService;
    options?: SmsOptions;
    gateway?: SupplierGateway;
    /** A mobile-originated message a route's SMSC delivered; resolves to the SMPP status to answer. */
    onMobileOriginated?: SmsDeps['onMobileOriginated'];
    /** The Switch DNC's check of a customer's destination (asked at send). */
    dncRefuses?: SmsDeps['dncRefuses'];
    smppTls?: { key: string | Buffer; cert: string | Buffer } | null;
    /** Switch customers' sell-rate decks. */
    sellRates?: SmsDeps['sellRates'];
  },
) {
  const log = core.log.child({ module: 'sms' });
  const { smppTls, options, ...rest } = deps;
  const guard = supplierGuardFrom(core.config, core.self ? { isSelf: core.self.isSelf } : {});
  const service = createSmsService({
    sql: core.sql,
    clock: core.clock,
    log,
    options: { ...optionsFrom(core.config), guard, ...options },
    ...rest,
  });
  const smppCredentials = createSmppCredentials({
    ...core,
    defaultMaxBinds: core.config.smpp.max_binds_per_credential,
    scryptCost: core.config.auth.scrypt_cost,
  });
  // Open binds per credential, shared by the daemons. A counter set of its own (node id suffixed), so
  // the SIP plane's rewrite of its live calls never touches it; rewritten here from this server's binds.
  const bindCounters = createCounters(core.redis, `${loadNodeId(core.config.paths.state)}:smpp`, () =>
    core.clock.now().getTime(),
  );
  let bindReconcile: NodeJS.Timeout | undefined;
  let timer: NodeJS.Timeout | undefined;
  let smpp: SmppServer | null = null;
  // A credential disabled or re-limited on any daemon reaches the sessions bound here with it.
  const recheck = (systemId: string) => {
    const server = smpp;
    if (!server) return;
    void smppCredentials.state(systemId).then(
      (now) => server.credentialChanged(systemId, now),
      (err: unknown) => log.warn({ err }, 'smpp credential change not applied'),
    );
  };
  // Changes missed while the listen was down are unknown: every bound credential is read again.
  const recheckAll = () => new Set((smpp?.binds() ?? []).map((b) => b.systemId)).forEach(recheck);
  const credentialChanges = createCacheListener(core.sql, SMPP_ACCOUNTS_CHANNEL, recheck, recheckAll);
  const bound: Record<string, number> = {};
  const module: Module = {
    name: 'sms',
    routes: (app) => {
      smsRoutes(service)(app);
      smsReceiptRoutes(service, {
        clock: core.clock,
        toleranceSec: core.config.sms.receipt_callback_tolerance_seconds,
      })(app);
      smppCredentialRoutes(smppCredentials, deps.application)(app);
    },
    async start() {
      const sweepMs = core.config.sms.expiry_sweep_seconds * 1000;
      timer = setInterval(() => {
        void service.sweepExpired().catch((err: unknown) => log.warn({ err }, 'sms expiry sweep failed'));
        void service.drainPending().catch((err: unknown) => log.warn({ err }, 'sms early receipts retry failed'));
      }, sweepMs);
      timer.unref();
      await service.loadEarlyReceipts().catch((err: unknown) => log.warn({ err }, 'sms early receipts not loaded'));
      const caps = connectionCaps(core.config);
      const server = createCustomerSmpp({
        sql: core.sql,
        clock: core.clock,
        log,
        sms: service,
        credentials: smppCredentials,
        host: core.config.smpp.host,
        port: core.config.smpp.port,
        tlsPort: core.config.smpp.tls_port,
        tls: smppTls ?? null,
        bindSlots: countedSlots(bindCounters),
        limits: {
          maxConnections: caps.smpp,
          maxPerSource: caps.smppPerSource,
          bindTimeoutMs: core.config.smpp.bind_timeout_seconds * 1000,
          lockout: {
            failures: core.config.smpp.bind_lockout_failures,
            lockoutMs: core.config.smpp.bind_lockout_seconds * 1000,
          },
        },
      });
      smpp = server;
      // A daemon's share counts while its heartbeat is fresh (90 s): rewritten from the live binds, which
      // also mends a count a lost release left behind.
      const reconcileBinds = () => {
        const live = new Map<string, number>();
        for (const b of server.binds()) live.set(bindSlotKey(b.systemId), (live.get(bindSlotKey(b.systemId)) ?? 0) + 1);
        return bindCounters.reconcile(live);
      };
      await reconcileBinds();
      bindReconcile = setInterval(() => {
        reconcileBinds().catch((err: unknown) => log.warn({ err }, 'smpp bind counts not rewritten'));
      }, BIND_RECONCILE_MS);
      bindReconcile.unref();
      const p = await smpp.start();
      if (p.port !== null) bound['smpp'] = p.port;
      if (p.tlsPort !== null) bound['smpp_tls'] = p.tlsPort;
      core.health.register('smpp', () => ({ ok: smpp !== null, ...bound }));
      await credentialChanges.start();
    },
    async stop() {
      clearInterval(timer);
      clearInterval(bindReconcile);
      await smpp?.stop();
      smpp = null;
      await credentialChanges.stop();
      await smppCredentials.close();
      service.setReceiptSink(null);
      await service.stop();
    },
    ports: () => ({ ...bound }),
  };
  /** Customer binds on this daemon's SMPP server now (none before start). */
  const customerBinds = () => smpp?.binds() ?? [];
  return { module, service, smppCredentials, customerBinds };
}
