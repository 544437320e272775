/**
 * SMS sending (spec "SMS message", "Voice and SMS"): validation, segments, network look-up,
 * routing, the hold → settle / release money path, supplier submission over SMPP binds kept per
 * route, receipts (delivered, failed and refunded), receipt expiry, and test-key simulation.
 */
import type { SellRateLookup } from '../switch/customers/deck-cache.js';
import { Decimal } from 'decimal.js';
import type { Logger } from 'pino';
import type { Db, Sql } from '../../db/connection.js';
import {
  AppError,
  fromSqlState,
  isLedgerRefusal,
  notFound,
  ruleError,
  validationError,
  type ErrorDetail,
} from '../../http/errors.js';
import type { Ledger } from '../../ledger/index.js';
import { isRefusal, refusalError, type HoldInput, type HoldResult, type Refusal } from '../../ledger/ledger.js';
import {
  checkSender,
  countSegments,
  isDelivered,
  isFailed,
  networkFor,
  supplierIdKeys,
  SMPP_STATUS,
  type HttpReceipt,
  type NetworkInfo,
  type MobileOriginated,
  type ReceiptStat,
  type SupplierReceipt,
} from '../../messaging/index.js';
import type { Clock } from '../../platform/clock.js';
import { isE164 } from '../../platform/e164.js';
import { newId, sha256Hex } from '../../platform/ids.js';
import { toMoney } from '../../rating/index.js';
import { emit, emitMany, type EmitInput } from '../../webhooks/emit.js';
import type { ApplicationService } from '../application/service.js';
import {
  agreementOf,
  buildCdr,
  NO_MARKUP,
  routeMarkup,
  withMarkup,
  type CdrInsert,
  type CdrsService,
  type Settled,
  type Settlement,
} from '../cdrs/index.js';
import type { Candidate, Routing } from '../marketplace/routing/routing.js';
import { createSupplierGateway, type GatewayOptions, type GatewayOutcome, type SupplierGateway } from './gateway.js';
import {
  createSmsRepo,
  storedMessage,
  type HistoryRow,
  type MessageRow,
  type Receipt,
  type StoredMessage,
} from './repo.js';
import { createTxBatcher, JobRefused } from './tx-batcher.js';
import { sellPriced } from './sell-price.js';

export type Strategy = 'cheapest' | 'best_quality' | 'balanced';

export interface SendInput {
  to: string;
  from: string;
  message: string;
  routeId?: string | undefined;
  strategy?: Strategy | undefined;
  /** SMPP input: the ids the earlier parts of a concatenated submit were answered with (each gets a receipt). */
  customerPartIds?: string[] | undefined;
  /** The message's id when the caller recorded it first (a verification names its SMS); a new UUIDv7 otherwise. */
  messageId?: string | undefined;
}

/** What a caller of `send` writes with the message. */
export interface SendOptions {
  /**
   * The caller's own rows, written in the transaction that records the message and takes its
   * hold: one commit for both (a verification and the SMS carrying its code). Returns an error to
   * refuse the send having written nothing (`send` throws it; nothing is charged or sent); a
   * statement's failure is thrown. It may run twice (a batch that rolls back runs each job again).
   */
  record?: (tx: Db) => Promise<AppError | null>;
}

export interface Sender {
  accountId: string;
  parentId: string | null;
  mode: 'live' | 'test';
  /** `api` (REST) or `smpp` (customer bind); decides the history's relatedEntityType. */
  source?: 'api' | 'smpp';
}

export interface SendResult {
  messageId: string;
  to: string;
  from: string;
  status: 'sent' | 'failed';
  segments: number;
  cost: string;
  submittedAt: string;
  network: { mccMnc: string | null; name: string | null; networkPriceApplied: boolean };
  errorCode?: string;
  simulated?: true;
}

export type { SupplierGateway } from './gateway.js';

/** A final receipt state of a customer SMPP message, sent back to the customer's bind (after commit). */
export interface FinalReceipt {
  message: MessageRow;
  stat: ReceiptStat;
  err: string;
  at: Date;
}

export interface SmsOptions {
  /** A sent message with no final receipt after this (on a route that returns receipts) becomes EXPIRED. Default 48 h. */
  receiptTtlMs?: number;
  /** Candidates tried in order when a route refuses for a reason that is not the message's. Default 3. */
  maxRoutes?: number;
  /** Supplier bind settings (defaults: 100 TPS, window 10, 10 s response timeout). */
  bind?: GatewayOptions['bind'];
  /** HTTPS supplier delivery settings (default 10 s budget, system CAs only). */
  http?: GatewayOptions['http'];
  /** Most sends whose money transactions share one commit. Default 64. */
  maxBatch?: number;
  /** The binds' clock (rate buckets and timeouts need a running one); defaults to the service's. */
  bindClock?: Clock;
  /** The supplier-target guard every bind and HTTPS submit goes through. */
  guard?: GatewayOptions['guard'];
}

