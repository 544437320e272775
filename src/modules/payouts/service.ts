import type { Logger } from 'pino';
import type { Config } from '../../config/schema.js';
import type { Sql } from '../../db/connection.js';
import { AppError, conflict, insufficientBalance, notFound, validationError } from '../../http/errors.js';
import type { Ledger } from '../../ledger/ledger.js';
import { Money } from '../../ledger/money.js';
import type { Clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import { emit } from '../../webhooks/emit.js';
import type { PayoutDestination, PayoutRow, PayoutsRepo } from './repo.js';

/** Identity verification as the Compliance module answers it. */
export interface KycGate {
  isVerified(accountId: string): Promise<boolean>;
}

const last4 = (s: string | undefined) => (s ? s.replace(/\s/g, '').slice(-4) : null);

/** What leaves the API of a payout: never the full account number or IBAN. */
export function presentPayout(p: PayoutRow) {
  const d = p.destination;
  return {
    id: p.id,
    amount: Money.parse(p.amount).toString(),
    currency: 'USD' as const,
    status: p.status,
    method: p.method,
    destination: {
      accountName: d.accountName,
      bankName: d.bankName ?? null,
      accountLast4: last4(d.iban ?? d.accountNumber),
      swift: d.swift ?? null,
      country: d.country ?? null,
    },
    note: p.note,
    reviewNote: p.reviewNote,
    transactionId: p.postingId,
    reviewedAt: p.reviewedAt?.toISOString() ?? null,
    createdAt: p.createdAt.toISOString(),
    updatedAt: p.updatedAt.toISOString(),
  };
}

/**
 * Payouts of seller earnings: requested by the seller (session only), held back while earnings are
 * younger than the hold period, approved by the operator, who posts the ledger's `payout` entry.
 */
export function createPayoutsService(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  config: Readonly<Config>;
  ledger: Ledger;
  repo: PayoutsRepo;
  kyc: KycGate;
}) {
  const { sql, clock, ledger, repo, log } = deps;
  const b = deps.config.billing;

  /** Earnings not yet paid, less those inside the hold period and those already requested. */
  async function withdrawable(accountId: string, db: Parameters<PayoutsRepo['pendingTotal']>[0] = sql) {
    const since = new Date(clock.now().getTime() - b.payout_hold_days * 86_400_000);
    const [bal, recent, pending] = await Promise.all([
      ledger.balanceOf(accountId, db),
      ledger.earningsSince(accountId, since, db),
      repo.pendingTotal(db, accountId),
    ]);
    const w = Money.parse(bal.payable).minus(recent).minus(pending);
    return w.isNegative() ? Money.zero : w;
  }

  return {
    withdrawable: async (accountId: string) => (await withdrawable(accountId)).toString(),

    /** Whether a payout of the account waits for the operator (its amount is always positive). */
    hasPending: async (accountId: string) => Money.parse(await repo.pendingTotal(sql, accountId)).isPositive(),

    terms: () => ({ minimum: Money.parse(b.payout_min_amount).toString(), holdDays: b.payout_hold_days }),

    async request(
      accountId: string,
      input: { amount: string; destination: PayoutDestination; note?: string | undefined },
    ) {
      if (!input.destination.iban && !input.destination.accountNumber)
        throw validationError([{ path: 'destination', message: 'needs an iban or an accountNumber' }]);
      const amount = Money.parse(input.amount);
      if (amount.cmp(b.payout_min_amount) < 0)
        throw validationError([
          { path: 'amount', message: `the minimum payout is ${Money.parse(b.payout_min_amount)} USD` },
        ]);
      if (!(await deps.kyc.isVerified(accountId)))
        throw new AppError('KYC_REQUIRED', 'Identity verification is required before a payout');
      const row = await sql.begin(async (tx) => {
        // One request at a time per account: two at once would both see the same earnings free.
        await tx`select pg_advisory_xact_lock(hashtextextended(${`payout:${accountId}`}, 0))`;
        const w = await withdrawable(accountId, tx);
        if (amount.cmp(w) > 0)
          throw insufficientBalance(`Insufficient balance: the payout exceeds availableBalance (${w.toString()} USD)`);
        const row = await repo.insert(tx, {
          id: newId(),
          accountId,
          amount: amount.toString(),
          destination: input.destination,
          note: input.note ?? null,
          at: clock.now(),
        });
        await emit(tx, {
          accountId,
          event: 'payout.requested',
          data: { payoutId: row.id, amount: amount.toString() },
          at: clock.now(),
        });
        return row;
      });
      log.info({ accountId, payoutId: row.id, amount: amount.toString() }, 'payout requested');
      return presentPayout(row);
    },

    async list(accountId: string, cursor: string | undefined, max: number) {
      return (await repo.list(accountId, cursor, max)).map(presentPayout);
    },

    /** Operator: requests waiting for a decision, oldest first. */
    async pending(max = 100) {
      return (await repo.pending(max)).map((p) => ({ ...presentPayout(p), accountId: p.accountId }));
    },

    /** Operator: pays out — the ledger's `payout` entry moves the earnings out, once. */
    async approve(id: string, by: string | null, note: string | null = null) {
      return sql.begin(async (tx) => {
        const p = await repo.lock(tx, id);
        if (!p) throw notFound('Payout');
        if (p.status !== 'pending_approval') throw conflict(`The payout is ${p.status}`);
        const r = await ledger.payout(
          { postingKey: `payout:${id}`, sellerId: p.accountId, amount: p.amount, reference: `payout ${id}` },
          tx,
        );
        const row = await repo.review(tx, id, { status: 'paid', postingId: r.postingId, note, by, at: clock.now() });
        await emit(tx, {
          accountId: p.accountId,
          event: 'payout.paid',
          data: { payoutId: id, amount: Money.parse(p.amount).toString(), transactionId: r.postingId },
          at: clock.now(),
        });
        return presentPayout(row);
      });
    },

    async reject(id: string, by: string | null, note: string) {
      return sql.begin(async (tx) => {
        const p = await repo.lock(tx, id);
        if (!p) throw notFound('Payout');
        if (p.status !== 'pending_approval') throw conflict(`The payout is ${p.status}`);
        const row = await repo.review(tx, id, { status: 'rejected', postingId: null, note, by, at: clock.now() });
        await emit(tx, {
          accountId: p.accountId,
          event: 'payout.rejected',
          data: { payoutId: id, amount: Money.parse(p.amount).toString(), reason: note },
          at: clock.now(),
        });
        return presentPayout(row);
      });
    },
  };
}

export type PayoutsService = ReturnType<typeof createPayoutsService>;
