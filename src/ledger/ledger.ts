import postgres from 'postgres';
import type { Logger } from 'pino';
import type { Db, Sql } from '../db/connection.js';
import type { Clock } from '../platform/clock.js';
import { money6 } from './money.js';

export type LedgerMode = 'live' | 'test';
export type TopupSource = 'card' | 'crypto' | 'wire' | 'x402';
export type EntryType =
  | 'topup'
  | 'charge'
  | 'credit'
  | 'payout'
  | 'platform_fee'
  | 'test_credit'
  | 'chargeback'
  | 'refund_reversal'
  | 'refund'
  | 'transfer';
export const EntryTypes: readonly EntryType[] = [
  'topup',
  'charge',
  'credit',
  'payout',
  'platform_fee',
  'test_credit',
  'chargeback',
  'refund_reversal',
  'refund',
  'transfer',
];

/** What every posting function returns; a replay (same posting key) returns the first result with `replayed: true`. */
export interface PostingResult {
  postingId: string;
  replayed: boolean;
  type: string;
  accountId: string;
  amount?: string;
  balanceAfter?: string;
  [field: string]: unknown;
}

export interface ChargeResult extends PostingResult {
  mode: LedgerMode;
  fee: string;
  total: string;
  balanceAfter: string;
  balanceBefore: string;
  /** This charge reached the daily spend cap: the account is suspended until the next UTC day. */
  capReached: boolean;
}

export interface HoldResult extends PostingResult {
  holdId: string;
  mode: LedgerMode;
  amount: string;
  available: string;
}

export interface SettleResult extends ChargeResult {
  holdId: string;
  released: string;
  /** settleMany: the result of the input's `markup` charge; absent when it was left to the caller to post. */
  markup?: ChargeResult;
}

export interface Balance {
  balance: string;
  held: string;
  creditLimit: string;
  /** balance + creditLimit − held, never below zero. */
  available: string;
  testCredit: string;
  testHeld: string;
  /** Seller earnings not yet paid out. */
  payable: string;
}

/** Context written on customer-facing entries (spec "Ledger transaction"). */
export interface EntryContext {
  reference?: string | null;
  relatedEntityType?: string | null;
  relatedEntityId?: string | null;
  callId?: string | null;
}

/**
 * Where balance events go (`balance.low`, `sub_account.balance_low`, `sub_account.suspended`).
 * Written with the posting's `db` so an outbox write joins the posting's transaction.
 */
export interface LedgerEventSink {
  emit(db: Db, accountId: string, event: string, data: Record<string, unknown>): Promise<void>;
}

export interface LedgerDeps {
  sql: Sql;
  clock: Clock;
  log: Logger;
  events?: LedgerEventSink | null;
  /** Balance below which `balance.low` fires once when crossed (0: never). */
  lowBalanceThreshold?: string;
}

export interface ChargeInput extends EntryContext {
  postingKey: string;
  accountId: string;
  sellerId?: string | null;
  /** The seller's part (or the platform's when no seller). */
  amount: string;
  /** The platform fee, posted as its own `platform_fee` entry. */
  fee?: string;
  mode?: LedgerMode;
}

export interface HoldInput extends EntryContext {
  postingKey: string;
  accountId: string;
  amount: string;
  mode?: LedgerMode;
  /** The sweeper releases the hold after this unless settled, released or extended. */
  ttlSeconds: number;
}

export interface SettleInput extends EntryContext {
  postingKey: string;
  holdId: string;
  sellerId?: string | null;
  amount: string;
  fee?: string;
  /**
   * settleMany only: a charge of the hold's payer to post right behind the settle (a reseller's
   * markup), as `charge` would post it with this key, seller and amount and the settle's context.
   */
  markup?: { postingKey: string; sellerId: string; amount: string };
}

/** An item of a batch that the balance (SVC01) or the daily cap (SVC04) refused: it posted nothing, the others went on. */
export interface Refusal {
  refused: true;
  code: 'SVC01' | 'SVC04';
  message: string;
}

export const isRefusal = (r: unknown): r is Refusal => (r as Refusal | null)?.refused === true;

