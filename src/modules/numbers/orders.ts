import type { Logger } from 'pino';
import type { Sql } from '../../db/connection.js';
import { AppError, conflict, InsufficientBalanceError, notFound, ruleError, SqlState } from '../../http/errors.js';
import type { Ledger } from '../../ledger/ledger.js';
import { Money } from '../../ledger/money.js';
import type { Clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import { emit } from '../../webhooks/emit.js';
import { createFeeSplit } from './fee.js';
import * as catalogRepo from './catalog-repo.js';
import * as dids from './did-repo.js';
import * as inv from './inventory-repo.js';
import * as holds from './reservation-repo.js';
import { addMonths, presentDid, type DidView } from './present.js';

/** Whether an account's identity is verified (the Compliance module's answer). */
export interface KycCheck {
  isVerified(accountId: string): Promise<boolean>;
}

/** Resolves `subAccountId` to a sub-account of the caller (NOT_FOUND otherwise). */
export type SubAccountOf = (operatorId: string, subAccountId: string) => Promise<string>;

export interface BuyInput {
  skuId: string;
  groupId: string;
  countryId?: string | undefined;
  country?: string | undefined;
  city?: string | null | undefined;
  areaPrefix?: string | null | undefined;
  didType?: string | null | undefined;
  subAccountId?: string | undefined;
}

export interface BulkItemResult {
  index: number;
  skuId: string;
  groupId: string;
  status: 'ok' | 'failed' | 'skipped';
  did: DidView | null;
  error: { code: string; message: string } | null;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The ledger refused a debit for the balance or the daily cap (nothing posted). */
export const isBalanceRefusal = (err: unknown) => {
  const code = (err as { code?: unknown } | null)?.code;
  return (
    code === SqlState.INSUFFICIENT_BALANCE || code === SqlState.DAILY_CAP || err instanceof InsufficientBalanceError
  );
};

/**
 * Buying numbers: setup plus the first month charged through the ledger in the transaction that
 * takes a number from the seller's inventory (the seller credited, the platform keeping its
 * percentage), then provisioning (pending → active) right after commit.
 */
export function createOrders(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  ledger: Ledger;
  kyc: KycCheck;
  subAccountOf: SubAccountOf;
  platformFeePercent: string;
}) {
  const { sql, clock, log, ledger } = deps;
  const split = createFeeSplit(deps.platformFeePercent);

  async function provisionPending(limit = 100): Promise<number> {
    let done = 0;
    for (;;) {
      const n = await sql.begin(async (tx) => {
        const ids = await dids.lockPending(tx, limit);
        const at = clock.now();
        for (const id of ids) {
          const number = await dids.activate(tx, id, at, addMonths(at, 1));
          const d = (await dids.byId(tx, id))!;
          await dids.event(tx, { didId: id, accountId: d.accountId, kind: 'activated', at, data: { number } });
          await emit(tx, {
            accountId: d.accountId,
            event: 'number.activated',
            data: { didId: id, number, nextRenewalAt: d.nextRenewalAt?.toISOString() ?? null },
            at,
          });
        }
        return ids.length;
      });
      done += n;
      if (n < limit) return done;
    }
  }

  let provisioning: Promise<unknown> = Promise.resolve();
  /** Runs the provisioner after the current run (one at a time in this process). */
  const kick = () => {
    provisioning = provisioning
      .then(() => provisionPending())
      .catch((err: unknown) => log.error({ err }, 'number provisioning failed'));
    return provisioning;
  };

  /** The checks every order passes, live or simulated: the owner, the group and SKU, the price. */
  async function prepare(callerId: string, input: BuyInput) {
    const owner = input.subAccountId ? await deps.subAccountOf(callerId, input.subAccountId) : callerId;
    // Ids are up to 64 characters on the wire (spec); ours are UUIDs, so anything else names nothing.
    if (!UUID.test(input.groupId)) throw notFound('Catalogue group');
    if (!UUID.test(input.skuId)) throw notFound('SKU');
    const group = await catalogRepo.group(sql, input.groupId);
    if (!group || group.status !== 'active') throw notFound('Catalogue group');
    const sku = (await catalogRepo.skusOf(sql, [group.groupId])).find((s) => s.skuId === input.skuId);
    if (!sku) throw notFound('SKU');
    if (input.countryId !== undefined && input.countryId !== group.countryId)
      throw ruleError('countryId does not match the catalogue group');
    if (group.sellerId === owner || group.sellerId === callerId) throw ruleError('These numbers are your own listing');
    if (group.requiresKyc && !(await deps.kyc.isVerified(owner)))
      throw new AppError('KYC_REQUIRED', 'Numbers of this group need verified identity (Compliance)');
    const setup = Money.parse(sku.setupPrice);
    const monthly = Money.parse(sku.monthlyPrice);
    return { owner, group, sku, setup, monthly, price: setup.plus(monthly) };
  }

  /**
   * A test key's order (spec "Accounting facts" 3): priced and checked as a live one, and the
   * number it would get shown, but nothing is taken, charged or kept. The owner's test credit must
   * cover the price (`spent`: what earlier items of the same bulk order would have drawn).
   */
  async function simulate(callerId: string, input: BuyInput, spent = Money.parse('0')) {
    const o = await prepare(callerId, input);
    const [next] = await sql<{ number: string }[]>`
      select number from did_numbers where group_id = ${o.group.groupId} and state = 'available' order by id limit 1`;
    if (!next) throw conflict('No numbers left in this catalogue group');
    const credit = Money.parse((await ledger.balanceOf(o.owner)).testCredit);
    if (credit.minus(spent).cmp(o.price) < 0)
      throw new InsufficientBalanceError('Insufficient balance: test credit', 'balance');
    const at = clock.now();
    return {
      price: o.price,
      did: {
        ...presentDid({
          id: newId(),
          accountId: o.owner,
          orderedBy: callerId,
          groupId: o.group.groupId,
          skuId: o.sku.skuId,
          sellerId: o.group.sellerId,
          numberId: null,
          number: next.number,
          status: 'active',
          pointMode: 'unrouted',
          pointsTo: null,
          pointsToBackup: null,
          ringTimeoutSeconds: 25,
          autoRenew: true,
          channels: o.sku.channels,
          setupPrice: o.setup.toString(),
          monthlyPrice: o.monthly.toString(),
          graceDays: o.group.graceDays,
          label: null,
          aiAgentId: null,
          periodsPaid: 1,
          orderedAt: at,
          activatedAt: at,
          nextRenewalAt: addMonths(at, 1),
          suspendedAt: null,
          releasedAt: null,
          endpointReachable: null,
          endpointCause: null,
          endpointCheckedAt: null,
          tags: [],
          callerName: null,
          emergencyAddress: null,
          releaseAt: null,
          country: o.group.country,
          countryCode: o.group.countryCode,
          city: o.group.city,
          areaPrefix: o.group.areaPrefix,
          didType: o.group.typeName,
          origin: 'rented',
          portInId: null,
          inboundCarrierId: null,
        }),
        simulated: true as const,
      },
    };
  }

  /** `reservationId`: the order takes the number the caller holds (`POST /dids/reservations`). */
  async function buy(callerId: string, input: BuyInput, opts: { reservationId?: string } = {}): Promise<DidView> {
    const { owner, group, sku, setup, monthly, price } = await prepare(callerId, input);
    const { fee, seller } = split(price);
    const id = newId();
    const at = clock.now();
    await sql.begin(async (tx) => {
      const number = opts.reservationId
        ? await holds.take(tx, opts.reservationId, callerId, group.groupId, at)
        : await inv.takeNumber(tx, group.groupId);
      if (!number)
        throw opts.reservationId ? notFound('Held reservation') : conflict('No numbers left in this catalogue group');
      await dids.insert(tx, {
        id,
        accountId: owner,
        orderedBy: callerId,
        groupId: group.groupId,
        skuId: sku.skuId,
        sellerId: group.sellerId,
        numberId: number.id,
        channels: sku.channels,
        setupPrice: setup.toString(),
        monthlyPrice: monthly.toString(),
        graceDays: group.graceDays,
        orderedAt: at,
      });
      const charge = await ledger.charge(
        {
          postingKey: `did:${id}:order`,
          accountId: owner,
          sellerId: group.sellerId,
          amount: seller.toString(),
          fee: fee.toString(),
          reference: 'Phone number: setup and first month',
          relatedEntityType: 'did',
          relatedEntityId: id,
        },
        tx,
      );
      if (opts.reservationId) await holds.markBought(tx, opts.reservationId, id, at);
      await dids.event(tx, {
        didId: id,
        accountId: owner,
        kind: 'ordered',
        at,
        amount: price.toString(),
        postingId: charge.postingId,
        data: { setup: setup.toString(), monthly: monthly.toString(), fee: fee.toString(), orderedBy: callerId },
      });
      await emit(tx, {
        accountId: owner,
        event: 'number.purchased',
        data: { didId: id, groupId: group.groupId, skuId: sku.skuId, amount: price.toString(), orderedBy: callerId },
        at,
      });
    });
    log.info({ didId: id, accountId: owner, groupId: group.groupId }, 'number ordered');
    void kick();
    return presentDid((await dids.byId(sql, id))!);
  }

  return {
    buy,
    provisionPending,
    /** Waits for provisioning started by earlier orders (tests, shutdown). */
    settled: () => provisioning,

    /** A test key's order: the DID it would make, marked `simulated`; nothing kept or charged. */
    simulateBuy: async (callerId: string, input: BuyInput) => (await simulate(callerId, input)).did,

    /**
     * Buys in order; the first item the balance cannot pay fails and every later one is skipped.
     * `simulated`: a test key's bulk order, each item simulated against the test credit left by the earlier ones.
     */
    async bulkBuy(callerId: string, items: BuyInput[], opts: { simulated?: boolean } = {}) {
      const results: BulkItemResult[] = [];
      let spent = Money.parse('0');
      const one = async (item: BuyInput) => {
        if (!opts.simulated) return buy(callerId, item);
        const r = await simulate(callerId, item, spent);
        spent = spent.plus(r.price);
        return r.did;
      };
      let outOfMoney = false;
      for (const [index, item] of items.entries()) {
        const base = { index, skuId: item.skuId, groupId: item.groupId };
        if (outOfMoney) {
          results.push({ ...base, status: 'skipped', did: null, error: null });
          continue;
        }
        try {
          results.push({ ...base, status: 'ok', did: await one(item), error: null });
        } catch (err) {
          if (isBalanceRefusal(err)) outOfMoney = true;
          else if (!(err instanceof AppError)) throw err;
          const e = err as { code: string; message: string };
          results.push({
            ...base,
            status: 'failed',
            did: null,
            error: { code: err instanceof AppError ? err.code : 'VALIDATION_ERROR', message: e.message },
          });
        }
      }
      return {
        ...(opts.simulated ? { simulated: true as const } : {}),
        requested: items.length,
        succeeded: results.filter((r) => r.status === 'ok').length,
        failed: results.filter((r) => r.status === 'failed').length,
        skipped: results.filter((r) => r.status === 'skipped').length,
        items: results,
      };
    },
  };
}

export type Orders = ReturnType<typeof createOrders>;
