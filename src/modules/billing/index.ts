import { createLedger, type Ledger, type LedgerEventSink } from '../../ledger/ledger.js';
import type { CoreDeps } from '../../platform/core.js';
import type { Module } from '../../platform/module.js';
import { emit } from '../../webhooks/emit.js';
import type { EventName } from '../../webhooks/events.js';
import type { ApplicationService } from '../application/service.js';
import type { CdrFilter, CdrRow } from '../cdrs/index.js';
import { alertRoutes } from './alert-routes.js';
import { createSpendingAlerts } from './alerts.js';
import { documentRoutes } from './document-routes.js';
import { exportRoutes } from './export-routes.js';
import { createBillingExports } from './exports.js';
import { createInvoices, type CreditedTopups } from './invoices.js';
import { createBillingRepo } from './repo.js';
import { billingRoutes } from './routes.js';
import { createStatements } from './statements.js';
import { createBillingService } from './service.js';
import { every } from '../../platform/periodic.js';

/**
 * The ledger every money-moving module posts through, and where balance and sub-account events go
 * (`events`, by default the webhooks outbox inside the posting's transaction).
 */
export function buildLedger(
  core: CoreDeps,
  events?: LedgerEventSink | null,
): { ledger: Ledger; events: LedgerEventSink } {
  const sink: LedgerEventSink = events ?? {
    emit: async (db, accountId, event, data) => {
      await emit(db, { accountId, event: event as EventName, data, at: core.clock.now() });
    },
  };
  const ledger = createLedger({
    sql: core.sql,
    clock: core.clock,
    log: core.log.child({ module: 'ledger' }),
    events: sink,
    lowBalanceThreshold: core.config.billing.low_balance_threshold,
  });
  return { ledger, events: sink };
}

/**
 * Billing reads, with the ledger's background loops: the hold sweeper with the daily-cap
 * reconciler (the Application Manager's caps), and the entries' index summarizer.
 */
export function buildBillingModule(
  core: CoreDeps,
  deps: {
    ledger: Ledger;
    application: Pick<ApplicationService, 'reconcileDailyCaps'>;
    /** Seller earnings withdrawable now (the payouts' rule): the summary's `availableBalance`. */
    withdrawable: (accountId: string) => Promise<string>;
    /** Credited top-ups: their invoices. */
    topups: CreditedTopups;
    /** Call and message records: their exports. */
    cdrs: { listCdrs(f: CdrFilter): Promise<CdrRow[]> };
    /** The account as statements name it. */
    holder: (accountId: string) => Promise<Record<string, unknown>>;
  },
) {
  const { config, log } = core;
  const { ledger, application } = deps;
  const service = createBillingService({ ...core, ledger, withdrawable: deps.withdrawable });
  const issuer = config.http.public_hostname;
  const statements = createStatements(core);
  const invoices = createInvoices({ topups: deps.topups, issuer });
  const alerts = createSpendingAlerts({ ...core, log: log.child({ module: 'spending-alerts' }) });
  const exports = createBillingExports({
    ...core,
    log: log.child({ module: 'billing-exports' }),
    stateDir: config.paths.state,
    repo: createBillingRepo(core.sql),
    cdrs: deps.cdrs,
  });
  let loops: { stop(): Promise<void> }[] = [];
  // The block the next summarize starts from: null until this daemon's first summarize (see 111).
  let summarizedTo: number | null = null;

  const tick = async () => {
    try {
      const released = await ledger.sweepExpiredHolds();
      if (released > 0) log.info({ released }, 'expired holds released');
      await application.reconcileDailyCaps();
      await alerts.check();
      await exports.housekeeping();
    } catch (err) {
      log.warn({ err }, 'ledger housekeeping failed');
    }
  };

  const summarize = async () => {
    try {
      summarizedTo = await ledger.summarizeEntries(summarizedTo);
    } catch (err) {
      // 55P03: a VACUUM or ANALYZE of entries holds the lock (and VACUUM summarizes); next tick.
      if ((err as { code?: string }).code === '55P03') log.debug('entries summarize skipped: table busy');
      else log.warn({ err }, 'entries summarize failed');
    }
  };

  const module: Module = {
    name: 'billing',
    routes: (app) => {
      billingRoutes(service)(app);
      documentRoutes({ statements, invoices, issuer, holder: deps.holder })(app);
      exportRoutes(exports)(app);
      alertRoutes(alerts)(app);
    },
    async start() {
      await exports.housekeeping(true);
      loops = [
        every(config.billing.hold_sweep_seconds * 1000, tick),
        every(config.billing.summarize_seconds * 1000, summarize),
      ];
    },
    async stop() {
      await Promise.all(loops.map((l) => l.stop()));
      await exports.stop();
    },
  };
  return { module, service: { ...service, statements, invoices, alerts, exports } };
}
