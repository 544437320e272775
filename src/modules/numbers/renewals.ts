import { Decimal } from 'decimal.js';
import type { Logger } from 'pino';
import type { Sql, TransactionSql } from '../../db/connection.js';
import { SqlState } from '../../http/errors.js';
import type { Ledger } from '../../ledger/ledger.js';
import { Money } from '../../ledger/money.js';
import type { Clock } from '../../platform/clock.js';
import { emit } from '../../webhooks/emit.js';
import * as dids from './did-repo.js';
import type { DidRow } from './did-repo.js';
import * as inv from './inventory-repo.js';
import { addMonths } from './present.js';

const DAY_MS = 86_400_000;

const isBalanceRefusal = (err: unknown) => {
  const code = (err as { code?: unknown } | null)?.code;
  return code === SqlState.INSUFFICIENT_BALANCE || code === SqlState.DAILY_CAP;
};

export interface RenewalRun {
  renewed: number;
  suspended: number;
  reactivated: number;
  released: number;
}

/**
 * The monthly renewal of rented numbers. Each DID is handled in its own transaction holding its
 * row lock: the charge (posting key `did:<id>:period:<n>`, so the ledger posts a period once
 * whatever happens), the new state, the history row and the outbox event commit together or
 * not at all. A daemon killed mid-run leaves every DID either renewed or still due; the next
 * run (on any daemon) picks up the rest, and a DID another daemon holds is skipped.
 */
