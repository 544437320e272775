import { createLedger, type Ledger, type LedgerEventSink } from '../../ledger/ledger.js';
import type { CoreDeps } from '../../platform/core.js';
import type { Module } from '../../platform/module.js';
import { emit } from '../../webhooks/emit.js';
import type { EventName } from '../../webhooks/events.js';
import type { ApplicationService } from '../application/service.js';
import { billingRoutes } from './routes.js';
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
  },
) {
  const { config, log } = core;
  const { ledger, application } = deps;
  const service = createBillingService({ ...core, ledger, withdrawable: deps.withdrawable });
  let loops: { stop(): Promise<void> }[] = [];
  // The block the next summarize starts from: null until this daemon's first summarize (see 111).
  let summarizedTo: number | null = null;

  const tick = async () => {
    try {
      const released = await ledger.sweepExpiredHolds();
      if (released > 0) log.info({ released }, 'expired holds released');
      await application.reconcileDailyCaps();
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
    routes: billingRoutes(service),
    start() {
      loops = [
        every(config.billing.hold_sweep_seconds * 1000, tick),
        every(config.billing.summarize_seconds * 1000, summarize),
      ];
    },
    async stop() {
      await Promise.all(loops.map((l) => l.stop()));
    },
  };
  return { module, service };
}
