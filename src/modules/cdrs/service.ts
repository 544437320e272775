/**
 * Billing records of every plane (trunk calls, API calls, SMS): the settlement of a hold and
 * the CDRs written with it, in the caller's transaction (spec "Billing": GET /billing/cdrs).
 */
import { Decimal } from 'decimal.js';
import type { Db, Sql } from '../../db/connection.js';
import type { ChargeResult, EntryContext, Ledger, SettleResult } from '../../ledger/index.js';
import {
  CHARGE_BATCH_MAX,
  isItemError,
  isRefusal,
  itemError,
  type ChargeInput,
  type Refusal,
  type SettleInput,
} from '../../ledger/ledger.js';
import { newId } from '../../platform/ids.js';
import { toMoney } from '../../rating/index.js';
import type { LegCharge } from './call-charge.js';
import { chargeMarkup as postMarkup, markupInput } from './markup.js';

/** ledger_charge_many's item refusal of a markup with balance events to emit (migration 283). */
const EVENTS_TO_EMIT = 'SVC90';
import { createCdrsRepo, type CdrFilter, type CdrInsert, type CdrRow, type RouteTerms } from './repo.js';

/** What a settled leg or message costs, split the way the ledger posts it. */
export interface SettleCharge {
  /** Everything the payer is charged (base plus markup). */
  total: string;
  /** The route seller's part. */
  seller: string;
  /** The platform fee. */
  fee: string;
  /** The reseller's margin on a sub-account's traffic (0 otherwise). */
  markup: string;
  /** A call leg's billable seconds: 0 bills nothing and releases the hold. Absent for messages. */
  billableSeconds?: number;
}

/** One hold to settle (or release) and whom it pays. */
export interface Settlement {
  /** Posting keys are `<key>:settle`, `<key>:markup` and `<key>:release` (`<key>:charge` for a test key's charge). */
  key: string;
  holdId: string;
  payer: string;
  /** The reseller paid the markup; null when the payer is not a sub-account. */
  operatorId: string | null;
  sellerId: string | null;
  /** null: nothing billed, the hold is released. */
  charge: SettleCharge | null;
  context: EntryContext;
  /** A test key's hold: released, and the charge drawn on test credit with no seller credited. */
  test?: boolean;
  /**
   * A second leg paid from the same hold (a forwarded number call's inbound minutes, to the
   * number's seller): charged right behind the settle, under `<key>:inbound` (its markup
   * `<key>:inbound:markup`), from what the settle gave back of the hold, which covered both legs.
   */
  alongside?: { sellerId: string; charge: SettleCharge } | undefined;
}

export interface Settled {
  /** null when the hold was released (nothing billed, or a test key). */
  settled: SettleResult | null;
  markup: ChargeResult | null;
  /** The settlement or its markup reached the payer's daily spend cap. */
  capReached: boolean;
}

/** What a CDR bills; null on a leg that was not billed (cost 0, no rate). */
export interface CdrBilled {
  total: string;
  seller: string;
  ratePerUnit: string;
  /** null for a message. */
  billableSeconds: number | null;
}

/** A CDR's own facts; the money columns follow from `billed`. */
export type CdrLeg = Omit<
  CdrInsert,
  | 'id'
  | 'direction'
  | 'isProbe'
  | 'billedSeconds'
  | 'buyerCost'
  | 'sellerCredit'
  | 'ratePerUnit'
  | 'simulated'
  | 'interconnectionId'
  | 'agreedRate'
> & {
  billed: CdrBilled | null;
  /** Set when an interconnection's terms priced the route (its caps and statements count the row). */
  agreement?: Agreement | undefined;
  simulated?: boolean;
  /** `outbound` unless said: `inbound` for a call delivered to a rented number. */
  direction?: 'outbound' | 'inbound';
};

/** The interconnection that priced a route, and the seller rate it agreed. */
export interface Agreement {
  interconnectionId: string;
  rate: Decimal;
}

/** The agreement of a priced route, when an interconnection priced it. */
export const agreementOf = (p: {
  interconnectionId?: string | undefined;
  sellerRate: Decimal;
}): Agreement | undefined =>
  p.interconnectionId === undefined ? undefined : { interconnectionId: p.interconnectionId, rate: p.sellerRate };

const ZERO = '0.000000';
const released: Settled = { settled: null, markup: null, capReached: false };

/** A priced call leg as a CDR bills it. */
export const voiceBilled = (c: LegCharge): CdrBilled => ({
  total: c.total,
  seller: c.seller,
  ratePerUnit: c.ratePerMinute,
  billableSeconds: c.billableSeconds,
});

/**
 * The row of one call leg or message. A simulated (test key) record credits no seller; an
 * unbilled voice leg bills 0 seconds. One object literal, every field named: a rest-and-spread copy
 * makes V8 build the row's hidden classes again for each CDR (allocation and time on every call's
 * finish and every message).
 */