export function createRenewals(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  ledger: Ledger;
  platformFeePercent: string;
  /** `[numbers] ported_monthly_fee`: what a ported number's month costs, read at each renewal. */
  portedMonthlyFee?: string;
  batch?: number;
}) {
  const { sql, clock, log, ledger } = deps;
  const feeRate = new Decimal(deps.platformFeePercent).div(100);
  const batch = deps.batch ?? 200;
  const portedFee = Money.parse(deps.portedMonthlyFee ?? '0');

  /** A month's price: the rented number's, fixed at order; a ported number's, the platform's fee now. */
  const monthlyOf = (d: DidRow) => (d.origin === 'ported' ? portedFee : Money.parse(d.monthlyPrice));

  /** Charges period `period` of `d`; null when the balance (or daily cap) refuses it (nothing posted). */
  async function chargePeriod(tx: TransactionSql, d: DidRow, period: number) {
    const monthly = monthlyOf(d);
    // A ported number has no seller: its whole fee is the platform's (the ledger's no-seller charge).
    const fee = d.sellerId === null ? Money.parse('0') : monthly.times(feeRate);
    try {
      return await tx.savepoint((sp) =>
        ledger.charge(
          {
            postingKey: `did:${d.id}:period:${period}`,
            accountId: d.accountId,
            sellerId: d.sellerId,
            amount: monthly.minus(fee).toString(),
            ...(d.sellerId === null ? {} : { fee: fee.toString() }),
            reference: d.origin === 'ported' ? `Ported number: month ${period}` : `Phone number: month ${period}`,
            relatedEntityType: 'did',
            relatedEntityId: d.id,
          },
          sp,
        ),
      );
    } catch (err) {
      if (isBalanceRefusal(err)) return null;
      throw err;
    }
  }

  async function release(tx: TransactionSql, d: DidRow, at: Date, reason: 'not_renewed' | 'unpaid') {
    await dids.release(tx, d.id, at);
    if (d.numberId) await inv.returnNumber(tx, d.numberId);
    await dids.event(tx, { didId: d.id, accountId: d.accountId, kind: 'released', at, data: { reason } });
    await emit(tx, {
      accountId: d.accountId,
      event: 'number.released',
      data: { didId: d.id, number: d.number, reason },
      at,
    });
  }

  /** One DID, locked; what happened to it, or null when it was no longer due. */
  /** Records a charged month: the number's next renewal, its history entry and `number.renewed`. */
  async function paidPeriod(
    tx: TransactionSql,
    d: DidRow,
    period: number,
    next: Date,
    at: Date,
    postingId: string,
    kind: 'renewed' | 'reactivated',
  ) {
    const amount = monthlyOf(d).toString();
    await dids.renewed(tx, d.id, period, next, at);
    if (d.origin === 'ported') await dids.setMonthlyPrice(tx, d.id, amount);
    await dids.event(tx, { didId: d.id, accountId: d.accountId, kind, at, amount, postingId, data: { period } });
    await emit(tx, {
      accountId: d.accountId,
      event: 'number.renewed',
      data: {
        didId: d.id,
        number: d.number,
        period,
        amount,
        nextRenewalAt: next.toISOString(),
        ...(kind === 'reactivated' ? { reactivated: true } : {}),
      },
      at,
    });
  }

  async function renewOne(id: string): Promise<keyof RenewalRun | null> {
    return sql.begin(async (tx) => {
      const d = await dids.byId(tx, id, { forUpdate: true });
      const at = clock.now();
      if (!d) return null;
      if (d.status === 'active') {
        if (d.nextRenewalAt === null || d.nextRenewalAt > at) return null;
        if (!d.autoRenew) {
          await release(tx, d, at, 'not_renewed');
          return 'released';
        }
        const period = d.periodsPaid + 1;
        if (monthlyOf(d).isZero()) {
          // A ported number while the platform charges nothing for it: the month passes, nothing posted.
          await dids.renewed(tx, d.id, period, addMonths(d.nextRenewalAt, 1), at);
          return null;
        }
        const charge = await chargePeriod(tx, d, period);
        if (charge === null) {
          await dids.suspend(tx, d.id, at);
          await dids.event(tx, { didId: d.id, accountId: d.accountId, kind: 'suspended', at, data: { period } });
          const releaseAt = new Date(at.getTime() + d.graceDays * DAY_MS);
          await emit(tx, {
            accountId: d.accountId,
            event: 'number.suspended',
            data: {
              didId: d.id,
              number: d.number,
              reason: 'insufficient_balance',
              amount: monthlyOf(d).toString(),
              releaseAt: releaseAt.toISOString(),
            },
            at,
          });
          return 'suspended';
        }
        await paidPeriod(tx, d, period, addMonths(d.nextRenewalAt, 1), at, charge.postingId, 'renewed');
        return 'renewed';
      }
      if (d.status === 'suspended' && d.suspendedAt !== null) {
        if (at.getTime() >= d.suspendedAt.getTime() + d.graceDays * DAY_MS) {
          await release(tx, d, at, 'unpaid');
          return 'released';
        }
        if (!d.autoRenew) return null;
        // Within the grace days a top-up brings the number back: the unpaid month is charged.
        const period = d.periodsPaid + 1;
        if (monthlyOf(d).isZero()) {
          // The platform stopped charging for ported numbers meanwhile: nothing is owed any more.
          await dids.renewed(tx, d.id, period, addMonths(d.nextRenewalAt ?? at, 1), at);
          await dids.event(tx, { didId: d.id, accountId: d.accountId, kind: 'reactivated', at, data: { period } });
          return 'reactivated';
        }
        const charge = await chargePeriod(tx, d, period);
        if (charge === null) return null;
        await paidPeriod(tx, d, period, addMonths(d.nextRenewalAt ?? at, 1), at, charge.postingId, 'reactivated');
        return 'reactivated';
      }
      return null;
    });
  }

  return {
    renewOne,
    /** Handles every DID due now (active past nextRenewalAt, suspended ones) in batches. */
    async run(): Promise<RenewalRun> {
      const out: RenewalRun = { renewed: 0, suspended: 0, reactivated: 0, released: 0 };
      const seen = new Set<string>();
      for (;;) {
        const ids = await dids.due(sql, clock.now(), batch, [...seen]);
        if (ids.length === 0) break;
        for (const id of ids) {
          seen.add(id);
          const r = await renewOne(id);
          if (r) out[r]++;
        }
      }
      if (out.renewed + out.suspended + out.reactivated + out.released > 0) log.info(out, 'number renewals done');
      return out;
    },
  };
}

export type Renewals = ReturnType<typeof createRenewals>;
