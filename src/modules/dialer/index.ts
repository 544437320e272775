import { Decimal } from 'decimal.js';
import { chargeLeg, NO_MARKUP, routeMarkup, withMarkup } from '../cdrs/index.js';
import type { Ledger } from '../../ledger/index.js';
import { AppError, isLedgerRefusal } from '../../http/errors.js';
import { countSegments } from '../../messaging/segments.js';
import type { CoreDeps } from '../../platform/core.js';
import type { Module } from '../../platform/module.js';
import { loadNodeId } from '../../platform/node-id.js';
import type { AccountsService } from '../accounts/service.js';
import type { ApiCallsService } from '../api-calls/service.js';
import type { ApplicationService } from '../application/service.js';
import type { Routing } from '../marketplace/routing/routing.js';
import type { SmsService } from '../sms/service.js';
import type { SellRateLookup } from '../switch/customers/deck-cache.js';
import { sellPriced } from '../sms/sell-price.js';
import type { ChatProvider } from '../ai-agents/providers.js';
import { createDialerAnalytics } from './analytics.js';
import { createDialerAssistant, type AssistantDnc } from './assistant.js';
import { createCampaignsService } from './campaigns.js';
import { createLibraryService } from './library.js';
import { libraryRoutes } from './library-routes.js';
import type { AgentCalls } from '../api-calls/agent.js';
import { createDialerRepo, type CampaignRow } from './repo.js';
import { campaignRoutes } from './routes.js';
import { createCampaignRunner, type Outcome, type Payer, type RunnerDeps } from './runner.js';
import { createCallerIdStates } from './caller-id-states.js';
import { createDialerCalendar } from './calendar.js';
import { createCampaignCloner } from './clone.js';
import { createContactMembers } from './contact-members.js';
import { createEstimator } from './estimate.js';
import { createCampaignNumbers } from './numbers.js';
import { recordRoutes } from './record-routes.js';
import { createResults } from './results.js';
import { campaignToolRoutes } from './tool-routes.js';
import { createTestCaller } from './test-call.js';

/**
 * The dialer: campaigns over the API call plane (voice) and the SMS plane, their numbers, imports,
 * runner, analytics, and the saved templates, contact lists and caller-ID sets. Numbers on the
 * account's do-not-call list are never dialled or messaged (asked at dial time).
 */