export interface SmsDeps {
  sql: Sql;
  log: Logger;
  clock: Clock;
  ledger: Ledger;
  routing: Routing;
  application: ApplicationService;
  /** Settlement and CDRs of sent messages; route sellers. */
  cdrs: CdrsService;
  options?: SmsOptions;
  /** Replaces the SMPP bind pool (tests, or another transport). */
  gateway?: SupplierGateway;
  /** A mobile-originated message a route's SMSC delivered (to a rented number); resolves to the SMPP status to answer. */
  onMobileOriginated?: (routeId: string, mo: MobileOriginated) => Promise<number>;
  /** Switch customers' sell-rate decks (src/modules/switch/customers); absent, sub-accounts pay base plus markup. */
  sellRates?: SellRateLookup;
  /** The Switch DNC: true when a customer's message to `number` is refused because its operator lists it. */
  dncRefuses?: (q: { operatorId: string; customerId: string; number: string; channel: 'sms' }) => Promise<boolean>;
}

/** Refusals that are the message's fault: another route would refuse them too. */
const MESSAGE_FAULT = new Set<number>([
  SMPP_STATUS.ESME_RINVDSTADR,
  SMPP_STATUS.ESME_RINVSRCADR,
  SMPP_STATUS.ESME_RINVDCS,
]);
const MESSAGE_FAULT_REASONS = /^(invalid_sender|invalid_destination|unencodable_text)/;
/** Error reasons after which the supplier may have taken the message: never resent elsewhere. */
const AMBIGUOUS_REASONS = new Set([
  'response_timeout',
  'closed',
  'socket_error',
  'unbound_by_smsc',
  'enquire_link_timeout',
]);
const PENDING_RECEIPT_MS = 10 * 60_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A receipt from any channel; `routeId` confines matching to one route's messages (HTTPS callbacks). */
export type ChannelReceipt = SupplierReceipt & { routeId?: string };

/** The keys a message's receipts are matched by: each part's id in every form (supplierIdKeys), once. */
function matchKeysOf(ids: readonly string[]): string[] {
  // One part, the usual message: its keys are already distinct.
  if (ids.length === 1) return supplierIdKeys(ids[0]!);
  return [...new Set(ids.flatMap((sid) => supplierIdKeys(sid)))];
}

function receiptErrorCode(stat: ReceiptStat): string {
  if (stat === 'EXPIRED') return 'EXPIRED';
  if (stat === 'REJECTD') return 'REJECTED';
  return 'UNDELIVERABLE';
}

interface Priced {
  c: Candidate;
  sellerId: string | null;
  base: Decimal;
  seller: Decimal;
  markup: Decimal;
  total: Decimal;
}

