import { createLedger, type LedgerEventSink } from '../../ledger/ledger.js';
import type { CoreDeps } from '../../platform/core.js';
import type { AccountsService } from '../accounts/service.js';
import { applicationRoutes } from '../application/routes.js';
import { createApplicationService, type RouteRequirement } from '../application/service.js';
import type { Module } from '../../platform/module.js';
import type { KeysService } from '../keys/service.js';
import { emit } from '../../webhooks/emit.js';
import type { EventName } from '../../webhooks/events.js';
import { topupsRoutes } from '../topups/routes.js';
import { createTopupsService } from '../topups/service.js';
import { billingRoutes } from './routes.js';
import { createBillingService } from './service.js';
import { every } from '../../platform/periodic.js';

/**
 * The money modules: the ledger, billing reads, top-ups and the Application Manager, with the
 * hold sweeper, the daily-cap reconciler and the entries' index summarizer as background loops.
 * `events`: where balance and sub-account events go (the webhooks outbox once it exists).
 * `routeRequirement`: the marketplace's "active purchase or own route" check for sub-accounts.
 */
export function buildMoneyModules(
  core: CoreDeps,
  deps: { accounts: AccountsService; keys: KeysService; events?: LedgerEventSink | null; routeRequirement?: RouteRequirement | null },
) {
  const { config, log } = core;
  const events: LedgerEventSink = deps.events ?? {
    emit: async (db, accountId, event, data) => {
      await emit(db, { accountId, event: event as EventName, data, at: core.clock.now() });
    },
  };
  const ledger = createLedger({ sql: core.sql, clock: core.clock, log: log.child({ module: 'ledger' }), events, lowBalanceThreshold: config.billing.low_balance_threshold });
  const billing = createBillingService({ ...core, ledger });
  const topups = createTopupsService({ ...core, ledger });
  const application = createApplicationService({
    ...core, ledger, accounts: deps.accounts, keys: deps.keys, events, routeRequirement: deps.routeRequirement ?? null,
  });
  const publicBase = `https://${config.http.public_hostname}${config.http.port === 443 ? '' : `:${config.http.port}`}/api/v1`;
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

  const modules: Module[] = [
    {
      name: 'billing',
      routes: billingRoutes(billing),
      start() {
        loops = [every(config.billing.hold_sweep_seconds * 1000, tick), every(config.billing.summarize_seconds * 1000, summarize)];
      },
      async stop() {
        await Promise.all(loops.map((l) => l.stop()));
      },
    },
    { name: 'topups', routes: topupsRoutes(topups, publicBase) },
    { name: 'application', routes: applicationRoutes(application) },
  ];
  return { services: { ledger, billing, topups, application }, modules };
}
