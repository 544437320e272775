import type { Logger } from 'pino';
import type { Config } from '../../config/schema.js';
import type { Sql } from '../../db/connection.js';
import type { Ledger } from '../../ledger/index.js';
import type { Clock } from '../../platform/clock.js';
import type { Counters } from '../../platform/counters.js';
import type { AccountsService } from '../accounts/service.js';
import type { ApplicationService } from '../application/service.js';
import type { CdrsService } from '../cdrs/index.js';
import type { RoutingCache } from '../marketplace/routing/routing-cache.js';
import type { Routing } from '../marketplace/routing/routing.js';
import { createCacheListener } from '../../db/cache-listener.js';
import { connectionCallsKey, connectionCpsKey, createAdmission } from './admission.js';
import { createAttribution } from './attribution.js';
import { createFinishing } from './finishing.js';
import type { LiveCalls } from './live-calls.js';
import { createPayerHints } from './payer-hints.js';
import type { LocalAnswerEndpoint, NumberCalls } from './number-calls.js';
import type { SellRateLookup } from '../switch/customers/deck-cache.js';
import { createPlanning, type DncRefuses } from './planning.js';
import { createReconcile } from './reconcile.js';
import { createCallsRepo, type PointPatch } from './repo.js';
import { createSlots } from './slots.js';

export { apiCallOwner } from './reconcile.js';
export { sipTransportOf } from './planning.js';
export type { ApiAdmission } from './admission.js';
export type { LocalAnswerEndpoint, NumberCalls, NumberCallTarget } from './number-calls.js';

/** How long holds, answered marks and call finishes wait for others to share their statement and commit. */
const BATCH_WINDOW_MS = 5;

export interface SipTrunksDeps {
  sql: Sql;
  log: Logger;
  clock: Clock;
  config: Readonly<Config>;
  ledger: Ledger;
  routing: Routing;
  accounts: AccountsService;
  application: ApplicationService;
  counters: Counters;
  /** Settlement and CDRs of ended calls; route terms when there is no routing cache. */
  cdrs: CdrsService;
  node: string;
  /** Route terms (seller, capacity, calls per second) kept in process; read from the table without it. */
  routingCache?: Pick<RoutingCache, 'routeTerms'>;
  /** Endpoints the OPTIONS health checks have marked down (skipped when routing). */
  endpointDown?: (e: { host: string; port: number; transport: string }) => boolean;
  /** Calls a number's seller brings in for the numbers it rented out (the numbers module). */
  numberCalls?: NumberCalls;
  /** The outbound guard's check of a target a customer aims: the address to send to. */
  resolveTarget: (host: string, port: number) => Promise<string>;
  /** This daemon's answering endpoint for numbers the exchange answers itself (voicemail, AI agents). */
  localAnswer?: LocalAnswerEndpoint;
  /** Switch customers' sell-rate decks (src/modules/switch/customers); absent, sub-accounts pay base plus markup. */
  sellRates?: SellRateLookup;
  /** The Switch DNC's check of a customer's destination. */
  dncRefuses?: DncRefuses;
}

/** NOTIFY channel of migration 264: a trunk address or purchase credential changed. */
const TRUNK_POINTS_CHANNEL = 'svc_trunk_points';

/**
 * The voice plane's business side: who pays for a trunk call, which routes it may take, the
 * hold that bounds it, and at the end the settlement and one CDR per leg in one transaction.
 * Composed here from its parts, which share only what is passed to them: the live calls, the
 * concurrency slots and the payer hints.
 */