/** The error the single-item function throws for the same refusal (same SQLSTATE, same message). */
export function refusalError(r: Refusal): postgres.PostgresError {
  return new postgres.PostgresError({ code: r.code, message: r.message, severity: 'ERROR' } as never);
}

const str = (v: string | null | undefined) => v ?? null;

/**
 * One item of ledger_hold_many's JSON array (migration 016), its hold expiring `ttlSeconds` after
 * `from`. Exported for a caller that writes its own rows in the same statement as the holds.
 */
export function holdManyItem(i: HoldInput, from: Date) {
  return {
    key: i.postingKey,
    accountId: i.accountId,
    amount: i.amount,
    test: i.mode === 'test',
    expiresAt: new Date(from.getTime() + i.ttlSeconds * 1000).toISOString(),
    reference: str(i.reference),
    relatedEntityType: str(i.relatedEntityType),
    relatedEntityId: str(i.relatedEntityId),
    callId: str(i.callId),
  };
}

/** A charge's or settle's seller, amounts and context as a batch item's JSON fields (absent: as the single calls pass them). */
const debitItem = (i: EntryContext & { sellerId?: string | null; amount: string; fee?: string }) => ({
  sellerId: str(i.sellerId),
  amount: i.amount,
  fee: i.fee ?? '0',
  reference: str(i.reference),
  relatedEntityType: str(i.relatedEntityType),
  relatedEntityId: str(i.relatedEntityId),
  callId: str(i.callId),
});

/** An item of `chargeMany` that failed alone: the SQLSTATE and message the single call raises. */
export interface ItemError {
  error: { code: string; message: string };
}

export const isItemError = (r: unknown): r is ItemError => typeof (r as ItemError | null)?.error === 'object';

export function itemError(r: ItemError): postgres.PostgresError {
  return new postgres.PostgresError({ code: r.error.code, message: r.error.message, severity: 'ERROR' } as never);
}

/**
 * At most this many charges per ledger_charge_many call: an item whose outcome the call cannot
 * tell before posting is a subtransaction (migration 306), and more than 64 in one transaction
 * overflow PostgreSQL's per-backend subxid cache (migration 223).
 */
export const CHARGE_BATCH_MAX = 32;

/**
 * Items a batch gives back to the single-charge path: events to emit (SVC90, posted again in a
 * transaction with them), and a deadlock or serialization failure between two batches locking
 * the same accounts in different orders (the single call locks one buyer at a time).
 */
const RETRY_ALONE = new Set(['SVC90', '40P01', '40001']);

/** How many calls a turn's waiting charges are split into at least (see flushQueue). */
const GROUP_CALLS = 2;

/** The balance events a debit calls for (ledger_debit_signal, migration 283). */
interface Signal {
  parentId: string | null;
  crossed: boolean;
  capped: boolean;
}

/** ledger_debit_signal's refusal of a pool posting that has events to emit (migration 283). */
const EVENTS_TO_EMIT = 'SVC90';

/**
 * Typed calls of the PL/pgSQL ledger (migration 010). Every function takes an optional `db`:
 * pass a transaction to post together with a CDR or message row. Refusals arrive as
 * PostgresError with SQLSTATE SVC01 (insufficient balance), SVC02 (invalid amount or state),
 * SVC03 (unknown account or hold), SVC04 (daily spend cap reached), which the HTTP layer maps to
 * 400 VALIDATION_ERROR (`fromSqlState` in src/http/errors.ts).
 */