export function buildDialerModule(
  core: CoreDeps,
  deps: {
    accounts: AccountsService;
    application: ApplicationService;
    ledger: Ledger;
    routing: Routing;
    usableRoutesNow(accountId: string, type: 'voice' | 'sms'): Promise<{ routeId: string }[]>;
    commsCalls: ApiCallsService;
    sms: SmsService;
    dnc: AssistantDnc & {
      blockedAmong(accountId: string, numbers: string[]): Promise<Set<string>>;
      isBlocked(accountId: string, e164: string): Promise<boolean>;
    };
    /** The `[ai]` chat model (null when not configured), for the dialer assistant. */
    chat: ChatProvider | null;
    /** AI voice agents that hold campaign calls (`aiAgentId`). */
    agents: AgentCalls;
    /** Switch customers' sell-rate decks: a customer's campaign is budgeted at what it pays. */
    sellRates?: SellRateLookup | undefined;
    /** A Switch customer's numbers its operator's do-not-call list refuses (when honored for it). */
    operatorRefused?:
      | ((q: {
          operatorId: string;
          customerId: string;
          numbers: readonly string[];
          channel: 'voice' | 'sms';
        }) => Promise<Set<string>>)
      | undefined;
  },
) {
  const { sql, clock, config } = core;
  const log = core.log.child({ module: 'dialer' });
  const repo = createDialerRepo(sql);

  /** Sub-accounts buy over their operator's routes (as the call and SMS paths do). */
  const routeOwner = async (accountId: string) =>
    (await deps.accounts.accountForAuth(accountId))?.parentId ?? accountId;

  // The markups the call and SMS paths charge a sub-account (its own or its operator's default, and
  // its route markups), so the budget check prices a campaign's calls as they will be billed.
  const markupTerms = (c: CampaignRow) =>
    c.parentId ? deps.application.routeMarkups.terms(c.accountId) : Promise.resolve(NO_MARKUP);

  const outcomeOfCall = (r: Record<string, unknown>): Outcome => ({
    status: r['status'] as string,
    callId: r['callId'] as string,
    sipCode: (r['sipResponseCode'] as number | null | undefined) ?? null,
    cause: (r['hangupCause'] as string | null | undefined) ?? null,
    durationSeconds: (r['durationSeconds'] as number | null | undefined) ?? 0,
    cost: (r['cost'] as string | null | undefined) ?? '0.000000',
    endedAt: r['endedAt'] || r['completedAt'] ? new Date((r['endedAt'] ?? r['completedAt']) as string) : null,
  });

  /**
   * A campaign's calls count against the account's `[dialer] max_calls_per_account` beside their
   * campaign's `concurrency`; a test call is one API call and counts as API calls do.
   */
  const callPlacer =
    (campaign: boolean): RunnerDeps['placeCall'] =>
    async (payer: Payer, { callId: id, ...input }) => {
      const r = await deps.commsCalls.place(
        payer,
        { ...input, async: true, language: input.language as 'en', actions: input.actions as never },
        { campaign, ...(id ? { id } : {}) },
      );
      const data = r.data;
      const callId = data['callId'] as string;
      return {
        callId,
        final: data['completedAt'] ? outcomeOfCall(data) : null,
        finished:
          deps.commsCalls.whenFinished(callId)?.then((e) =>
            e
              ? {
                  status: e.status,
                  callId,
                  sipCode: e.sipCode,
                  cause: e.hangupCause,
                  durationSeconds: e.durationSeconds,
                  cost: e.cost,
                  endedAt: e.endedAt,
                }
              : null,
          ) ?? null,
      };
    };
  const placeCall = callPlacer(true);
  const placeTestCall = callPlacer(false);
  const worstCase: RunnerDeps['worstCase'] = async (c, number) => {
    try {
      const [best] = await deps.routing.candidatesFor({
        accountId: c.parentId ?? c.accountId,
        number,
        type: c.kind,
        routeId: c.routeId,
      });
      if (!best) return null;
      // A Switch customer pays its sell rate where one matches (docs/switch.md), as the call and
      // SMS paths bill it; a route dearer than that rate is refused there, so such an attempt costs nothing.
      const sell = c.parentId && deps.sellRates ? await deps.sellRates.match(c.accountId, c.kind, number) : null;
      if (sell && best.price.gt(sell.rate)) return new Decimal(0);
      if (sell && c.kind === 'voice')
        return new Decimal(chargeLeg({ ...best, sell }, c.maxCallDuration, NO_MARKUP.pct).total);
      if (sell) {
        const { segments } = countSegments(c.messageBody ?? '');
        const base = best.price.times(segments).toDecimalPlaces(6, Decimal.ROUND_HALF_UP);
        return sellPriced(base, sell.rate, segments).total;
      }
      const terms = await markupTerms(c);
      const route = { ...best, markupPct: routeMarkup(terms, c.routeId) };
      if (c.kind === 'voice') return new Decimal(chargeLeg(route, c.maxCallDuration, terms.pct).total);
      const { segments } = countSegments(c.messageBody ?? '');
      // As the SMS path bills it: the base rounded to 6 places, then the markup.
      const base = best.price.times(segments).toDecimalPlaces(6, Decimal.ROUND_HALF_UP);
      return withMarkup(base, route.markupPct ?? terms.pct).total;
    } catch {
      return null;
    }
  };

  const calendar = createDialerCalendar({ sql, clock });
  const callerIds = createCallerIdStates({ sql, clock });

  let runnerWake = () => {};
  const campaigns = createCampaignsService({
    repo,
    clock,
    log,
    config,
    async routeUsable(accountId, routeId, kind) {
      const routes = await deps.usableRoutesNow(await routeOwner(accountId), kind);
      return routes.some((r) => r.routeId === routeId);
    },
    wake: () => runnerWake(),
    agentReady: async (accountId, agentId) => void (await deps.agents.prepare(accountId, agentId)),
  });

  const runner = createCampaignRunner({
    repo,
    clock,
    log,
    config,
    node: loadNodeId(config.paths.state),
    async blockedAmong(c, numbers) {
      const own = await deps.dnc.blockedAmong(c.accountId, numbers);
      if (!c.parentId || !deps.operatorRefused) return own;
      const rest = numbers.filter((n) => !own.has(n));
      const q = { operatorId: c.parentId, customerId: c.accountId, numbers: rest, channel: c.kind };
      for (const n of await deps.operatorRefused(q)) own.add(n);
      return own;
    },
    placeCall,
    async callOutcome(accountId, callId) {
      try {
        const rec = await deps.commsCalls.get({ accountId }, callId);
        return rec['endedAt'] ? outcomeOfCall(rec) : null;
      } catch (err) {
        // A claim names its call before placing it: without a record, the daemon that claimed the
        // number stopped before the call was stored, so before any INVITE.
        if (err instanceof AppError && err.code === 'NOT_FOUND') return 'never_placed';
        throw err;
      }
    },
    async sendSms(payer, input) {
      const r = await deps.sms.send({ ...payer, source: 'api' }, input);
      return {
        status: r.status,
        callId: null,
        sipCode: null,
        cause: r.status === 'failed' ? (r.errorCode ?? 'SMS_FAILED') : null,
        durationSeconds: 0,
        cost: r.cost,
        endedAt: null,
      };
    },
    worstCase,
    holidays: (accountId) => calendar.days(accountId),
    pausedClis: (accountId) => callerIds.paused(accountId),
    async chargeFee(c, key, callId) {
      const input = {
        postingKey: key,
        accountId: c.accountId,
        amount: c.platformFeePerCall,
        reference: 'Dialer platform fee',
        relatedEntityType: 'dialer_campaign',
        relatedEntityId: c.id,
        callId,
      };
      try {
        if (c.environment === 'test') await deps.ledger.chargeTest(input);
        else await deps.ledger.charge({ ...input, sellerId: null });
        return true;
      } catch (err) {
        if (isLedgerRefusal(err)) return false;
        throw err;
      }
    },
  });
  runnerWake = () => runner.wake();

  const library = createLibraryService({ sql, clock });
  const analytics = createDialerAnalytics(sql);
  const results = createResults({ sql, log });
  const ask = createDialerAssistant({
    chat: deps.chat,
    model: config.ai.chat_model,
    campaigns,
    analytics,
    dnc: deps.dnc,
    results,
    now: () => clock.now(),
  });
  const routes = campaignRoutes({ campaigns, library, analytics, repo, ask, results, clock });
  const saved = libraryRoutes(library, clock);
  const numbers = createCampaignNumbers({ sql, clock, blockedAmong: (a, n) => deps.dnc.blockedAmong(a, n) });
  const more = campaignToolRoutes({
    campaigns,
    numbers,
    results,
    clock,
    clone: createCampaignCloner({ sql, campaigns }),
    estimate: createEstimator({
      sql,
      clock,
      worstCase,
      holidays: (accountId) => calendar.days(accountId),
      async available(c) {
        const b = await deps.ledger.balanceOf(c.accountId);
        return c.environment === 'test' ? new Decimal(b.testCredit).minus(b.testHeld).toFixed(6) : b.available;
      },
      accountCallCap: config.dialer.max_calls_per_account,
    }),
    testCall: createTestCaller({
      repo,
      isBlocked: (a, n) => deps.dnc.isBlocked(a, n),
      paused: (a) => callerIds.paused(a),
      placeCall: placeTestCall,
      sendSms: (payer, input) => deps.sms.send({ ...payer, source: 'api' }, input),
    }),
  });
  const records = recordRoutes({ library, members: createContactMembers({ sql }), calendar, callerIds, clock });

  const module: Module = {
    name: 'dialer',
    async routes(app) {
      await routes(app);
      saved(app);
      more(app);
      records(app);
    },
    async start() {
      await repo.failStaleImports(clock.now());
      runner.start();
    },
    stop: () => runner.stop(),
  };
  return { module, service: { campaigns, library, runner } };
}

export type DialerService = ReturnType<typeof buildDialerModule>['service'];