export function createSmsService(deps: SmsDeps) {
  const { sql, log, clock, ledger } = deps;
  const repo = createSmsRepo(sql);
  const { cdrs } = deps;
  const opts = deps.options ?? {};
  const receiptTtlMs = opts.receiptTtlMs ?? 48 * 3600_000;
  const maxRoutes = opts.maxRoutes ?? 3;
  /** A route's seller never changes, so it is read once per route and process. */
  const sellerOf = new Map<string, string>();
  // Rows of the send path go in one statement per batch (see tx-batcher), and so do the holds and
  // settlements of a batch (ledger_hold_many, ledger_settle_many: the payer's row locked once per
  // batch, not per message). One item alone takes the single-item function, as before.
  // A message row is written once, with its settlement or release: the hold before the submit
  // names the message (relatedEntityId), and a send whose daemon dies between the two leaves that
  // hold to the sweeper, as it left a queued row no one ever finished before.
  const money = createTxBatcher<
    {
      message: StoredMessage;
      cdr: CdrInsert;
      event: EmitInput;
    },
    {
      hold: { in: HoldInput; out: HoldResult | Refusal };
      settle: { in: Settlement; out: Settled | Refusal };
    }
  >(sql, {
    maxBatch: opts.maxBatch ?? 64,
    log,
    writers: {
      message: (tx, rows) => repo.insertMany(rows, tx),
      cdr: (tx, rows) => cdrs.insertCdrs(tx, rows),
      event: (tx, rows) => emitMany(tx, rows),
    },
    calls: {
      hold: async (tx, items) => (items.length === 1 ? [await ledger.hold(items[0]!, tx)] : ledger.holdMany(items, tx)),
      // With a reseller's margin on each of its sub-accounts' messages, charged after the settle
      // that released the hold paying it.
      settle: (tx, items) => cdrs.settleMany(tx, items),
    },
  });
  /** A refused batch item (posted nothing) fails its own send only, with the single function's SVC01 or SVC04 error. */
  const paid = <T>(r: T | Refusal): T => {
    if (isRefusal(r)) throw new JobRefused(refusalError(r));
    return r;
  };
  /**
   * Receipts that named no stored part yet (the send is still committing), retried after each send;
   * `storedId`: an HTTPS receipt also kept in sms_early_receipts (its supplier was answered 200).
   */
  let pending: { r: ChannelReceipt; at: number; storedId?: string }[] = [];
  // Stored early receipts this daemon holds, from storing (or taking back) until their row is
  // deleted. A drain takes its items out of `pending` while it tries them, so `pending` alone
  // would let a take-back in that window load them a second time.
  const heldEarly = new Set<string>();
  /**
   * Sends committed so far. A receipt that missed its part while a send committed may have been
   * looked up just before the commit and queued just after that send's retry ran: seeing the count
   * move across its look-up, it is retried at once instead of waiting for the next send or the sweep.
   */
  let sendsCommitted = 0;
  let receiptSink: ((f: FinalReceipt) => void) | null = null;
  const toSink = (f: FinalReceipt | null) => {
    if (!f || !receiptSink || f.message.source !== 'smpp') return;
    try {
      receiptSink(f);
    } catch (err) {
      log.warn({ err, messageId: f.message.id }, 'sms receipt sink failed');
    }
  };
  const gateway =
    deps.gateway ??
    createSupplierGateway({
      log: log.child({ plane: 'sms-out' }),
      clock: opts.bindClock ?? clock,
      options: {
        ...(opts.bind ? { bind: opts.bind } : {}),
        ...(opts.http ? { http: opts.http } : {}),
        ...(opts.guard ? { guard: opts.guard } : {}),
      },
      onReceipt: (r) => void onReceipt(r),
      ...(deps.onMobileOriginated ? { onMobileOriginated: deps.onMobileOriginated } : {}),
    });

  function validate(input: SendInput): { to: string; from: string; problems: ErrorDetail[] } {
    const problems: ErrorDetail[] = [];
    const to = input.to.trim();
    if (!isE164(to)) problems.push({ path: 'to', message: 'must be an E.164 number' });
    const sender = checkSender(input.from);
    if (!sender.ok)
      problems.push({
        path: 'from',
        message: `invalid sender (${sender.reason.replace(/_/g, ' ')}): numeric up to 15 digits, or up to 11 letters, digits and spaces with at least one letter`,
      });
    if (input.message.length === 0) problems.push({ path: 'message', message: 'must not be empty' });
    return { to: to.replace(/^\+/, ''), from: sender.ok ? sender.value : input.from, problems };
  }

  async function price(
    s: Sender,
    input: SendInput,
    toDigits: string,
    network: NetworkInfo | null,
    segments: number,
  ): Promise<Priced[]> {
    const candidates = await deps.routing.candidatesFor({
      accountId: s.parentId ?? s.accountId,
      number: toDigits,
      type: 'sms',
      mccMnc: network?.mccMnc ?? null,
      // A numeric sender rates by origin where the sheet has origin rows; an alphanumeric one has none.
      from: input.from,
      ...(input.routeId !== undefined ? { routeId: input.routeId } : {}),
      ...(input.strategy !== undefined ? { strategy: input.strategy } : {}),
    });
    // A Switch customer's sell rate per message replaces the markup; no route is taken at a loss on it.
    const sell = s.parentId && deps.sellRates ? await deps.sellRates.match(s.accountId, 'sms', toDigits) : null;
    const affordable = sell ? candidates.filter((c) => c.price.lte(sell.rate)) : candidates;
    if (sell && candidates.length > 0 && affordable.length === 0)
      throw ruleError("No SMS route costs less than the customer's sell rate");
    const usable = affordable.slice(0, input.routeId !== undefined ? 1 : maxRoutes);
    if (usable.length === 0) throw ruleError('No purchased or own SMS route covers this number');
    const missing = usable.map((c) => c.routeId).filter((r) => !sellerOf.has(r));
    if (missing.length > 0) for (const t of await cdrs.routeTerms(missing)) sellerOf.set(t.id, t.sellerId);
    // Reseller markup of a sub-account sender, per route where it has one (none for everyone else).
    const markups = s.parentId && !sell ? await deps.application.routeMarkups.terms(s.accountId) : NO_MARKUP;
    return usable.map((c) => {
      const base = c.price.times(segments).toDecimalPlaces(6, Decimal.ROUND_HALF_UP);
      const seller = Decimal.min(c.sellerRate.times(segments).toDecimalPlaces(6, Decimal.ROUND_HALF_UP), base);
      const { markup, total } = sell
        ? sellPriced(base, sell.rate, segments)
        : withMarkup(base, routeMarkup(markups, c.routeId) ?? markups.pct);
      return { c, sellerId: sellerOf.get(c.routeId) ?? null, base, seller, markup, total };
    });
  }

  const view = (m: {
    id: string;
    to: string;
    from: string;
    status: 'sent' | 'failed';
    segments: number;
    cost: string;
    at: Date;
    network: NetworkInfo | null;
    networkPriceApplied: boolean;
    errorCode?: string | null;
    simulated: boolean;
  }): SendResult => ({
    messageId: m.id,
    to: `+${m.to}`,
    from: m.from,
    status: m.status,
    segments: m.segments,
    cost: m.cost,
    submittedAt: m.at.toISOString(),
    network: {
      mccMnc: m.network?.mccMnc ?? null,
      name: m.network?.name ?? null,
      networkPriceApplied: m.networkPriceApplied,
    },
    ...(m.errorCode ? { errorCode: m.errorCode } : {}),
    ...(m.simulated ? { simulated: true as const } : {}),
  });

  async function send(s: Sender, input: SendInput, opts: SendOptions = {}): Promise<SendResult> {
    const { to, from, problems } = validate(input);
    if (problems.length) throw validationError(problems);
    // A Switch customer's message to a number its Switch lists (docs/switch.md "DNC"): nothing charged or sent.
    if (s.parentId && deps.dncRefuses) {
      const q = { operatorId: s.parentId, customerId: s.accountId, number: to, channel: 'sms' as const };
      if (await deps.dncRefuses(q)) throw ruleError('The number is on the do-not-call list: the message is not sent');
    }
    const seg = countSegments(input.message);
    const network = networkFor(to);
    const priced = await price(s, input, to, network, seg.segments);
    const source = s.source ?? 'api';
    const ctx = { reference: 'SMS', relatedEntityType: source === 'smpp' ? 'smpp_sms' : 'api_sms' };
    const id = input.messageId ?? newId();
    const queuedAt = clock.now();
    const test = s.mode === 'test';
    const base = {
      id,
      accountId: s.accountId,
      operatorId: s.parentId,
      source,
      toNumber: to,
      fromSender: from,
      textSha256: sha256Hex(input.message),
      textUnits: seg.units,
      encoding: seg.encoding,
      dataCoding: seg.dataCoding,
      segments: seg.segments,
      mccMnc: network?.mccMnc ?? null,
      networkName: network?.name ?? null,
      registeredDelivery: !test,
      simulated: test,
      queuedAt,
      customerPartIds: input.customerPartIds ?? [],
    };

    if (test) {
      // Simulated: nothing leaves the exchange; test credit pays the platform, no seller is credited.
      const p = priced[0]!;
      const total = toMoney(p.total);
      await sql.begin(async (tx) => {
        const refused = opts.record ? await opts.record(tx) : null;
        if (refused) throw refused;
        const charge = await ledger.chargeTest(
          {
            postingKey: `sms:${id}:charge`,
            accountId: s.accountId,
            amount: toMoney(p.seller),
            fee: toMoney(p.total.minus(p.seller)),
            ...ctx,
            relatedEntityId: id,
          },
          tx,
        );
        // The row and its event pipelined on the transaction's connection: one round trip.
        await Promise.all([
          repo.insertMany(
            [
              storedMessage(base, {
                status: 'sent',
                routeId: p.c.routeId,
                networkPriceApplied: p.c.rateBasis === 'network',
                pricePerSegment: toMoney(p.c.price),
                cost: total,
                chargePostingId: charge.postingId,
                sentAt: queuedAt,
              }),
            ],
            tx,
          ),
          emit(tx, {
            accountId: s.accountId,
            event: 'sms.sent',
            at: queuedAt,
            data: sentEvent(id, to, from, seg.segments, total, queuedAt, true),
          }),
        ]);
      });
      return view({
        id,
        to,
        from,
        status: 'sent',
        segments: seg.segments,
        cost: total,
        at: queuedAt,
        network,
        networkPriceApplied: priced[0]!.c.rateBasis === 'network',
        simulated: true,
      });
    }

    // The hold covers the dearest candidate, so a failover never needs more money.
    const holdAmount = toMoney(priced.reduce((m, p) => (p.total.gt(m) ? p.total : m), new Decimal(0)));
    // The hold, pipelined with other sends' in a batch; the message row is written with its outcome.
    const holdId = await money.run(s.accountId, async (tx, _put, call) => {
      const refused = opts.record ? await opts.record(tx) : null;
      if (refused) throw new JobRefused(refused);
      const held = await call('hold', {
        postingKey: `sms:${id}:hold`,
        accountId: s.accountId,
        amount: holdAmount,
        ttlSeconds: 3600,
        ...ctx,
        relatedEntityId: id,
      });
      // The caller's rows are written by now: a refused hold takes the batch back (each job then
      // runs alone), so they go with it rather than being committed without their message.
      if (opts.record && isRefusal(held)) throw refusalError(held);
      return paid(held).holdId;
    });

    let failure: { routeId: string | null; code: string; detail: string } = {
      routeId: null,
      code: 'NO_ENDPOINT',
      detail: 'no route',
    };
    for (const p of priced) {
      let outcome: GatewayOutcome;
      try {
        outcome = await gateway.submit(
          { routeId: p.c.routeId, delivery: p.c.smsDelivery },
          { to, from, text: input.message, reference: id },
        );
      } catch (err) {
        log.warn({ err, messageId: id, routeId: p.c.routeId }, 'sms submit threw');
        outcome = { status: 'error', reason: 'internal' };
      }
      if (outcome.status === 'accepted') {
        const sentAt = clock.now();
        const total = toMoney(p.total);
        await money.run(s.accountId, async (tx, put, call) => {
          const settled = paid(
            await call('settle', {
              key: `sms:${id}`,
              holdId,
              payer: s.accountId,
              operatorId: s.parentId,
              sellerId: p.sellerId,
              charge: {
                total,
                seller: toMoney(p.seller),
                fee: toMoney(p.base.minus(p.seller)),
                markup: toMoney(p.markup),
              },
              context: { ...ctx, relatedEntityId: id },
            }),
          );
          put(
            'message',
            storedMessage(base, {
              status: 'sent',
              holdId,
              routeId: p.c.routeId,
              sellerId: p.sellerId,
              networkPriceApplied: p.c.rateBasis === 'network',
              pricePerSegment: toMoney(p.c.price),
              cost: total,
              chargePostingId: settled.settled!.postingId,
              markupPostingId: settled.markup?.postingId ?? null,
              supplierMessageIds: outcome.supplierMessageIds,
              matchKeys: matchKeysOf(outcome.supplierMessageIds),
              sentAt,
              receiptDueAt: new Date(sentAt.getTime() + receiptTtlMs),
            }),
          );
          put(
            'cdr',
            buildCdr({
              accountId: s.accountId,
              operatorId: s.parentId,
              sellerId: p.sellerId,
              callUuid: null,
              callGroupId: null,
              kind: 'sms',
              source,
              routeId: p.c.routeId,
              fromNumber: from,
              toNumber: to,
              cli: null,
              status: 'sent',
              sipCode: null,
              hangupCause: null,
              durationSeconds: null,
              segments: seg.segments,
              pddMs: null,
              mediaMode: null,
              billed: { total, seller: toMoney(p.seller), ratePerUnit: toMoney(p.c.price), billableSeconds: null },
              agreement: agreementOf(p.c),
              answeredAt: null,
              endedAt: sentAt,
              createdAt: sentAt,
            }),
          );
          put('event', {
            accountId: s.accountId,
            event: 'sms.sent',
            at: sentAt,
            data: sentEvent(id, to, from, seg.segments, total, sentAt, false),
          });
        });
        sendsCommitted++;
        void drainPending();
        return view({
          id,
          to,
          from,
          status: 'sent',
          segments: seg.segments,
          cost: total,
          at: sentAt,
          network,
          networkPriceApplied: p.c.rateBasis === 'network',
          simulated: false,
        });
      }
      if (outcome.status === 'refused') {
        failure = {
          routeId: p.c.routeId,
          code: 'SELLER_REJECTED',
          detail: outcome.detail ?? `command_status 0x${outcome.commandStatus.toString(16).padStart(8, '0')}`,
        };
        log.info({ messageId: id, routeId: p.c.routeId, commandStatus: outcome.commandStatus }, 'sms refused by route');
        if (MESSAGE_FAULT.has(outcome.commandStatus)) break;
        continue;
      }
      log.info({ messageId: id, routeId: p.c.routeId, reason: outcome.reason }, 'sms not submitted');
      if (MESSAGE_FAULT_REASONS.test(outcome.reason)) {
        failure = { routeId: p.c.routeId, code: 'REJECTED', detail: outcome.reason };
        break;
      }
      failure = { routeId: p.c.routeId, code: 'NO_ENDPOINT', detail: outcome.reason };
      if (outcome.ambiguous || AMBIGUOUS_REASONS.has(outcome.reason)) break;
    }

    const failedAt = clock.now();
    await money.run(s.accountId, async (tx, put) => {
      await ledger.release({ postingKey: `sms:${id}:release`, holdId }, tx);
      put(
        'message',
        storedMessage(base, {
          status: 'failed',
          holdId,
          routeId: failure.routeId,
          errorCode: failure.code,
          errorDetail: failure.detail,
          failedAt,
        }),
      );
      put('event', {
        accountId: s.accountId,
        event: 'sms.failed',
        at: failedAt,
        data: {
          messageId: id,
          to: `+${to}`,
          from,
          status: 'failed',
          errorCode: failure.code,
          failedAt: failedAt.toISOString(),
        },
      });
    });
    return view({
      id,
      to,
      from,
      status: 'failed',
      segments: seg.segments,
      cost: '0.000000',
      at: failedAt,
      network,
      networkPriceApplied: false,
      errorCode: failure.code,
      simulated: false,
    });
  }

  function sentEvent(
    id: string,
    to: string,
    from: string,
    segments: number,
    cost: string,
    at: Date,
    simulated: boolean,
  ) {
    return {
      messageId: id,
      to: `+${to}`,
      from,
      status: 'sent',
      segments,
      cost,
      submittedAt: at.toISOString(),
      ...(simulated ? { simulated: true } : {}),
    };
  }

  /**
   * Refunds every charge of a sent message and marks it failed; in the caller's transaction, message
   * locked. `receipt`: the supplier receipt that failed it, kept on the row in the same update.
   */
  async function failSent(
    tx: Db,
    m: MessageRow,
    code: string,
    detail: string,
    at: Date,
    receipt: Receipt | null = null,
  ): Promise<void> {
    let refundId: string | null = null;
    if (m.chargePostingId) {
      const r = await ledger.refund(
        {
          postingKey: `sms:${m.id}:refund`,
          chargePostingId: m.chargePostingId,
          reference: `SMS ${code.toLowerCase()}`,
        },
        tx,
      );
      refundId = r.postingId;
    }
    if (m.markupPostingId) {
      await ledger.refund(
        {
          postingKey: `sms:${m.id}:refund-markup`,
          chargePostingId: m.markupPostingId,
          reference: `SMS ${code.toLowerCase()}`,
        },
        tx,
      );
    }
    // The row's update and its event pipelined on the transaction's connection: one round trip.
    await Promise.all([
      repo.markFailedAfterSend(m.id, { errorCode: code, detail, refundPostingId: refundId, at, receipt }, tx),
      emit(tx, {
        accountId: m.accountId,
        event: 'sms.failed',
        at,
        data: {
          messageId: m.id,
          to: `+${m.toNumber}`,
          from: m.fromSender,
          status: 'failed',
          errorCode: code,
          refunded: m.cost,
          failedAt: at.toISOString(),
        },
      }),
    ]);
  }

  /**
   * Receipts of route-check test messages (sendTest), by supplier-id key: they update the check,
   * never a message row, so test messages stay out of SMS volume, revenue and quality figures.
   */
  const testReceipts = new Map<string, { keys: string[]; until: number; deliver(r: SupplierReceipt): void }>();
  /**
   * Where a test receipt goes that no entry above and no message part matched: one arriving after
   * a restart emptied the map. The route checks keep their sends' supplier ids and find it there.
   */
  const storedTestReceipts: ((r: ChannelReceipt, keys: string[]) => Promise<boolean>)[] = [];

  /** Applies one supplier receipt; false when no stored part matches it (yet). */
  async function applyReceipt(r: ChannelReceipt): Promise<boolean> {
    const keys = supplierIdKeys(r.supplierMessageId);
    if (keys.length === 0) return true; // nothing to match on: dropped
    const test = keys.map((k) => testReceipts.get(k)).find((x) => x !== undefined);
    if (test) {
      for (const k of test.keys) testReceipts.delete(k);
      test.deliver(r);
      return true;
    }
    const at = clock.now();
    let final: FinalReceipt | null = null;
    const matched = (await sql.begin(async (tx) => {
      const part = await repo.findPart(keys, r.reference, tx, r.routeId ?? null);
      if (!part) return false;
      const m = await repo.lock(part.messageId, tx);
      if (!m) return false;
      const receipt = { stat: r.stat, err: r.err, at };
      const counts = await repo.recordPartReceipt(m, part.seq, receipt, tx);
      // The SMPP receipt event of a final state, sent along with that state's writes (one round trip).
      const dlr = () =>
        m.source === 'smpp'
          ? emit(tx, {
              accountId: m.accountId,
              event: 'sms.dlr',
              at,
              data: {
                messageId: m.id,
                to: `+${m.toNumber}`,
                from: m.fromSender,
                stat: r.stat,
                err: r.err,
                doneAt: at.toISOString(),
              },
            })
          : null;
      // The receipt goes on the row in the update that changes its state, when it changes it: one
      // new row version per receipt, not one for the receipt and one for the state.
      if (m.status === 'sent' && isFailed(r.stat)) {
        // Not pipelined: the receipt event follows sms.failed, which the refund comes before.
        await failSent(tx, m, receiptErrorCode(r.stat), `receipt ${r.stat} err:${r.err}`, at, receipt);
        await dlr();
        final = { message: m, stat: r.stat, err: r.err, at };
      } else if (m.status === 'sent' && isDelivered(r.stat) && counts.delivered >= counts.total) {
        await Promise.all([
          repo.markDelivered(m.id, receipt, tx),
          emit(tx, {
            accountId: m.accountId,
            event: 'sms.delivered',
            at,
            data: {
              messageId: m.id,
              to: `+${m.toNumber}`,
              from: m.fromSender,
              status: 'delivered',
              deliveredAt: at.toISOString(),
            },
          }),
          dlr(),
        ]);
        final = { message: m, stat: r.stat, err: r.err, at };
      } else {
        await repo.noteReceipt(m.id, receipt, tx);
      }
      return true;
    })) as boolean;
    toSink(final);
    if (matched) return true;
    for (const find of storedTestReceipts) if (await find(r, keys)) return true;
    return false;
  }

  async function onReceipt(r: SupplierReceipt): Promise<void> {
    try {
      const seen = sendsCommitted;
      if (!(await applyReceipt(r))) {
        pending.push({ r, at: Date.now() });
        if (sendsCommitted !== seen) void drainPending();
      }
    } catch (err) {
      log.error({ err }, 'sms receipt failed to apply');
    }
  }

  /**
   * A signed HTTPS receipt callback of an HTTPS route (already verified): matched only among the
   * route's messages. `pending` when no stored part names it yet (the supplier answered faster than
   * our send committed): retried after the next send, as SMPP receipts are.
   */
  async function onHttpReceipt(routeId: string, h: HttpReceipt): Promise<'applied' | 'pending'> {
    const at = clock.now();
    const r: ChannelReceipt = {
      routeId,
      supplierMessageId: h.supplierMessageId,
      reference: h.messageId !== null && UUID.test(h.messageId) ? h.messageId.toLowerCase() : null,
      stat: h.stat,
      err: h.errorCode !== null && /^[0-9A-Za-z]{1,3}$/.test(h.errorCode) ? h.errorCode : '000',
      submitDate: null,
      doneDate: h.doneAt ?? at,
      rawText: '',
      source: '',
      destination: '',
    };
    if (await applyReceipt(r)) return 'applied';
    // Stored before the 200: the supplier will not send it again, so a restart must not lose it.
    const receivedAt = new Date();
    const storedId = await repo.storeEarlyReceipt({
      routeId,
      supplierMessageId: r.supplierMessageId,
      reference: r.reference,
      stat: r.stat,
      err: r.err,
      doneAt: r.doneDate,
      receivedAt,
    });
    heldEarly.add(storedId);
    pending.push({ r, at: receivedAt.getTime(), storedId });
    // The send may have committed between the miss and the insert: look once more.
    void drainPending();
    return 'pending';
  }

  async function drainPending(): Promise<void> {
    if (pending.length === 0) return;
    const seen = sendsCommitted;
    const now = Date.now();
    const list = pending.filter((p) => now - p.at < PENDING_RECEIPT_MS);
    const done = pending.filter((p) => now - p.at >= PENDING_RECEIPT_MS && p.storedId).map((p) => p.storedId!);
    pending = [];
    for (const p of list) {
      try {
        if (!(await applyReceipt(p.r))) pending.push(p);
        else if (p.storedId) done.push(p.storedId);
      } catch (err) {
        log.error({ err }, 'sms receipt failed to apply');
        pending.push(p);
      }
    }
    await repo.deleteEarlyReceipts(done).then(
      () => done.forEach((id) => heldEarly.delete(id)),
      (err: unknown) => log.warn({ err }, 'early receipt clean-up failed'),
    );
    // A send that committed while this pass ran may hold the parts a receipt just missed.
    if (pending.length > 0 && sendsCommitted !== seen) void drainPending();
  }

  /** Takes back the early HTTPS receipts a stopped daemon had stored, then tries them (module start). */
  async function loadEarlyReceipts(): Promise<number> {
    const since = new Date(Date.now() - PENDING_RECEIPT_MS);
    await repo.deleteEarlyReceiptsBefore(since);
    let n = 0;
    for (const e of await repo.earlyReceiptsSince(since)) {
      if (heldEarly.has(e.id)) continue;
      heldEarly.add(e.id);
      pending.push({
        at: e.receivedAt.getTime(),
        storedId: e.id,
        r: {
          routeId: e.routeId,
          supplierMessageId: e.supplierMessageId,
          reference: e.reference,
          stat: e.stat as ReceiptStat,
          err: e.err,
          submitDate: null,
          doneDate: e.doneAt,
          rawText: '',
          source: '',
          destination: '',
        },
      });
      n++;
    }
    await drainPending();
    return n;
  }

  /**
   * Expires sent messages whose receipt is overdue: EXPIRED and refunded on a route that returns
   * receipts; on a route that returns none the message stays sent (spec: delivered comes only from
   * a receipt). Returns how many expired.
   */
  async function sweepExpired(limit = 500): Promise<number> {
    const now = clock.now();
    let n = 0;
    for (const due of await repo.dueForExpiry(now, limit)) {
      const done = await sql.begin(async (tx): Promise<MessageRow | null> => {
        const m = await repo.lock(due.id, tx);
        if (!m || m.status !== 'sent') return null;
        if (!m.routeId || !(await repo.routeReturnsReceipts(m.routeId, now, tx))) {
          await repo.clearReceiptDue(m.id, tx);
          return null;
        }
        await failSent(tx, m, 'EXPIRED', 'no receipt before expiry', now);
        if (m.source === 'smpp') {
          await emit(tx, {
            accountId: m.accountId,
            event: 'sms.dlr',
            at: now,
            data: {
              messageId: m.id,
              to: `+${m.toNumber}`,
              from: m.fromSender,
              stat: 'EXPIRED',
              err: '000',
              doneAt: now.toISOString(),
            },
          });
        }
        return m;
      });
      if (done) {
        n++;
        toSink({ message: done, stat: 'EXPIRED', err: '000', at: now });
      }
    }
    return n;
  }

  async function get(viewer: { accountId: string }, id: string) {
    const m = await repo.get(id);
    if (!m || (m.accountId !== viewer.accountId && m.operatorId !== viewer.accountId)) throw notFound('Message');
    const timeline: { status: string; at: string; errorCode?: string }[] = [
      { status: 'queued', at: m.queuedAt.toISOString() },
    ];
    if (m.sentAt) timeline.push({ status: 'sent', at: m.sentAt.toISOString() });
    if (m.deliveredAt) timeline.push({ status: 'delivered', at: m.deliveredAt.toISOString() });
    if (m.failedAt)
      timeline.push({
        status: 'failed',
        at: m.failedAt.toISOString(),
        ...(m.errorCode ? { errorCode: m.errorCode } : {}),
      });
    return {
      messageId: m.id,
      to: `+${m.toNumber}`,
      from: m.fromSender,
      status: m.status,
      segments: m.segments,
      cost: m.status === 'failed' ? '0.000000' : m.cost,
      routeId: m.routeId,
      network: { mccMnc: m.mccMnc, name: m.networkName, networkPriceApplied: m.networkPriceApplied },
      errorCode: m.errorCode,
      simulated: m.simulated,
      timeline,
      routeReturnsReceipts: m.routeId ? await repo.routeReturnsReceipts(m.routeId, clock.now()) : false,
    };
  }

  /** Up to 1,000 recipients, each sent on its own; a refusal of one does not stop the others. */
  async function bulk(s: Sender, input: Omit<SendInput, 'to'> & { to: string[] }) {
    const results: Array<{
      to: string;
      success: boolean;
      messageId?: string;
      status?: string;
      segments?: number;
      cost?: string;
      error?: { code: string; message: string };
    }> = [];
    const queue = input.to.map((to, i) => ({ to, i }));
    const out = new Array<(typeof results)[number]>(queue.length);
    const worker = async () => {
      for (let job = queue.shift(); job; job = queue.shift()) {
        try {
          const r = await send(s, { ...input, to: job.to });
          out[job.i] = {
            to: job.to,
            success: r.status === 'sent',
            messageId: r.messageId,
            status: r.status,
            segments: r.segments,
            cost: r.cost,
            ...(r.errorCode ? { error: { code: r.errorCode, message: 'The route did not accept the message' } } : {}),
          };
        } catch (err) {
          const e =
            err instanceof AppError
              ? err
              : isLedgerRefusal(err)
                ? fromSqlState((err as { code: string }).code, (err as Error).message)
                : null;
          if (!e) throw err;
          out[job.i] = { to: job.to, success: false, error: { code: e.code, message: e.message } };
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(8, queue.length) }, worker));
    results.push(...out);
    const sent = results.filter((r) => r.success).length;
    return { total: results.length, sent, failed: results.length - sent, results };
  }

  /**
   * One route-check test message over exactly this route's delivery, outside the message ledger:
   * no hold, no message row, no CDR (the caller bills it). Its receipt goes to `onReceipt`.
   */
  async function sendTest(
    route: { routeId: string; delivery: Record<string, unknown> | null },
    sms: { to: string; from: string; text: string; reference: string },
    onTestReceipt: (r: SupplierReceipt) => void,
  ): Promise<GatewayOutcome> {
    const outcome = await gateway.submit(route, sms);
    if (outcome.status === 'accepted') {
      const keys = outcome.supplierMessageIds.flatMap((sid) => supplierIdKeys(sid));
      const entry = { keys, until: Date.now() + receiptTtlMs, deliver: onTestReceipt };
      const now = Date.now();
      for (const [k, v] of testReceipts) if (v.until < now) testReceipts.delete(k);
      for (const k of keys) testReceipts.set(k, entry);
      // As a committed send does: a receipt that missed these keys meanwhile sees the count move and retries.
      sendsCommitted++;
      void drainPending();
    }
    return outcome;
  }

  return {
    send,
    sendTest,
    /** Receipts of test messages sent before a restart: `find` applies one and says whether it was its own. */
    onStoredTestReceipt(find: (r: ChannelReceipt, keys: string[]) => Promise<boolean>) {
      storedTestReceipts.push(find);
    },
    bulk,
    get,
    sweepExpired,
    loadEarlyReceipts,
    /** Retries receipts still waiting for their send (also run by the expiry sweep). */
    drainPending,
    /** Where final receipts of customer SMPP messages go (the SMPP server's deliverReceipt). */
    setReceiptSink(fn: ((f: FinalReceipt) => void) | null) {
      receiptSink = fn;
    },
    /** For a receipt channel other than the SMPP binds. */
    onReceipt,
    onHttpReceipt,
    /** The signing secret of an HTTPS-delivered route, for its receipt callbacks; null when it has none. */
    httpSigningSecret: (routeId: string) => repo.httpSigningSecret(routeId),
    history: (
      accountId: string,
      f: { from?: string | undefined; to?: string | undefined; cursor?: string | undefined; limit: number },
    ): Promise<HistoryRow[]> => repo.history(accountId, f),
    /** Keeps the SMPP binds of these routes open, so their SMSCs can deliver mobile-originated messages. */
    keepBound: (routes: readonly { routeId: string; delivery: Record<string, unknown> | null }[]): void =>
      gateway.keepBound?.(routes),
    async stop() {
      await gateway.stop();
      money.close();
    },
  };
}

export type SmsService = ReturnType<typeof createSmsService>;