export function createLedger(deps: LedgerDeps) {
  const { sql, clock } = deps;
  const lowThreshold = deps.lowBalanceThreshold ?? '0';

  // With an event sink, a posting and its events commit together: the pool gets a transaction.
  const inTx = <T>(db: Db, fn: (db: Db) => Promise<T>): Promise<T> =>
    deps.events && db === sql ? (sql.begin((tx) => fn(tx)) as Promise<T>) : fn(db);

  /** The balance events of many debits: one query for all, events only for those that crossed a line. */
  async function afterDebits(db: Db, list: ChargeResult[]) {
    const live = list.filter((r) => !r.replayed && r.mode === 'live');
    if (!deps.events || live.length === 0) return;
    // The rule is ledger_debit_signal's (migration 283), the one a single posting's statement applies.
    const hits = await db<(Signal & { i: number })[]>`
      select (x.i - 1)::integer as i, s.parent_id, s.crossed, s.capped
      from jsonb_array_elements(${db.json(live as never)}) with ordinality as x(r, i)
      cross join lateral ledger_debit_signal(x.r, ${lowThreshold}::numeric, false) s
      where s.crossed or s.capped
      order by x.i`;
    for (const h of hits) await debitEvents(db, live[h.i]!, h);
  }

  /** Low balance (the line crossed by this debit) and a sub-account suspended by its daily cap. */
  async function debitEvents(db: Db, r: ChargeResult, signal: Signal) {
    if (!deps.events) return;
    const { parentId, crossed, capped } = signal;
    const data = { accountId: r.accountId, balance: r.balanceAfter };
    const { events } = deps;
    // Both pipelined on the connection (one round trip), started in this order so their ids keep it.
    await Promise.all([
      crossed &&
        (parentId
          ? events.emit(db, parentId, 'sub_account.balance_low', { subAccountId: r.accountId, ...data })
          : events.emit(db, r.accountId, 'balance.low', data)),
      capped &&
        parentId &&
        events.emit(db, parentId, 'sub_account.suspended', { subAccountId: r.accountId, reason: 'daily_spend_cap' }),
    ]);
  }

  /**
   * Inside the caller's transaction a debit runs once, its events emitted right after it. On the
   * pool it runs strict: a posting with events to emit is refused by its statement (SVC90, nothing
   * posted) and posted again in a transaction with its events.
   */
  async function strictOnPool<R>(db: Db, run: (db: Db, strict: boolean) => Promise<R>): Promise<R> {
    if (db !== sql) return run(db, false);
    try {
      return await run(db, true);
    } catch (err) {
      if (!(err instanceof postgres.PostgresError) || err.code !== EVENTS_TO_EMIT) throw err;
      return sql.begin((tx) => run(tx, false)) as Promise<R>;
    }
  }

  /**
   * Runs a debit's statement (`posting` gives the `from` item that yields its result `r`) with its
   * balance events decided in the same statement (ledger_debit_signal, migration 283): one round
   * trip. On the pool, a posting with events to emit is refused by the statement (SVC90, nothing
   * posted) and posted again in a transaction with its events; inside the caller's transaction the
   * events are emitted right after it.
   */
  async function debit<R extends ChargeResult>(
    db: Db,
    posting: (db: Db) => postgres.PendingQuery<postgres.Row[]>,
    events = true,
  ): Promise<R> {
    if (!deps.events || !events) {
      const [row] = await db<{ r: R }[]>`select p.r from ${posting(db)} as p(r)`;
      return row!.r;
    }
    const run = async (db: Db, strict: boolean) => {
      const [row] = await db<({ r: R } & Signal)[]>`
        select p.r, s.parent_id, s.crossed, s.capped
        from ${posting(db)} as p(r)
        cross join lateral ledger_debit_signal(p.r, ${lowThreshold}::numeric, ${strict}) s`;
      const { r, ...signal } = row!;
      if (signal.crossed || signal.capped) await debitEvents(db, r, signal);
      return r;
    };
    return strictOnPool(db, run);
  }

  interface Waiting {
    input: ChargeInput;
    resolve: (r: ChargeResult) => void;
    reject: (e: unknown) => void;
  }
  let queue: Waiting[] = [];
  let flushing = false;

  function flushQueue() {
    const all = queue;
    queue = [];
    flushing = false;
    // Several calls when many wait: one backend posts a call's items one after the other, and
    // the server has more than one core.
    const calls = Math.max(Math.ceil(all.length / CHARGE_BATCH_MAX), Math.min(GROUP_CALLS, all.length));
    const size = Math.ceil(all.length / calls);
    for (let i = 0; i < all.length; i += size) void sendGroup(all.slice(i, i + size));
  }

  async function sendGroup(group: Waiting[]) {
    let results: (ChargeResult | ItemError)[];
    try {
      results = await ledger.chargeMany(group.map((w) => w.input));
    } catch (err) {
      // The server refused the call as a whole (one statement: nothing of it posted), which an
      // item's bad input can do (an invalid account id): each charge goes alone, failing alone.
      if (err instanceof postgres.PostgresError) {
        for (const w of group) ledger.charge(w.input).then(w.resolve, w.reject);
      } else for (const w of group) w.reject(err);
      return;
    }
    group.forEach((w, i) => {
      const r = results[i]!;
      if (!isItemError(r)) w.resolve(r);
      else if (RETRY_ALONE.has(r.error.code)) ledger.charge(w.input).then(w.resolve, w.reject);
      else w.reject(itemError(r));
    });
  }

  // ledger.charge's statements, one per shape, each written out whole on one line: the driver builds
  // one query object per charge, not three (an outer statement and nested fragments), and hashes
  // the statement's text with its parameter types on every call to find it prepared (the shorter,
  // the cheaper). One async function per charge: each nested one costs a promise and a microtask.
  async function chargeQuiet(db: Db, i: ChargeInput, now: Date): Promise<ChargeResult> {
    const [row] = await db<
      { r: ChargeResult }[]
    >`select ledger_charge(${i.postingKey},${i.accountId}::uuid,${i.sellerId ?? null}::uuid,${i.amount}::numeric,${i.fee ?? '0'}::numeric,${i.mode === 'test'},${i.reference ?? null},${i.relatedEntityType ?? null},${i.relatedEntityId ?? null},${i.callId ?? null},${now})r`;
    return row!.r;
  }

  /**
   * With an event sink, ledger_debit_signal's rule is applied by ledger_charge itself on the row it
   * locks (migration 335): its result carries the signal under `signal` only when the posting has
   * events (migration 340), which is split off here. On the pool (`strict`) a posting with events
   * is refused before anything is written (SVC90) and posted again in a transaction with them.
   */
  async function chargeSignalled(db: Db, i: ChargeInput, now: Date, strict: boolean): Promise<ChargeResult> {
    let row: { r: ChargeResult & { signal?: Signal } } | undefined;
    try {
      [row] = await db<
        { r: ChargeResult & { signal?: Signal } }[]
      >`select ledger_charge(${i.postingKey},${i.accountId}::uuid,${i.sellerId ?? null}::uuid,${i.amount}::numeric,${i.fee ?? '0'}::numeric,${i.mode === 'test'},${i.reference ?? null},${i.relatedEntityType ?? null},${i.relatedEntityId ?? null},${i.callId ?? null},${now},${lowThreshold}::numeric,${strict})r`;
    } catch (err) {
      if (!strict || !(err instanceof postgres.PostgresError) || err.code !== EVENTS_TO_EMIT) throw err;
      return sql.begin((tx) => chargeSignalled(tx, i, now, false)) as Promise<ChargeResult>;
    }
    const r = row!.r;
    const s = r.signal;
    if (s === undefined) return r;
    // Most charges cross no line and carry no signal: only these pay for taking it off.
    delete r.signal;
    if (s.crossed || s.capped) await debitEvents(db, r, s);
    return r;
  }

  const ledger = {
    /** Credits a top-up (card, crypto: 5 USD minimum; wire: 100 USD; x402). */
    async topup(
      input: { accountId: string; amount: string; source: TopupSource; reference?: string | null; postingKey: string },
      db: Db = sql,
    ): Promise<PostingResult> {
      return inTx(db, async (db) => {
        const [row] = await db<{ r: PostingResult }[]>`
          select ledger_topup(${input.postingKey}, ${input.accountId}::uuid, ${input.amount}::numeric, ${input.source},
                              ${str(input.reference)}, ${clock.now()}) as r`;
        const r = row!.r;
        if (!r.replayed && deps.events) {
          await deps.events.emit(db, input.accountId, 'topup.confirmed', {
            accountId: input.accountId,
            amount: r.amount,
            source: input.source,
            balance: r.balanceAfter,
            transactionId: r.postingId,
          });
        }
        return r;
      });
    },

    /**
     * Charges `amount` (to the seller, or platform revenue without one) plus `fee` (platform fee entry).
     * With an event sink, ledger_debit_signal's rule is applied by ledger_charge itself on the row it
     * locks (migration 335): its result carries the signal under `signal` only when the posting has
     * events (migration 340), which is split off here; on the pool a posting with events is refused
     * before anything is written and posted again in a transaction with them (chargeSignalled).
     */
    charge(input: ChargeInput, db: Db = sql, opts?: { events?: boolean }): Promise<ChargeResult> {
      const now = clock.now();
      if (!deps.events || opts?.events === false) return chargeQuiet(db, input, now);
      return chargeSignalled(db, input, now, db === sql);
    },

    /**
     * `charge` of many items in one call (migrations 223, 306), in array order, each posted as `charge`
     * would post it; an item that fails comes back as an `ItemError` (nothing of it posted) and the
     * others go on. With an event sink, an item with balance events to emit comes back as SVC90:
     * post it with `charge`, which emits them in its transaction. At most CHARGE_BATCH_MAX items.
     */
    async chargeMany(inputs: ChargeInput[], db: Db = sql): Promise<(ChargeResult | ItemError)[]> {
      if (inputs.length === 0) return [];
      if (inputs.length > CHARGE_BATCH_MAX) throw new RangeError(`at most ${CHARGE_BATCH_MAX} charges per call`);
      const items = inputs.map((i) => ({
        key: i.postingKey,
        accountId: i.accountId,
        test: i.mode === 'test',
        ...debitItem(i),
      }));
      const threshold = deps.events ? lowThreshold : null;
      const [row] = await db<{ r: (ChargeResult | ItemError)[] }[]>`
        select ledger_charge_many(${db.json(items as never)}, ${clock.now()}, ${threshold}::numeric) as r`;
      return row!.r;
    },

    /**
     * `charge` on the pool, grouped: the charges asked for within one turn of the event loop go to
     * PostgreSQL together (chargeMany, up to CHARGE_BATCH_MAX per call, several calls in flight
     * when more wait), so concurrent requests share round trips and statements. Resolves or
     * rejects as `charge` would for this input alone.
     */
    chargeGrouped(input: ChargeInput): Promise<ChargeResult> {
      return new Promise<ChargeResult>((resolve, reject) => {
        queue.push({ input, resolve, reject });
        if (!flushing) {
          flushing = true;
          setImmediate(flushQueue);
        }
      });
    },

    /**
     * The balance events (low balance crossed, daily cap reached) of debits made with
     * `{ events: false }`, in one query for all: pass the same transaction the debits used.
     */
    balanceEvents: (db: Db, results: ChargeResult[]): Promise<void> => afterDebits(db, results),

    /** A test-key charge: draws on test credit only; live balances never move. */
    chargeTest(input: Omit<ChargeInput, 'mode' | 'sellerId'>, db: Db = sql): Promise<ChargeResult> {
      return ledger.charge({ ...input, mode: 'test', sellerId: null }, db);
    },

    /**
     * Real traffic paid with test credit (route checks): the account's test credit returns to the
     * pool, and the platform pays the seller's part out of its revenue (214_ledger_test_credit_traffic.sql).
     */
    async chargeTestCredit(
      input: EntryContext & {
        postingKey: string;
        accountId: string;
        sellerId: string | null;
        amount: string;
        sellerAmount: string;
      },
      db: Db = sql,
    ): Promise<ChargeResult> {
      const [row] = await db<{ r: ChargeResult }[]>`
        select ledger_charge_test_credit(${input.postingKey}, ${input.accountId}::uuid, ${str(input.sellerId)}::uuid,
                                         ${input.amount}::numeric, ${input.sellerAmount}::numeric, ${str(input.reference)},
                                         ${str(input.relatedEntityType)}, ${str(input.relatedEntityId)}, ${clock.now()}) as r`;
      return row!.r;
    },

    /** Reverses a whole charge or settlement once (buyer refund, seller and platform refund_reversal). */
    async refund(
      input: { postingKey: string; chargePostingId: string; reference?: string | null },
      db: Db = sql,
    ): Promise<PostingResult> {
      const [row] = await db<{ r: PostingResult }[]>`
        select ledger_refund(${input.postingKey}, ${input.chargePostingId}::uuid, ${str(input.reference)}, ${clock.now()}) as r`;
      return row!.r;
    },

    /** Operator → one of its sub-accounts. */
    async transfer(
      input: {
        postingKey: string;
        fromAccountId: string;
        toAccountId: string;
        amount: string;
        reference?: string | null;
      },
      db: Db = sql,
    ): Promise<PostingResult & { toBalanceAfter: string }> {
      const [row] = await db<{ r: PostingResult & { toBalanceAfter: string } }[]>`
        select ledger_transfer(${input.postingKey}, ${input.fromAccountId}::uuid, ${input.toAccountId}::uuid,
                               ${input.amount}::numeric, ${str(input.reference)}, ${clock.now()}) as r`;
      return row!.r;
    },

    /** A sub-account's own money back to its operator (at most its balance less open holds). */
    async transferBack(
      input: {
        postingKey: string;
        subAccountId: string;
        operatorId: string;
        amount: string;
        reference?: string | null;
      },
      db: Db = sql,
    ): Promise<PostingResult & { toBalanceAfter: string }> {
      const [row] = await db<{ r: PostingResult & { toBalanceAfter: string } }[]>`
        select ledger_transfer_back(${input.postingKey}, ${input.subAccountId}::uuid, ${input.operatorId}::uuid,
                                    ${input.amount}::numeric, ${str(input.reference)}, ${clock.now()}) as r`;
      return row!.r;
    },

    async grantTestCredit(
      input: { postingKey: string; accountId: string; amount: string; reference?: string | null },
      db: Db = sql,
    ): Promise<PostingResult> {
      const [row] = await db<{ r: PostingResult }[]>`
        select ledger_grant_test_credit(${input.postingKey}, ${input.accountId}::uuid, ${input.amount}::numeric,
                                        ${str(input.reference)}, ${clock.now()}) as r`;
      return row!.r;
    },

    async chargeback(
      input: { postingKey: string; accountId: string; amount: string; reference?: string | null },
      db: Db = sql,
    ): Promise<PostingResult> {
      const [row] = await db<{ r: PostingResult }[]>`
        select ledger_chargeback(${input.postingKey}, ${input.accountId}::uuid, ${input.amount}::numeric,
                                 ${str(input.reference)}, ${clock.now()}) as r`;
      return row!.r;
    },

    /** Pays out seller earnings (seller payable → clearing). */
    async payout(
      input: { postingKey: string; sellerId: string; amount: string; reference?: string | null },
      db: Db = sql,
    ): Promise<PostingResult> {
      const [row] = await db<{ r: PostingResult }[]>`
        select ledger_payout(${input.postingKey}, ${input.sellerId}::uuid, ${input.amount}::numeric,
                             ${str(input.reference)}, ${clock.now()}) as r`;
      return row!.r;
    },

    /** The closing entry of a deleted account: its remaining own balance to platform revenue. */
    async forfeitBalance(
      input: { postingKey: string; accountId: string; amount: string; reference?: string | null },
      db: Db = sql,
    ): Promise<PostingResult> {
      const [row] = await db<{ r: PostingResult }[]>`
        select ledger_forfeit_balance(${input.postingKey}, ${input.accountId}::uuid, ${input.amount}::numeric,
                                      ${str(input.reference)}, ${clock.now()}) as r`;
      return row!.r;
    },

    /** Reserves `amount` of the available balance (test credit with mode 'test') until settled, released or expired. */
    async hold(input: HoldInput, db: Db = sql): Promise<HoldResult> {
      const now = clock.now();
      const expires = new Date(now.getTime() + input.ttlSeconds * 1000);
      const [row] = await db<{ r: HoldResult }[]>`
        select ledger_hold(${input.postingKey}, ${input.accountId}::uuid, ${input.amount}::numeric, ${input.mode === 'test'},
                           ${expires}, ${str(input.reference)}, ${str(input.relatedEntityType)}, ${str(input.relatedEntityId)},
                           ${str(input.callId)}, ${now}) as r`;
      return row!.r;
    },

    holdTest(input: Omit<HoldInput, 'mode'>, db: Db = sql): Promise<HoldResult> {
      return ledger.hold({ ...input, mode: 'test' }, db);
    },

    /** Posts the final amount + fee of a hold (to `sellerId`, else platform revenue) and releases the rest. */
    async settle(input: SettleInput, db: Db = sql): Promise<SettleResult> {
      const now = clock.now();
      return debit<SettleResult>(
        db,
        (db) => db`
          ledger_settle(${input.postingKey}, ${input.holdId}::uuid, ${str(input.sellerId)}::uuid, ${input.amount}::numeric,
                        ${input.fee ?? '0'}::numeric, ${str(input.reference)}, ${str(input.relatedEntityType)},
                        ${str(input.relatedEntityId)}, ${str(input.callId)}, ${now})`,
      );
    },

    /**
     * `hold` of many items in one call (migration 016): each item as `hold` would post it, in
     * array order; an item the balance cannot pay comes back as a `Refusal` and the others go on.
     * Invalid amounts, unknown accounts: the whole call fails (SVC02, SVC03).
     */
    async holdMany(inputs: HoldInput[], db: Db = sql): Promise<(HoldResult | Refusal)[]> {
      if (inputs.length === 0) return [];
      const now = clock.now();
      const items = inputs.map((i) => holdManyItem(i, now));
      const [row] = await db<
        { r: (HoldResult | Refusal)[] }[]
      >`select ledger_hold_many(${db.json(items as never)}, ${now}) as r`;
      return row!.r;
    },

    /**
     * `settle` of many holds in one call (migration 016), in array order; an item the balance
     * cannot pay comes back as a `Refusal` (its hold stays open) and the others go on. Unknown or
     * closed holds, invalid amounts: the whole call fails (SVC03, SVC02). An item's `markup` charge
     * is posted in the same pass (migration 317): the balance refuses the item when it cannot pay
     * both; a result without `markup` leaves that charge to the caller (a rule the pass does not keep).
     */
    async settleMany(inputs: SettleInput[], db: Db = sql): Promise<(SettleResult | Refusal)[]> {
      if (inputs.length === 0) return [];
      return inTx(db, async (db) => {
        const items = inputs.map((i) => ({
          key: i.postingKey,
          holdId: i.holdId,
          ...debitItem(i),
          ...(i.markup
            ? { markupKey: i.markup.postingKey, markupSellerId: i.markup.sellerId, markup: i.markup.amount }
            : {}),
        }));
        if (!deps.events) {
          const [row] = await db<
            { r: (SettleResult | Refusal)[] }[]
          >`select ledger_settle_many(${db.json(items as never)}, ${clock.now()}) as r`;
          return row!.r;
        }
        // The balance events are decided in the settle's own statement (ledger_debit_signal, the
        // rule afterDebits applies): no second round trip while the batch holds the payers' rows,
        // and the results are not sent back to the server. Each settle is followed by its markup
        // charge, the order they moved the balance in, in the statement's list and in \`moved\` alike.
        // A refusal has no mode and signals nothing.
        const [row] = await db<{ r: (SettleResult | Refusal)[]; hits: (Signal & { i: number })[] }[]>`
          select s.r, coalesce((
                   select jsonb_agg(jsonb_build_object('i', m.i - 1, 'parentId', g.parent_id, 'crossed', g.crossed,
                                                       'capped', g.capped) order by m.i)
                     from (select row_number() over (order by x.i, y.k) as i, y.e
                             from jsonb_array_elements(s.r) with ordinality as x(e, i)
                             cross join lateral (
                               select x.e as e, 1 as k
                               union all
                               select x.e->'markup', 2 where jsonb_typeof(x.e->'markup') = 'object') y) m
                     cross join lateral ledger_debit_signal(m.e, ${lowThreshold}::numeric, false) g
                    where g.crossed or g.capped), '[]'::jsonb) as hits
            from (select ledger_settle_many(${db.json(items as never)}, ${clock.now()}) as r) s`;
        const { r: results, hits } = row!;
        const moved = results.flatMap((r): (SettleResult | Refusal | ChargeResult)[] =>
          !isRefusal(r) && r.markup ? [r, r.markup] : [r],
        );
        for (const h of hits) await debitEvents(db, moved[h.i] as ChargeResult, h);
        return results;
      });
    },

    async release(
      input: { postingKey: string; holdId: string },
      db: Db = sql,
    ): Promise<PostingResult & { holdId: string; released: string }> {
      const [row] = await db<{ r: PostingResult & { holdId: string; released: string } }[]>`
        select ledger_release(${input.postingKey}, ${input.holdId}::uuid, ${clock.now()}) as r`;
      return row!.r;
    },

    /** Keeps a live call's hold from the sweeper; false when the hold is no longer open. */
    async extendHold(holdId: string, ttlSeconds: number, db: Db = sql): Promise<boolean> {
      const [row] = await db<{ r: boolean | null }[]>`
        select ledger_extend_hold(${holdId}::uuid, ${new Date(clock.now().getTime() + ttlSeconds * 1000)}) as r`;
      return row?.r === true;
    },

    /** Releases open holds past their expiry (their call or process is gone); returns how many. */
    async sweepExpiredHolds(limit = 500): Promise<number> {
      const [row] = await sql<{ n: number }[]>`select ledger_sweep_holds(${clock.now()}, ${limit}) as n`;
      return Number(row!.n);
    },

    /**
     * Summarizes the BRIN ranges of entries from block `fromBlock` on (null: the last 64), so a
     * look-up of a posting's entries reads one range, not every range written since the last
     * VACUUM (111). Returns the `fromBlock` of the next call; throws 55P03 when a VACUUM or
     * ANALYZE of entries holds the lock (try again later from the same block).
     */
    async summarizeEntries(fromBlock: number | null): Promise<number> {
      const [row] = await sql<{ n: string }[]>`select ledger_summarize_entries(${fromBlock}::bigint) as n`;
      return Number(row!.n);
    },

    /**
     * Credit limit (how far below zero the balance may go) and daily spend cap (null or "0": none),
     * of the live balance or (mode 'test') of test credit. A sub-account's limit is held on its
     * operator's balance of the same mode (SVC01 when the operator's own money cannot cover it).
     */
    async setLimits(
      accountId: string,
      limits: { creditLimit: string; dailySpendCap: string | null; mode?: LedgerMode },
      db: Db = sql,
    ): Promise<void> {
      const kind = limits.mode === 'test' ? 'test_credit' : 'customer';
      await db`select ledger_set_limits(${accountId}::uuid, ${limits.creditLimit}::numeric, ${limits.dailySpendCap}::numeric, ${clock.now()}, ${kind})`;
    },

    async balanceOf(accountId: string, db: Db = sql): Promise<Balance> {
      // Available computed in the same query: every trunk call reads it, one round trip matters.
      const [row] = await db<
        {
          balance: string;
          held: string;
          creditLimit: string;
          testCredit: string;
          testHeld: string;
          payable: string;
          available: string;
        }[]
      >`
        select balance::text, held::text, credit_limit::text, test_credit::text, test_held::text, payable::text,
               greatest(balance + credit_limit - held, 0)::text as available
        from ledger_owner_balances where owner_id = ${accountId}`;
      const b = row ?? {
        balance: '0',
        held: '0',
        creditLimit: '0',
        testCredit: '0',
        testHeld: '0',
        payable: '0',
        available: '0',
      };
      return {
        balance: money6(b.balance),
        held: money6(b.held),
        creditLimit: money6(b.creditLimit),
        available: money6(b.available),
        testCredit: money6(b.testCredit),
        testHeld: money6(b.testHeld),
        payable: money6(b.payable),
      };
    },

    /** Seller earnings credited after `since`, net of refunds reversed (what a payout hold period keeps back). */
    async earningsSince(ownerId: string, since: Date, db: Db = sql): Promise<string> {
      const [row] = await db<{ s: string }[]>`
        select coalesce(sum(amount), 0)::text as s from entries
        where owner_id = ${ownerId} and account_kind = 'seller_payable' and type in ('credit', 'refund_reversal')
          and created_at > ${since}`;
      return money6(row!.s);
    },

    /** Whether a daily cap has the account suspended on the current UTC day. */
    async capSuspended(accountId: string, db: Db = sql): Promise<boolean> {
      const [row] = await db<{ s: boolean }[]>`
        select coalesce(cap_suspended_day = (${clock.now()}::timestamptz at time zone 'UTC')::date, false) as s
        from ledger_accounts where owner_id = ${accountId} and kind = 'customer'`;
      return row?.s ?? false;
    },
  };
  return ledger;
}

export type Ledger = ReturnType<typeof createLedger>;
