/**
 * Calls placed through the API (spec "Voice and SMS": POST /comms/calls, its action rules and
 * behaviour, the failover rule; "Call" resource; ARCHITECTURE "The call path").
 */
import { createHash, randomInt } from 'node:crypto';
import { Decimal } from 'decimal.js';
import type { Logger } from 'pino';
import type { Config } from '../../config/schema.js';
import type { Db, Sql } from '../../db/connection.js';
import { AppError, notFound, ruleError, serviceUnavailable, validationError } from '../../http/errors.js';
import type { Ledger } from '../../ledger/index.js';
import type { Clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import type { LegOutcome } from '../../telephony/calls/sip-dialer.js';
import type { VoicePlane } from '../../telephony/calls/voice-plane.js';
import type {
  CallAction,
  CallEnd,
  CallEngine,
  CallLanguage,
  EngineCall,
  GatherResult,
  RouteEndpoint,
} from '../../telephony/engine.js';
import { MediaError } from '../../telephony/media/errors.js';
import { isE164 } from '../../platform/e164.js';
import { FAILOVER_MAX_ROUTES, shouldFailover } from '../../telephony/failover.js';
import { orderEndpoints } from '../../telephony/sip/b2bua/index.js';
import { bridgeCalls } from '../../telephony/media/bridge.js';
import { emit } from '../../webhooks/emit.js';
import type { AccountsService } from '../accounts/service.js';
import type { ApplicationService } from '../application/service.js';
import { apiCallOwner, type ApiAdmission, type SipTrunksService } from '../sip-trunks/service.js';
import {
  agreementOf,
  buildCdr,
  chargeLeg,
  holdFor,
  NO_MARKUP,
  routeMarkup,
  voiceBilled,
  type CdrInsert,
  type CdrsService,
  type MarkupTerms,
  type PricedRoute,
  type SellPrice,
} from '../cdrs/index.js';
import type { Candidate } from '../marketplace/routing/routing.js';
import type { Routing } from '../marketplace/routing/routing.js';
import type { SellRateLookup } from '../switch/customers/deck-cache.js';
import { belowSellRate } from '../switch/customers/below-cost.js';
import { checkActions, playUrls, type ActionItem } from './actions.js';
import type { AgentCallPlan, AgentCalls } from './agent.js';
import { createCommsCallsRepo, type ApiCallRow } from './repo.js';

export interface PlaceCallInput {
  to: string;
  from: string;
  routeId?: string | undefined;
  strategy?: 'cheapest' | 'best_quality' | 'balanced' | undefined;
  maxDuration?: number | undefined;
  async?: boolean | undefined;
  language?: CallLanguage | undefined;
  actions?: ActionItem[] | undefined;
  /** The answered call is held by this AI voice agent instead of running actions. */
  aiAgentId?: string | undefined;
}

export interface VoiceOtpInput {
  to: string;
  /** Digits read aloud; generated (6 digits) when omitted. */
  code?: string | undefined;
  language?: CallLanguage | undefined;
  brand?: string | undefined;
  repeat?: number | undefined;
}

/** "Your <brand> verification code is" in the six voice languages (spec "Verify": voice languages). */
const OTP_PHRASE: Record<CallLanguage, (brand: string | null) => string> = {
  en: (b) => (b ? `Your ${b} verification code is` : 'Your verification code is'),
  es: (b) => (b ? `Su código de verificación de ${b} es` : 'Su código de verificación es'),
  fr: (b) => (b ? `Votre code de vérification ${b} est` : 'Votre code de vérification est'),
  de: (b) => (b ? `Ihr ${b} Bestätigungscode lautet` : 'Ihr Bestätigungscode lautet'),
  pt: (b) => (b ? `O seu código de verificação ${b} é` : 'O seu código de verificação é'),
  hi: (b) => (b ? `आपका ${b} सत्यापन कोड है` : 'आपका सत्यापन कोड है'),
};

export interface Caller {
  accountId: string;
  parentId: string | null;
  mode: 'live' | 'test';
}

export interface AttemptView {
  attempt: number;
  routeId: string | null;
  status: 'answered' | 'failed' | 'busy' | 'no_answer';
  sipResponseCode: number | null;
  hangupCause: string | null;
}

export interface ApiCallsDeps {
  sql: Sql;
  log: Logger;
  clock: Clock;
  config: Readonly<Config>;
  ledger: Ledger;
  routing: Routing;
  accounts: AccountsService;
  application: ApplicationService;
  /** This daemon's id; API calls are owned by `<node>:api` so the trunk plane's own reconcile leaves them alone while alive. */
  node: string;
  /** The engine and downloader; null while the SIP plane is not up. */
  voice(): VoicePlane | null;
  /** The calls module's concurrency and calls-per-second counters, so API and trunk calls share every limit. */
  admission: {
    admitApiCall(o: {
      payer: string;
      maxApiCalls: number;
      routeIds: readonly string[];
      pool?: 'api' | 'campaign' | undefined;
    }): Promise<ApiAdmission>;
    releaseApiCall(slots: string[]): Promise<void>;
  };
  /** The calls module's writes of `calls` rows (API calls are rows of that table). */
  callRecords: SipTrunksService['records'];
  /** Settlement and CDRs; route sellers. */
  cdrs: CdrsService;
  /** Extends a request's idempotency lease, so a retry of a long sync call waits instead of dialling again. */
  extendLease?: ((accountId: string, key: string, seconds: number) => Promise<void>) | undefined;
  /** AI voice agents holding calls named with `aiAgentId`; absent: such calls are refused. */
  agents?: AgentCalls | undefined;
  /** Switch customers' sell-rate decks (src/modules/switch/customers); absent, sub-accounts pay base plus markup. */
  sellRates?: SellRateLookup | undefined;
  /** The Switch DNC: true when a customer's call to `number` is refused because its operator lists it. */
  dncRefuses?:
    ((q: { operatorId: string; customerId: string; number: string; channel: 'voice' }) => Promise<boolean>) | undefined;
}

/** The per-minute agent fee for `seconds` of an answered call, every started minute counted. */
const agentFee = (agent: AgentCallPlan, seconds: number): string =>
  new Decimal(agent.feePerMinute).times(Math.ceil(seconds / 60)).toFixed(6);

/** Seconds a call can spend before answer: three routes' setup plus ringing (the dialer's no-answer limit). */
const SETUP_ALLOWANCE_SECONDS = 90;

/** Switch cause codes (Q.850 names) for the record's `hangupCause`. */
function causeCode(end: CallEnd): string {
  if (end.cause === 'media_host_lost') return 'NETWORK_OUT_OF_ORDER';
  if (end.answeredAt) return end.cause === 'media_timeout' ? 'RECOVERY_ON_TIMER_EXPIRE' : 'NORMAL_CLEARING';
  switch (end.sipStatus) {
    case 486:
    case 600:
      return 'USER_BUSY';
    case 408:
    case 480:
    case 487:
      return end.cause === 'cancelled' ? 'ORIGINATOR_CANCEL' : 'NO_ANSWER';
    case 403:
    case 603:
      return 'CALL_REJECTED';
    case 404:
      return 'UNALLOCATED_NUMBER';
    case 484:
      return 'INVALID_NUMBER_FORMAT';
    case 488:
      return 'INCOMPATIBLE_DESTINATION';
    case 502:
      return 'NETWORK_OUT_OF_ORDER';
    case 503:
      return 'NORMAL_CIRCUIT_CONGESTION';
    case 500:
    case 504:
      return 'NORMAL_TEMPORARY_FAILURE';
    case null:
      return end.cause === 'cancelled' ? 'ORIGINATOR_CANCEL' : 'RECOVERY_ON_TIMER_EXPIRE';
    default:
      return 'NORMAL_UNSPECIFIED';
  }
}

/** Plain words for `hangupReason`. */
function reasonWords(end: CallEnd, leg: LegOutcome | undefined): string {
  if (end.answeredAt) {
    if (end.cause === 'max_duration') return 'The call reached its maximum duration';
    if (end.cause === 'media_timeout') return 'No audio came from the called party; the call was ended';
    if (end.cause === 'media_host_lost')
      return 'The media server carrying the call stopped answering; the call was ended';
    return end.by === 'remote' ? 'The called party hung up' : 'The call ended when its actions finished';
  }
  if (leg?.noResponse) return 'The route did not respond';
  switch (end.cause) {
    case 'busy':
      return 'The called party was busy';
    case 'no_answer':
      return 'No answer';
    case 'cancelled':
      return 'The call was cancelled before answer';
    case 'media_host_lost':
      return 'The media server stopped answering before the call was connected';
    default:
      return end.sipStatus ? `The route refused the call (SIP ${end.sipStatus})` : 'The call could not be connected';
  }
}

function attemptStatus(end: CallEnd): AttemptView['status'] {
  if (end.answeredAt) return 'answered';
  if (end.cause === 'busy') return 'busy';
  if (end.cause === 'no_answer') return 'no_answer';
  return 'failed';
}

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

interface Priced extends PricedRoute {
  routeId: string;
  sellerId: string | null;
  endpoints: RouteEndpoint[];
  interconnectionId?: string;
}

/**
 * A limit refusal: 429 RATE_LIMITED (spec "Errors": over a limit, retry after `Retry-After`), with
 * `details.limit` naming which one. A counter store that cannot be reached is 503 instead.
 */
function overLimit(a: Extract<ApiAdmission, { ok: false }>): AppError {
  const [message, retryAfter] = {
    'api-calls': [`Concurrent call limit reached: ${String(a.limit)} API calls in progress on this account`, 5],
    'campaign-calls': [
      `Concurrent call limit reached: ${String(a.limit)} campaign calls in progress on this account`,
      5,
    ],
    'sub-account-calls': [`Concurrent call limit reached: the sub-account allows ${String(a.limit)} calls at once`, 5],
    capacity: ['Route capacity reached: every route for this number is carrying its maximum calls', 5],
    cps: ['Route calls-per-second limit reached', 1],
  }[a.cause] as [string, number];
  return new AppError(
    'RATE_LIMITED',
    message,
    { limit: a.cause, ...(a.limit !== null ? { max: a.limit } : {}) },
    { 'retry-after': String(retryAfter) },
  );
}

/**
 * A Switch customer's call to a number its operator's do-not-call list holds (docs/switch.md "DNC"):
 * 400 as the SMS refusal, `details.code` telling it apart without reading the message.
 */
const doNotCall = () =>
  new AppError(
    'VALIDATION_ERROR',
    "The number is on the do-not-call list of the customer's Switch: the call is not placed",
    {
      code: 'DO_NOT_CALL',
    },
  );

/** The caller's call an agent transferred, which the transfer leg joins once answered. */
interface TransferBridge {
  call: EngineCall;
  /** The target answered and the two calls are joined. */
  bridged(): void;
}

/** How a live call ended, as its final record holds it (written in the settlement's transaction). */
export interface ApiCallEnd {
  status: string;
  sipCode: number | null;
  hangupCause: string;
  durationSeconds: number;
  cost: string;
  endedAt: Date;
}

interface LiveApiCall {
  id: string;
  holdId: string;
  /** Counter slots taken at admission, given back when the call ends. */
  slots: string[];
  maxDuration: number;
  current: EngineCall | null;
  stopped: boolean;
  /** Resolves once the call is settled and recorded: how it ended, or undefined when its writes failed. */
  finished?: Promise<ApiCallEnd | undefined>;
}

export function createApiCallsService(deps: ApiCallsDeps) {
  const { sql, log, clock, ledger } = deps;
  const repo = createCommsCallsRepo(sql);
  const { callRecords, cdrs } = deps;
  const legOutcomes = new Map<string, LegOutcome>();
  const live = new Map<string, LiveApiCall>();
  const running = new Set<Promise<unknown>>();
  const ownerNode = apiCallOwner(deps.node);

  /**
   * Each candidate priced for the caller, a sub-account's route markups on their routes; with a
   * Switch customer's `sell` rate, that rate on every route and no route dearer than it.
   */
  async function priceCandidates(
    caller: Caller,
    input: PlaceCallInput,
    markups: MarkupTerms,
    sell: SellPrice | null,
  ): Promise<Priced[]> {
    const candidates: Candidate[] = await deps.routing.candidatesFor({
      accountId: caller.parentId ?? caller.accountId,
      number: input.to,
      type: 'voice',
      from: input.from,
      ...(input.routeId !== undefined ? { routeId: input.routeId } : {}),
      ...(input.strategy !== undefined ? { strategy: input.strategy } : {}),
    });
    // The operator is never made to pay for its customer's call (docs/switch.md "Below cost").
    const affordable = sell ? candidates.filter((c) => c.price.lte(sell.rate)) : candidates;
    if (sell && candidates.length > 0 && affordable.length === 0) throw belowSellRate();
    const usable = affordable
      .map((c) => ({ c, eps: c.endpoints.filter((e) => e.transport === 'udp' || e.transport === 'tcp') }))
      .filter((x) => caller.mode === 'test' || x.eps.length > 0)
      .slice(0, input.routeId !== undefined ? 1 : FAILOVER_MAX_ROUTES);
    if (usable.length === 0) throw ruleError('No purchased or own route covers this number');
    const terms = new Map((await cdrs.routeTerms(usable.map((u) => u.c.routeId))).map((t) => [t.id, t.sellerId]));
    return usable.map(({ c, eps }) => ({
      routeId: c.routeId,
      markupPct: routeMarkup(markups, c.routeId),
      price: c.price,
      sellerRate: c.sellerRate,
      increment: c.increment,
      sellerId: terms.get(c.routeId) ?? null,
      ...(c.interconnectionId === undefined ? {} : { interconnectionId: c.interconnectionId }),
      ...(sell ? { sell: { rate: sell.rate, increment: sell.increment } } : {}),
      endpoints: orderEndpoints(
        eps.map((e) => ({
          // The address the routing guard checked, so the INVITE goes where the check looked.
          host: e.address ?? e.host,
          port: e.port,
          transport: e.transport === 'tcp' ? ('tcp' as const) : ('udp' as const),
          priority: e.priority,
          weight: e.weight,
          ...(e.techPrefix ? { techPrefix: e.techPrefix } : {}),
          ...(e.username ? { username: e.username } : {}),
          ...(e.password !== null ? { password: e.password } : {}),
        })),
      ).map((e) => ({
        host: e.host,
        port: e.port,
        transport: e.transport,
        ...(e.techPrefix ? { techPrefix: e.techPrefix } : {}),
        ...(e.username ? { username: e.username } : {}),
        ...(e.password !== undefined && e.password !== null ? { password: e.password } : {}),
      })),
    }));
  }

  /** Settles the hold (or releases it) at the connected route, in the caller's transaction. */
  async function settle(
    tx: Db,
    c: { id: string; payer: string; operatorId: string | null; holdId: string; test: boolean },
    route: Priced | undefined,
    charge: ReturnType<typeof chargeLeg> | null,
  ): Promise<void> {
    await cdrs.settle(tx, {
      key: `apicall:${c.id}`,
      holdId: c.holdId,
      payer: c.payer,
      operatorId: c.operatorId,
      sellerId: route?.sellerId ?? null,
      charge: route ? charge : null,
      test: c.test,
      context: { reference: 'Voice call (API)', relatedEntityType: 'api_call', relatedEntityId: c.id, callId: c.id },
    });
  }

  /** The create-response fields (spec "Call", create response). */
  function createView(r: ApiCallRow): Record<string, unknown> {
    const attempts = (r.attempts as AttemptView[] | null) ?? [];
    return {
      callId: r.id,
      to: r.toNumber,
      from: r.fromNumber,
      status: r.status,
      sipResponseCode: r.sipResponseCode,
      hangupCause: r.hangupCause,
      durationSeconds: r.durationSeconds ?? 0,
      billableSeconds: r.billableSeconds ?? 0,
      cost: r.cost ?? '0.000000',
      billingIncrement: r.billingIncrement,
      startedAt: r.createdAt.toISOString(),
      completedAt: iso(r.endedAt),
      ...(r.simulated ? { simulated: true } : {}),
      ...(attempts.length > 1
        ? { routeId: r.routeId, attempts: attempts.map(({ attempt: _a, ...rest }) => rest) }
        : {}),
    };
  }

  /** The full record (spec "Call", GET /comms/calls/{id}). */
  function recordView(r: ApiCallRow): Record<string, unknown> {
    return {
      callId: r.id,
      status: r.status,
      mode: r.mode === 'async' ? 'async' : 'sync',
      to: r.toNumber,
      from: r.fromNumber,
      simulated: r.simulated,
      createdAt: r.createdAt.toISOString(),
      ringingAt: iso(r.ringingAt),
      answeredAt: iso(r.answeredAt),
      endedAt: iso(r.endedAt),
      durationSeconds: r.durationSeconds,
      billableSeconds: r.billableSeconds,
      cost: r.endedAt ? r.cost : null,
      billingIncrement: r.billingIncrement,
      sipResponseCode: r.sipResponseCode,
      hangupCause: r.hangupCause,
      hangupReason: r.endedAt ? r.hangupReason : null,
      error: r.error,
      actions: r.actions ?? null,
      gathered: r.gathered ?? null,
      routeId: r.routeId,
      attempts: (r.attempts as AttemptView[] | null) ?? [],
    };
  }

  async function mustGet(id: string): Promise<ApiCallRow> {
    const r = await repo.call(id);
    if (!r) throw notFound('Call');
    return r;
  }

  /** Engine actions: play URLs replaced by the bytes downloaded before dialling. */
  function engineActions(items: readonly ActionItem[], audio: Map<string, Uint8Array>): CallAction[] {
    return items.map((a): CallAction => {
      if (a.say !== undefined) return a.language ? { say: a.say, language: a.language } : { say: a.say };
      if (a.play !== undefined) return { play: audio.get(a.play)! };
      if (a.pause !== undefined) return { pause: a.pause };
      if (a.hangup) return { hangup: true };
      const g = a.gather!;
      return {
        gather: {
          ...(g.digits !== undefined ? { digits: g.digits } : {}),
          ...(g.timeout !== undefined ? { timeout: g.timeout } : {}),
          ...(g.finishOnKey !== undefined ? { finishOnKey: g.finishOnKey } : {}),
          ...(g.tries !== undefined ? { tries: g.tries } : {}),
          ...(g.say !== undefined ? { say: g.say } : {}),
          ...(g.play !== undefined ? { play: audio.get(g.play)! } : {}),
          ...(g.language !== undefined ? { language: g.language } : {}),
        },
      };
    });
  }

  /** Writes a live state change and its event together (outbox). */
  async function mark(
    accountId: string,
    id: string,
    status: 'ringing' | 'answered',
    routeId: string,
    at: Date,
    data: Record<string, unknown>,
  ) {
    // The row's update and its event pipelined on the transaction's connection: one round trip.
    await sql.begin((tx) => [
      callRecords.markCall(
        id,
        status === 'ringing' ? { status, routeId, ringingAt: at } : { status, routeId, answeredAt: at },
        tx,
      ),
      emit(tx, {
        accountId,
        event: status === 'ringing' ? 'call.ringing' : 'call.answered',
        data: { ...data, callId: id, status, routeId },
        at,
      }),
    ]);
  }

  /** `storedActions`: what the record shows instead of the actions (a voice one-time code never lands in it). */
  async function place(
    caller: Caller,
    input: PlaceCallInput,
    opts: {
      storedActions?: unknown[];
      idempotency?: { accountId: string; key: string } | null;
      /** An agent's transfer: the answered call is joined to this one instead of running actions. */
      bridge?: TransferBridge;
      /**
       * A dialer campaign's call: bounded by the campaign's own `concurrency` (the runner's count) and
       * the account's `[dialer] max_calls_per_account`, not by the API calls' account cap.
       */
      campaign?: boolean;
      /** The call's id, when the caller stored it before placing (a campaign's claim names its call). */
      id?: string;
    } = {},
  ): Promise<{ status: 200 | 202; data: Record<string, unknown> }> {
    const actions = input.actions ?? [];
    const problems = checkActions(actions);
    if (!isE164(input.to)) problems.unshift({ path: 'to', message: 'must be an E.164 number' });
    if (!isE164(input.from)) problems.unshift({ path: 'from', message: 'must be an E.164 number' });
    if (input.aiAgentId !== undefined && actions.length)
      problems.push({ path: 'actions', message: 'a call handed to an AI voice agent takes no actions' });
    if (problems.length) throw validationError(problems);
    let agent: AgentCallPlan | null = null;
    if (input.aiAgentId !== undefined) {
      if (!deps.agents) throw ruleError('AI voice agents are not available on this exchange');
      agent = await deps.agents.prepare(caller.accountId, input.aiAgentId);
    }
    // An agent's call ends at its maxCallSeconds.
    const maxDuration = Math.min(input.maxDuration ?? 300, agent?.maxCallSeconds ?? 3600);
    const test = caller.mode === 'test';
    // A Switch customer (a sub-account) calling through the API meets the rules its trunk calls
    // meet (docs/switch.md): its operator's do-not-call list, then its sell-rate deck. A campaign's
    // numbers were screened against that list by the dialer, a batch at a time, just before this.
    const switchOperator = caller.parentId;
    if (switchOperator && deps.dncRefuses && !opts.campaign) {
      const q = {
        operatorId: switchOperator,
        customerId: caller.accountId,
        number: input.to,
        channel: 'voice' as const,
      };
      if (await deps.dncRefuses(q)) throw doNotCall();
    }
    const sell =
      switchOperator && deps.sellRates ? await deps.sellRates.match(caller.accountId, 'voice', input.to) : null;
    // Reseller markup of a sub-account payer (none for everyone else); a sell rate replaces it.
    const markups = caller.parentId && !sell ? await deps.application.routeMarkups.terms(caller.accountId) : NO_MARKUP;
    let priced = await priceCandidates(caller, input, markups, sell);
    const markup = markups.pct;

    // Downloaded once before dialling; a bad URL fails validation and costs nothing.
    const audio = new Map<string, Uint8Array>();
    let voice: VoicePlane | null = null;
    if (!test) {
      voice = deps.voice();
      if (!voice) throw serviceUnavailable('The voice plane is not running');
      const urls = playUrls(actions);
      const bad: { path: string; message: string }[] = [];
      for (const u of new Set(urls)) {
        try {
          audio.set(u, await voice.download(u));
        } catch (err) {
          bad.push({
            path: 'actions',
            message: `play ${u.slice(0, 80)}: ${err instanceof MediaError ? err.message : 'download failed'}`,
          });
        }
      }
      if (bad.length) throw validationError(bad);
    }

    // Simulated calls take no slot: they reach no route.
    let slots: string[] = [];
    if (!test) {
      let admitted: ApiAdmission;
      try {
        admitted = await deps.admission.admitApiCall({
          payer: caller.accountId,
          ...(opts.campaign
            ? { pool: 'campaign' as const, maxApiCalls: deps.config.dialer.max_calls_per_account }
            : { maxApiCalls: deps.config.voice.max_api_calls_per_account }),
          routeIds: priced.map((p) => p.routeId),
        });
      } catch (err) {
        log.warn({ err }, 'call limiter unreachable');
        throw serviceUnavailable('The call limiter cannot be reached; try again shortly');
      }
      if (!admitted.ok) throw overLimit(admitted);
      const usable = new Set(admitted.routeIds);
      priced = priced.filter((p) => usable.has(p.routeId));
      slots = admitted.slots;
    }
    const giveBack = () =>
      deps.admission.releaseApiCall(slots).catch((err: unknown) => log.warn({ err }, 'call slots not released'));

    const id = opts.id ?? newId();
    const now = clock.now();
    const holdInput = {
      postingKey: `apicall:${id}:hold`,
      accountId: caller.accountId,
      amount: agent
        ? new Decimal(holdFor(maxDuration, priced, markup)).plus(agentFee(agent, maxDuration)).toFixed(6)
        : holdFor(maxDuration, priced, markup),
      ttlSeconds: maxDuration + 600,
      reference: 'Voice call (API)',
      relatedEntityType: 'api_call',
      relatedEntityId: id,
      callId: id,
    };
    let hold: Awaited<ReturnType<Ledger['hold']>>;
    try {
      hold = test ? await ledger.holdTest(holdInput) : await ledger.hold(holdInput);
    } catch (err) {
      await giveBack();
      throw err;
    }
    const operatorId = caller.parentId;
    const pricing = {
      markupPct: markup.toFixed(3),
      routes: Object.fromEntries(
        priced.map((p) => [
          p.routeId,
          {
            price: p.price.toFixed(6),
            sellerRate: p.sellerRate.toFixed(6),
            increment: p.increment.text,
            sellerId: p.sellerId ?? '',
            ...(p.markupPct ? { markupPct: p.markupPct.toFixed(3) } : {}),
            ...(p.interconnectionId === undefined ? {} : { interconnectionId: p.interconnectionId }),
          },
        ]),
      ),
      // A crash-reconciled call keeps the sell rate it was held at.
      ...(sell ? { sell: { rate: sell.rate.toFixed(6), increment: sell.increment.text } } : {}),
    };
    const base = { id, payer: caller.accountId, operatorId, holdId: hold.holdId, test };
    try {
      await callRecords.insertCall({
        id,
        accountId: caller.accountId,
        operatorId,
        source: 'api',
        mode: input.async ? 'async' : 'sync',
        status: 'queued',
        toNumber: input.to,
        fromNumber: input.from,
        callGroupId: id,
        holdId: hold.holdId,
        maxDurationSeconds: maxDuration,
        pricing,
        ownerNode,
        now,
        simulated: test,
        actions: opts.storedActions ?? actions,
      });
    } catch (err) {
      await giveBack();
      throw err;
    }

    if (test) {
      await simulate(base, input, priced[0]!, markup, maxDuration, now);
      return { status: 200, data: createView(await mustGet(id)) };
    }

    if (!input.async && opts.idempotency && deps.extendLease) {
      await deps
        .extendLease(opts.idempotency.accountId, opts.idempotency.key, maxDuration + SETUP_ALLOWANCE_SECONDS)
        .catch(async (err: unknown) => {
          await giveBack();
          throw err;
        });
    }
    const liveCall: LiveApiCall = { id, holdId: hold.holdId, slots, maxDuration, current: null, stopped: false };
    live.set(id, liveCall);
    const done = runLive(
      voice!,
      liveCall,
      base,
      input,
      priced,
      markup,
      engineActions(actions, audio),
      agent,
      opts.bridge ?? null,
    )
      .catch((err: unknown) => {
        log.error({ err, callId: id }, 'api call failed');
        return undefined;
      })
      .finally(async () => {
        live.delete(id);
        await giveBack();
        running.delete(done);
      });
    running.add(done);
    liveCall.finished = done;
    if (input.async) {
      return {
        status: 202,
        data: {
          callId: id,
          to: input.to,
          from: input.from,
          status: 'ringing',
          mode: 'async',
          actions: actions.length,
          statusUrl: `/api/v1/comms/calls/${id}`,
          startedAt: now.toISOString(),
        },
      };
    }
    await done;
    return { status: 200, data: createView(await mustGet(id)) };
  }

  /** Test keys: no traffic, no actions; one first billing block against test credit. */
  async function simulate(
    base: { id: string; payer: string; operatorId: string | null; holdId: string; test: boolean },
    input: PlaceCallInput,
    route: Priced,
    markup: Decimal,
    maxDuration: number,
    startedAt: Date,
  ) {
    const duration = Math.min(maxDuration, route.increment.first);
    const charge = chargeLeg(route, duration, markup);
    const endedAt = clock.now();
    const answeredAt = new Date(Math.max(startedAt.getTime(), endedAt.getTime() - duration * 1000));
    const attempts: AttemptView[] = [
      { attempt: 1, routeId: route.routeId, status: 'answered', sipResponseCode: 200, hangupCause: 'NORMAL_CLEARING' },
    ];
    await sql.begin(async (tx) => {
      await settle(tx, base, route, charge);
      // The CDR, the call's row and its event pipelined on the transaction's connection: one round trip.
      await Promise.all([
        cdrs.insertCdrs(tx, [
          cdr(base, input, route, attempts[0]!, charge, duration, answeredAt, endedAt, startedAt, true),
        ]),
        callRecords.finishCall(tx, base.id, {
          status: 'completed',
          routeId: route.routeId,
          sipCode: 200,
          hangupCause: 'NORMAL_CLEARING',
          hangupReason: 'Simulated call (test key): nothing was dialled',
          durationSeconds: duration,
          billableSeconds: charge.billableSeconds,
          cost: charge.total,
          billingIncrement: route.increment.text,
          ratePerMinute: charge.ratePerMinute,
          attempts,
          answeredAt,
          endedAt,
          gathered: [],
        }),
        emit(tx, {
          accountId: base.payer,
          event: 'call.completed',
          data: completedData(base.id, input, 'completed', route.routeId, attempts, duration, charge, true),
          at: endedAt,
        }),
      ]);
    });
  }

  function cdr(
    base: { id: string; payer: string; operatorId: string | null },
    input: PlaceCallInput,
    route: Priced,
    a: AttemptView,
    charge: ReturnType<typeof chargeLeg> | null,
    duration: number,
    answeredAt: Date | null,
    endedAt: Date,
    startedAt: Date,
    simulated: boolean,
  ): CdrInsert {
    const connected = a.status === 'answered' && charge !== null;
    return buildCdr({
      accountId: base.payer,
      operatorId: base.operatorId,
      sellerId: route.sellerId,
      callUuid: base.id,
      callGroupId: base.id,
      kind: 'voice',
      source: 'api',
      routeId: route.routeId,
      fromNumber: input.from,
      toNumber: input.to,
      cli: input.from,
      status: connected ? 'completed' : a.status,
      sipCode: a.sipResponseCode,
      hangupCause: a.hangupCause,
      durationSeconds: connected ? duration : 0,
      segments: null,
      pddMs: null,
      mediaMode: null,
      billed: connected ? voiceBilled(charge) : null,
      agreement: connected ? agreementOf(route) : undefined,
      simulated,
      answeredAt: connected ? answeredAt : null,
      endedAt,
      createdAt: startedAt,
    });
  }

  function completedData(
    id: string,
    input: PlaceCallInput,
    status: string,
    routeId: string | null,
    attempts: AttemptView[],
    duration: number,
    charge: ReturnType<typeof chargeLeg> | null,
    simulated: boolean,
  ): Record<string, unknown> {
    return {
      callId: id,
      to: input.to,
      from: input.from,
      status,
      routeId,
      durationSeconds: duration,
      billableSeconds: charge?.billableSeconds ?? 0,
      cost: charge?.total ?? '0.000000',
      ...(attempts.length > 1 ? { attempts: attempts.map(({ attempt: _a, ...rest }) => rest) } : {}),
      ...(simulated ? { simulated: true } : {}),
    };
  }

  async function runLive(
    voice: VoicePlane,
    lc: LiveApiCall,
    base: { id: string; payer: string; operatorId: string | null; holdId: string; test: boolean },
    input: PlaceCallInput,
    priced: Priced[],
    markup: Decimal,
    actions: CallAction[],
    agent: AgentCallPlan | null = null,
    bridgeTo: TransferBridge | null = null,
  ): Promise<ApiCallEnd> {
    const startedAt = clock.now();
    let conversation: unknown = null;
    let transfer: { callId: string | null; agentLeftAt: Date; bridged: boolean } | null = null;
    // The caller hanging up ends the transfer leg, ringing or bridged.
    void bridgeTo?.call.ended.then(() => {
      lc.stopped = true;
      void lc.current?.hangup();
    });
    const attempts: AttemptView[] = [];
    const gathered: GatherResult[] = [];
    let rang = false;
    let connected: { route: Priced; end: CallEnd } | null = null;
    let last: { route: Priced; end: CallEnd; leg: LegOutcome | undefined } | null = null;
    const eventBase = { to: input.to, from: input.from };
    // Live-state writes run beside the call; the final transaction waits for them so events keep their order.
    let chain: Promise<unknown> = Promise.resolve();
    const inOrder = (what: string, fn: () => Promise<unknown>): void => {
      chain = chain.then(fn).catch((err: unknown) => log.warn({ err, callId: base.id }, `${what} not recorded`));
    };
    for (let i = 0; i < priced.length && !lc.stopped; i++) {
      const route = priced[i]!;
      const endpoint = route.endpoints[0]!;
      const legId = `${base.id}.${i + 1}`;
      const call = voice.engine.originate({
        callId: legId,
        to: input.to,
        from: input.from,
        endpoint,
        maxDurationSec: lc.maxDuration,
        language: input.language ?? 'en',
      });
      lc.current = call;
      let ringing = false;
      let script: Promise<unknown> = Promise.resolve();
      call.on('ringing', () => {
        ringing = true;
        if (rang) return;
        rang = true;
        const at = clock.now();
        inOrder('ringing', () => mark(base.payer, base.id, 'ringing', route.routeId, at, eventBase));
      });
      call.on('answered', (at) => {
        inOrder('answer', () =>
          mark(base.payer, base.id, 'answered', route.routeId, at, { ...eventBase, answeredAt: at.toISOString() }),
        );
        if (bridgeTo) {
          const bridge = bridgeCalls(bridgeTo.call, call);
          bridgeTo.bridged();
          script = call.ended.then(() => bridge.close());
          return;
        }
        if (agent) {
          script = agent
            .converse(call)
            .then(async (r) => {
              conversation = r;
              if (r.transferTo && call.state === 'answered') {
                const t = { callId: null as string | null, agentLeftAt: clock.now(), bridged: false };
                transfer = t;
                t.callId = await placeTransfer(base, input, lc, at, call, r.transferTo, () => {
                  t.bridged = true;
                });
                // The transfer leg hangs this call up when it ends.
                if (t.callId) return;
              }
              return call.hangup();
            })
            .catch((err: unknown) => {
              log.warn({ err, callId: base.id }, 'AI agent conversation failed');
              return call.hangup();
            });
          return;
        }
        script = call
          .runActions(actions, {
            onGathered: (g) => {
              gathered.push(g);
              if (input.async) {
                inOrder('gather', () =>
                  emit(sql, { accountId: base.payer, event: 'call.gathered', data: { callId: base.id, ...g } }),
                );
              }
            },
          })
          .then(() => call.hangup())
          .catch((err: unknown) => {
            log.warn({ err, callId: base.id }, 'call actions failed');
            return call.hangup();
          });
      });
      const end = await call.ended;
      await script;
      const leg = legOutcomes.get(legId);
      legOutcomes.delete(legId);
      attempts.push({
        attempt: i + 1,
        routeId: route.routeId,
        status: attemptStatus(end),
        sipResponseCode: end.answeredAt ? 200 : end.sipStatus,
        hangupCause: causeCode(end),
      });
      last = { route, end, leg };
      if (end.answeredAt) {
        connected = { route, end };
        break;
      }
      const retry =
        input.routeId === undefined &&
        shouldFailover({
          sipStatus: end.sipStatus,
          noResponse: leg?.noResponse === true,
          ringing: ringing || leg?.ringing === true,
        });
      if (!retry) break;
    }
    lc.current = null;
    // A transfer that failed, or whose target hung up, ends the caller's call too.
    if (bridgeTo) await bridgeTo.call.hangup();
    await chain;
    const endedAt = clock.now();
    const end = connected?.end ?? last?.end ?? null;
    // A call cut at its maximum ends a few milliseconds after it (timer and hang-up): it is billed
    // the maximum, never the second those milliseconds would start.
    const duration = connected?.end.answeredAt
      ? Math.min(
          lc.maxDuration,
          Math.max(0, Math.ceil((connected.end.endedAt.getTime() - connected.end.answeredAt.getTime()) / 1000)),
        )
      : 0;
    const charge = connected ? chargeLeg(connected.route, duration, markup) : null;
    const status = connected ? 'completed' : end ? attemptStatus(end) : 'failed';
    const leg = connected ? undefined : last?.leg;
    const finalRoute = connected?.route ?? last?.route ?? null;
    const ended: ApiCallEnd = {
      status,
      sipCode: connected ? 200 : (end?.sipStatus ?? null),
      hangupCause: end ? causeCode(end) : 'NORMAL_UNSPECIFIED',
      durationSeconds: duration,
      cost: charge?.total ?? '0.000000',
      endedAt,
    };
    await sql.begin(async (tx) => {
      const rows = attempts.map((a) =>
        cdr(
          base,
          input,
          priced.find((p) => p.routeId === a.routeId)!,
          a,
          a.status === 'answered' ? charge : null,
          duration,
          connected?.end.answeredAt ?? null,
          endedAt,
          startedAt,
          false,
        ),
      );
      // The money: the settle locks the payer's ledger row until the commit.
      const pay = async () => {
        await settle(tx, base, connected?.route, charge);
        if (agent && connected) {
          // The agent fee is charged with the call, after the settle freed the hold that covered it.
          // After a transfer the agent is gone: its fee covers the time until it handed the caller over.
          const t = transfer as { callId: string | null; agentLeftAt: Date; bridged: boolean } | null;
          const answeredAt = connected.end.answeredAt;
          const agentSeconds =
            t?.callId && answeredAt
              ? Math.min(duration, Math.max(0, Math.ceil((t.agentLeftAt.getTime() - answeredAt.getTime()) / 1000)))
              : duration;
          const fee = agentFee(agent, agentSeconds);
          if (new Decimal(fee).gt(0)) {
            await ledger.charge(
              {
                postingKey: `apicall:${base.id}:agent-fee`,
                accountId: base.payer,
                sellerId: null,
                amount: fee,
                reference: 'AI voice agent',
                relatedEntityType: 'api_call',
                relatedEntityId: base.id,
                callId: base.id,
              },
              tx,
            );
          }
          await agent.store(tx, {
            callId: base.id,
            accountId: base.payer,
            conversation,
            durationSeconds: agentSeconds,
            fee,
            transfer: t ? { callId: t.callId, bridged: t.bridged } : null,
            startedAt: connected.end.answeredAt ?? startedAt,
            endedAt,
          });
        }
      };
      // Every other call and posting of the payer waits on that lock: the call's own rows are sent
      // first and the settle behind them in one pipeline, so the lock is held for the commit's round
      // trip rather than for four more statements' (a campaign's calls, all of one payer, queued on it).
      await Promise.all([
        cdrs.insertCdrs(tx, rows),
        callRecords.finishCall(tx, base.id, {
          status,
          routeId: finalRoute?.routeId ?? null,
          sipCode: ended.sipCode,
          hangupCause: ended.hangupCause,
          hangupReason: end ? reasonWords(end, leg) : 'The call was stopped before it was placed',
          durationSeconds: duration,
          billableSeconds: charge?.billableSeconds ?? 0,
          cost: ended.cost,
          billingIncrement: (connected?.route ?? finalRoute)?.increment.text ?? null,
          ratePerMinute: charge?.ratePerMinute ?? null,
          attempts,
          answeredAt: connected?.end.answeredAt ?? null,
          endedAt,
          gathered,
          error: end ? null : 'The call was stopped before it was placed',
        }),
        emit(tx, {
          accountId: base.payer,
          event: 'call.completed',
          data: completedData(base.id, input, status, finalRoute?.routeId ?? null, attempts, duration, charge, false),
          at: endedAt,
        }),
        pay(),
      ]);
    });
    return ended;
  }

  /**
   * An agent's `transfer_call`: a new call from the caller's `from` to the target over the account's
   * routes (failover, hold and billing as any API call), joined to the caller once answered. The
   * transfer leg may last what is left of the caller's call. Returns its id, or null when it could
   * not be placed (no route, no credit, over a limit): then the caller's call ends.
   */
  async function placeTransfer(
    base: { payer: string; operatorId: string | null; id: string },
    input: PlaceCallInput,
    lc: LiveApiCall,
    answeredAt: Date,
    call: EngineCall,
    to: string,
    bridged: () => void,
  ): Promise<string | null> {
    const left = lc.maxDuration - Math.ceil((clock.now().getTime() - answeredAt.getTime()) / 1000);
    if (left < 1) return null;
    try {
      const placed = await place(
        { accountId: base.payer, parentId: base.operatorId, mode: 'live' },
        { to, from: input.from, async: true, maxDuration: left, language: input.language },
        { bridge: { call, bridged } },
      );
      return placed.data['callId'] as string;
    } catch (err) {
      log.warn({ err, callId: base.id }, 'agent transfer could not be placed');
      return null;
    }
  }

  /** POST /comms/voice-otp: an async call that reads the digits aloud `repeat` times, then hangs up. */
  async function voiceOtp(caller: Caller, input: VoiceOtpInput) {
    const language = input.language ?? 'en';
    const code = input.code ?? String(randomInt(0, 1_000_000)).padStart(6, '0');
    const repeat = input.repeat ?? 2;
    const text = `${OTP_PHRASE[language](input.brand?.trim() || null)} ${code.split('').join(', ')}.`;
    const actions: ActionItem[] = [{ pause: 1 }];
    for (let i = 0; i < repeat; i++) actions.push({ say: text }, { pause: 1 });
    actions.push({ hangup: true });
    const from = deps.config.voice.otp_caller_id || input.to;
    const placed = await place(
      caller,
      { to: input.to, from, async: true, language, maxDuration: 120, actions },
      {
        storedActions: actions.map((a) => (a.say !== undefined ? { say: '<voice one-time code>' } : a)),
      },
    );
    const callId = placed.data['callId'] as string;
    const id = newId();
    await repo.insertVoiceOtp({
      id,
      accountId: caller.accountId,
      callId,
      toNumber: input.to,
      language,
      codeLength: code.length,
      repeat,
      codeHash: createHash('sha256').update(`${id}:${code}`).digest('hex'),
      createdAt: clock.now(),
    });
    return {
      voiceOtpId: id,
      callId,
      status: 'initiated' as const,
      to: input.to,
      language,
      codeLength: code.length,
      repeat,
    };
  }

  /**
   * An agent's `transfer_call` on a call this module did not place (a rented number's inbound call,
   * answered by the exchange): the transfer leg is an async call of `accountId` from `from` to `to`
   * over its routes (failover, hold, CDR, settlement and `call.*` events as any API call), joined to
   * `call` once answered; either side hanging up ends the other. Resolves with the leg's call id, or
   * null when it could not be placed (the caller should then be hung up).
   */
  async function transferCall(o: {
    accountId: string;
    call: EngineCall;
    from: string;
    to: string;
    maxDuration: number;
    bridged(): void;
  }): Promise<string | null> {
    if (o.maxDuration < 1) return null;
    try {
      const account = await deps.accounts.getAccount(o.accountId);
      if (!account || account.status !== 'active') throw ruleError('the account cannot place calls');
      const placed = await place(
        { accountId: o.accountId, parentId: account.parentId, mode: 'live' },
        { to: o.to, from: o.from, async: true, maxDuration: o.maxDuration },
        { bridge: { call: o.call, bridged: o.bridged } },
      );
      return placed.data['callId'] as string;
    } catch (err) {
      log.warn({ err, callId: o.call.callId }, 'agent transfer could not be placed');
      return null;
    }
  }

  return {
    place,
    voiceOtp,
    transferCall,
    /** Told by the SIP dialer how each leg ended (the failover rule needs "no response" and "ringing"). */
    noteLeg(outcome: LegOutcome): void {
      legOutcomes.set(outcome.callId, outcome);
    },
    /**
     * The same engine and SIP stack for calls other modules place themselves (route checks), so
     * there is one SIP plane; null while it is not listening. `takeLeg` hands over (and forgets)
     * how one of their legs ended.
     */
    engine: (): CallEngine | null => deps.voice()?.engine ?? null,
    takeLeg(callId: string): LegOutcome | undefined {
      const o = legOutcomes.get(callId);
      legOutcomes.delete(callId);
      return o;
    },
    /** GET /comms/calls/{id}: the caller's own call, or one of its sub-accounts' (not the other way round). */
    async get(viewer: { accountId: string }, id: string): Promise<Record<string, unknown>> {
      const r = await repo.call(id);
      if (!r || (r.accountId !== viewer.accountId && r.operatorId !== viewer.accountId)) throw notFound('Call');
      const agent = r.status === 'completed' ? await deps.agents?.conversation(r.accountId, id) : null;
      return { ...recordView(r), ...(agent ? { aiAgent: agent } : {}) };
    },
    history: (
      accountId: string,
      q: { from?: string | undefined; to?: string | undefined; cursor?: string | undefined; limit: number },
    ) => repo.history(accountId, { ...q, limit: q.limit + 1 }),
    liveCallIds: () => [...live.keys()],
    /**
     * Resolves once this daemon's live call is settled and its record final (null: not live here),
     * so a caller of `place` learns the end at once instead of polling the record; with how it
     * ended, which the record now holds (undefined: its writes failed, read the record).
     */
    whenFinished: (id: string): Promise<ApiCallEnd | undefined> | null => live.get(id)?.finished ?? null,
    /** Keeps live calls out of the orphan reconcile and their holds from the sweeper. */
    async heartbeat() {
      const ids = [...live.keys()];
      await callRecords.heartbeat(ids, clock.now());
      for (const c of live.values()) await ledger.extendHold(c.holdId, c.maxDuration + 600).catch(() => false);
    },
    /** Ends every live call (shutdown) and waits for their settlements. */
    async stop() {
      for (const c of live.values()) {
        c.stopped = true;
        await c.current?.hangup().catch(() => undefined);
      }
      await Promise.allSettled([...running]);
    },
  };
}

export type ApiCallsService = ReturnType<typeof createApiCallsService>;