export function buildCdr(l: CdrLeg): CdrInsert {
  const { billed, agreement } = l;
  const simulated = l.simulated ?? false;
  return {
    id: newId(),
    accountId: l.accountId,
    operatorId: l.operatorId,
    sellerId: l.sellerId || null,
    callUuid: l.callUuid,
    callGroupId: l.callGroupId,
    direction: l.direction ?? 'outbound',
    kind: l.kind,
    source: l.source,
    routeId: l.routeId,
    fromNumber: l.fromNumber,
    toNumber: l.toNumber,
    cli: l.cli,
    status: l.status,
    sipCode: l.sipCode,
    hangupCause: l.hangupCause,
    durationSeconds: l.durationSeconds,
    billedSeconds: billed ? billed.billableSeconds : l.kind === 'voice' ? 0 : null,
    segments: l.segments,
    pddMs: l.pddMs,
    mediaMode: l.mediaMode,
    buyerCost: billed?.total ?? ZERO,
    sellerCredit: billed && !simulated ? billed.seller : ZERO,
    ratePerUnit: billed?.ratePerUnit ?? null,
    interconnectionId: agreement?.interconnectionId ?? null,
    agreedRate: agreement ? toMoney(agreement.rate) : null,
    simulated,
    isProbe: false,
    answeredAt: l.answeredAt,
    endedAt: l.endedAt,
    createdAt: l.createdAt,
  };
}

export interface CdrsDeps {
  sql: Sql;
  ledger: Ledger;
}