export function createSipTrunksService(deps: SipTrunksDeps) {
  const { sql, log, clock, config, ledger, cdrs, node } = deps;
  // Whitelist and SIP credential answers are reused as briefly as API credentials are (auth.credential_cache_seconds).
  const credentialMs = config.auth.credential_cache_seconds * 1000;
  const repo = createCallsRepo(sql, { ipCacheMs: credentialMs, now: () => clock.now().getTime() });
  const live: LiveCalls = new Map();
  const slots = createSlots({ counters: deps.counters, log });
  const hints = createPayerHints(clock);
  const batchWindowMs = BATCH_WINDOW_MS;

  const attribution = createAttribution({
    repo,
    application: deps.application,
    clock,
    credentialMs,
    realm: config.sip.primary_host,
  });
  const admission = createAdmission({
    sql,
    log,
    clock,
    config,
    ledger,
    repo,
    cdrs,
    routingCache: deps.routingCache,
    live,
    slots,
    hints,
    batchWindowMs,
    node,
  });
  const finishing = createFinishing({ sql, log, repo, cdrs, live, slots, hints, batchWindowMs });
  const policy = createPlanning({
    config,
    routing: deps.routing,
    endpointDown: deps.endpointDown,
    numberCalls: deps.numberCalls,
    resolveTarget: deps.resolveTarget,
    localAnswer: deps.localAnswer,
    sellRates: deps.sellRates,
    dncRefuses: deps.dncRefuses,
    attribution,
    admission,
    finishing,
  });
  const { heartbeat, reconcileOrphans } = createReconcile({
    sql,
    log,
    clock,
    config,
    ledger,
    repo,
    cdrs,
    live,
    hints,
    node,
  });

  // A connection point changed (its limits, disabled, deleted) on any daemon: the cached answers go.
  const pointsListener = createCacheListener(sql, TRUNK_POINTS_CHANNEL, attribution.forget, attribution.forget);

  return {
    repo,
    policy,
    /** Started with the module (LISTEN), stopped with it. */
    pointsListener,
    /** SIP connection points (whitelisted addresses, purchase credentials): limits, state, live load. */
    points: {
      updateIp: (accountId: string, id: string, patch: PointPatch) =>
        repo.updateTrunkIp(accountId, id, patch, clock.now()),
      updateCredentials: (accountId: string, purchaseId: string, patch: PointPatch) =>
        repo.updateTrunkCredential(accountId, purchaseId, patch, clock.now()),
      /** Live calls through each point across daemons, and calls let through in the current second. */
      async load(ids: readonly string[]): Promise<Map<string, { calls: number; cps: number }>> {
        const load = await Promise.all(
          ids.map(async (id) => {
            const [calls, cps] = await Promise.all([
              deps.counters.current(connectionCallsKey(id)),
              deps.counters.rateNow(connectionCpsKey(id)),
            ]);
            return [id, { calls, cps }] as const;
          }),
        );
        return new Map(load);
      },
    },
    /** The `calls` rows of calls placed through the API (the api-calls module writes them through here). */
    records: {
      insertCall: repo.insertCall,
      markCall: repo.markCall,
      finishCall: repo.finishCall,
      heartbeat: repo.heartbeat,
    },
    /** Started with the module (LISTEN), stopped with it. */
    termsCache: admission.termsCache,
    reconcileOrphans,
    admitApiCall: admission.admitApiCall,
    releaseApiCall: (taken: string[]) => slots.release(taken),
    liveCallIds: () => [...live.keys()],
    /**
     * The AI agent answering a number's call handed the caller over at `at`: the agent fee is billed
     * to there only. A call not live here (already finished) keeps what it was billed.
     */
    agentLeft(callGroupId: string, at: Date) {
      const n = live.get(callGroupId)?.number;
      if (!n) return;
      n.agentLeftAt = at;
      // Kept on the row for the crash reconcile; the live call bills from memory whatever this does.
      repo.markAgentLeft(callGroupId, at).catch((err: unknown) => {
        log.warn({ err, callGroupId }, 'agent transfer moment not kept on the call');
      });
    },
    openCallCount: (accountId: string) => repo.openCallCount(accountId),
    /** Trunk calls refused before routing since start, by cause. */
    refusals: admission.refusals,
    /** Counter shares this daemon really holds, for `Counters.reconcile`. */
    liveSlots: slots.held,
    heartbeat,
    /** SIP credentials for a route purchase: username `pur_…`, password shown once, HA1 kept. */
    purchaseCredentials: attribution.purchaseCredentials,
  };
}

export type SipTrunksService = ReturnType<typeof createSipTrunksService>;