export function createCdrsService(deps: CdrsDeps) {
  const { ledger } = deps;
  const repo = createCdrsRepo(deps.sql);

  const isBilled = (s: Settlement): boolean => s.charge !== null && s.charge.billableSeconds !== 0;

  /** The route's seller paid its rate, the platform its fee, the rest of the hold released. */
  const settleInput = (s: Settlement): SettleInput => ({
    postingKey: `${s.key}:settle`,
    holdId: s.holdId,
    sellerId: s.sellerId || null,
    amount: s.charge!.seller,
    fee: s.charge!.fee,
    ...s.context,
  });

  /** The reseller's markup, paid to its operator from the released hold; null when there is none. */
  const chargeMarkup = (tx: Db, s: Settlement, opts?: { events?: boolean }): Promise<ChargeResult | null> =>
    postMarkup(
      ledger,
      tx,
      { key: s.key, payer: s.payer, operatorId: s.operatorId, markup: s.charge!.markup, context: s.context },
      opts,
    );

  /** Settles one hold (or releases it) in `tx`; the single ledger functions throw their own refusals. */
  async function settle(tx: Db, s: Settlement): Promise<Settled> {
    if (!isBilled(s)) {
      await ledger.release({ postingKey: `${s.key}:release`, holdId: s.holdId }, tx);
      return released;
    }
    const c = s.charge!;
    if (s.test) {
      await ledger.release({ postingKey: `${s.key}:release`, holdId: s.holdId }, tx);
      const amount = toMoney(new Decimal(c.total).minus(c.fee));
      await ledger.chargeTest(
        { postingKey: `${s.key}:charge`, accountId: s.payer, amount, fee: c.fee, ...s.context },
        tx,
      );
      return released;
    }
    // The markup is sent right behind the settle (it runs after it on the connection) rather than
    // a round trip later: every other posting of this payer waits on the settle's lock on its row.
    const [settled, markup, second] = await Promise.all([
      ledger.settle(settleInput(s), tx),
      chargeMarkup(tx, s),
      chargeAlongside(tx, s),
    ]);
    return {
      settled,
      markup,
      capReached: settled.capReached || (markup?.capReached ?? false) || second.some((r) => r.capReached),
    };
  }

  /**
   * The second leg of a settled hold and its markup (`Settlement.alongside`), in `tx` after the
   * settle: the payer's row is locked since the settle, so what it gave back of the hold pays it,
   * and the ledger lets a settled call's own rest through a daily cap the settle reached.
   */
  async function chargeAlongside(tx: Db, s: Settlement, opts?: { events?: boolean }): Promise<ChargeResult[]> {
    const leg = s.alongside;
    if (!leg || !s.charge || s.test || !leg.charge.billableSeconds) return [];
    const key = `${s.key}:inbound`;
    const base = toMoney(new Decimal(leg.charge.total).minus(leg.charge.markup));
    if (new Decimal(base).isZero()) return [];
    const [charged, markup] = await Promise.all([
      ledger.charge(
        {
          postingKey: key,
          accountId: s.payer,
          sellerId: leg.sellerId,
          amount: leg.charge.seller,
          fee: leg.charge.fee,
          ...s.context,
        },
        tx,
        opts,
      ),
      postMarkup(
        ledger,
        tx,
        { key, payer: s.payer, operatorId: s.operatorId, markup: leg.charge.markup, context: s.context },
        opts,
      ),
    ]);
    return markup ? [charged, markup] : [charged];
  }

  /**
   * The markups of settled holds (null: none to post) in `tx`, results in item order. Up to
   * CHARGE_BATCH_MAX of them go in one ledger_charge_many (one statement where each took one,
   * migration 223; more would overflow the transaction's subtransaction cache), the rest one by one.
   * `withEvents`: the markups whose balance events are still to emit (ledger.balanceEvents); a
   * batched markup with events to emit comes back as SVC90 and is posted again alone, without them.
   */
  async function chargeMarkups(
    tx: Db,
    settled: readonly (Settlement | null)[],
  ): Promise<{ markups: (ChargeResult | null)[]; withEvents: ChargeResult[] }> {
    const inputs = settled.map((s) =>
      s
        ? markupInput({
            key: s.key,
            payer: s.payer,
            operatorId: s.operatorId,
            markup: s.charge!.markup,
            context: s.context,
          })
        : null,
    );
    const posted = inputs.filter((i): i is ChargeInput => i !== null);
    if (posted.length < 2 || posted.length > CHARGE_BATCH_MAX) {
      const markups = await Promise.all(inputs.map((i) => (i ? ledger.charge(i, tx, { events: false }) : null)));
      return { markups, withEvents: markups.filter((m): m is ChargeResult => m !== null) };
    }
    const batch = await ledger.chargeMany(posted, tx);
    const withEvents: ChargeResult[] = [];
    const out = await Promise.all(
      batch.map(async (r, i) => {
        if (!isItemError(r)) return r;
        if (r.error.code !== EVENTS_TO_EMIT) throw itemError(r);
        const again = await ledger.charge(posted[i]!, tx, { events: false });
        withEvents.push(again);
        return again;
      }),
    );
    let k = 0;
    return { markups: inputs.map((i) => (i ? out[k++]! : null)), withEvents };
  }

  /**
   * Many settlements in `tx`, results in item order. Two or more billed holds go in one
   * ledger_settle_many (each payer's row moved once) with their markups (migration 317); a markup
   * that pass leaves to the caller goes after it with one balance check. An item the balance
   * cannot pay (its settle and markup together) comes back as a `Refusal` and posts nothing.
   */
  async function settleMany(tx: Db, items: readonly Settlement[]): Promise<(Settled | Refusal)[]> {
    const many = items.filter((s) => isBilled(s) && !s.test);
    if (many.length < 2) return Promise.all(items.map((s) => settle(tx, s)));
    const rest = items.filter((s) => !many.includes(s));
    const [results, ...others] = await Promise.all([
      ledger.settleMany(
        many.map((s) => {
          const m = markupInput({
            key: s.key,
            payer: s.payer,
            operatorId: s.operatorId,
            markup: s.charge!.markup,
            context: s.context,
          });
          return m
            ? { ...settleInput(s), markup: { postingKey: m.postingKey, sellerId: m.sellerId!, amount: m.amount } }
            : settleInput(s);
        }),
        tx,
      ),
      ...rest.map((s) => settle(tx, s)),
    ]);
    const posted = (i: number) => {
      const r = results[i]!;
      return isRefusal(r) ? undefined : r.markup;
    };
    const { markups, withEvents } = await chargeMarkups(
      tx,
      many.map((s, i) => (isRefusal(results[i]) || posted(i) ? null : s)),
    );
    const seconds = await Promise.all(
      many.map((s, i) => (isRefusal(results[i]) ? [] : chargeAlongside(tx, s, { events: false }))),
    );
    await ledger.balanceEvents(tx, [...withEvents, ...seconds.flat()]);
    const out = new Map<Settlement, Settled | Refusal>();
    many.forEach((s, i) => {
      const r = results[i]!;
      const m = posted(i) ?? markups[i] ?? null;
      if (isRefusal(r)) return out.set(s, r);
      const capped = r.capReached || (m?.capReached ?? false) || seconds[i]!.some((c) => c.capReached);
      out.set(s, { settled: r, markup: m, capReached: capped });
    });
    rest.forEach((s, i) => out.set(s, others[i] as Settled));
    return items.map((s) => out.get(s)!);
  }

  return {
    settle,
    settleMany,
    /** Many CDRs in one statement, in the caller's transaction. */
    insertCdrs: (tx: Db, rows: readonly CdrInsert[]): Promise<void> => repo.insertCdrs(tx, rows),
    listCdrs: (f: CdrFilter): Promise<CdrRow[]> => repo.listCdrs(f),
    /** A rented number's calls by month: counts, connected seconds, cost (the numbers module's analytics). */
    numberUsage: (q: { accountId: string; didIds: readonly string[]; from: Date; to: Date }) => repo.numberUsage(q),
    /** Seller, capacity, calls per second and media mode of routes, read from the table. */
    routeTerms: (ids: readonly string[]): Promise<RouteTerms[]> => repo.routeTerms(ids),
  };
}

export type CdrsService = ReturnType<typeof createCdrsService>;
