/**
 * Earnings after the call: the release job (held → payable), fraud flags reviewed (cleared, or
 * confirmed and clawed back), supplier payments recorded, and the holder's earnings summary.
 */
import type { Logger } from 'pino';
import type { Config } from '../../config/schema.js';
import type { Sql } from '../../db/connection.js';
import { conflict, forbidden, notFound, ruleError } from '../../http/errors.js';
import { Money } from '../../ledger/money.js';
import type { Clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import { emit } from '../../webhooks/emit.js';
import type { CallsRepo } from './calls-repo.js';
import type { RevshareLedger } from './ledger-calls.js';
import type { Principal, Ranges } from './ranges.js';
import { effectiveRules, type FraudRuleSet } from './traffic.js';

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

export function createEarnings(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  repo: CallsRepo;
  ledger: RevshareLedger;
  ranges: Ranges;
  settings: Config['revenue_share'];
}) {
  const { sql, clock, repo, log } = deps;

  /** Releases one holder's due calls in one transaction: one posting, one release row, one event. */
  async function releaseHolder(holderId: string): Promise<string> {
    return sql.begin(async (tx) => {
      const now = clock.now();
      const due = await repo.takeDue(tx, holderId, now);
      if (due.length === 0) return '0.000000';
      const amount = due.reduce((s, c) => s.plus(c.payout), Money.zero);
      const releaseId = newId();
      const posting = await deps.ledger.release(tx, {
        key: `revshare:release:${releaseId}`,
        holderId,
        amount: amount.toString(),
        reference: `revenue share release ${releaseId}`,
        at: now,
      });
      await repo.insertRelease(tx, {
        id: releaseId,
        holderId,
        amount: amount.toString(),
        calls: due.length,
        postingId: posting.postingId,
        createdAt: now,
      });
      await repo.markReleased(
        tx,
        due.map((c) => c.id),
        releaseId,
      );
      await emit(tx, {
        accountId: holderId,
        event: 'revenue_share.earnings_released',
        data: { releaseId, amount: amount.toString(), calls: due.length },
      });
      return amount.toString();
    });
  }

  return {
    /** One pass of the release job; returns the number of holders released. */
    async runReleases(): Promise<number> {
      const holders = await repo.holdersDue(sql, clock.now(), 500);
      let n = 0;
      for (const h of holders) {
        try {
          await releaseHolder(h.holderId);
          n++;
        } catch (err) {
          log.error({ err, holderId: h.holderId }, 'revenue share release failed');
        }
      }
      return n;
    },

    async summary(holderId: string) {
      const [e, schedule, releases] = await Promise.all([
        repo.earnings(sql, holderId),
        repo.schedule(sql, holderId),
        repo.releases(sql, holderId, 10),
      ]);
      return {
        held: Money.parse(e.held).toString(),
        flagged: Money.parse(e.flagged).toString(),
        released: Money.parse(e.released).toString(),
        clawedBack: Money.parse(e.clawedBack).toString(),
        answeredCalls: Number(e.calls),
        schedule: schedule.map((s) => ({ releaseOn: s.day, amount: Money.parse(s.amount).toString() })),
        recentReleases: releases.map((r) => ({
          id: r.id,
          amount: Money.parse(r.amount).toString(),
          calls: r.calls,
          transactionId: r.postingId,
          createdAt: r.createdAt.toISOString(),
        })),
      };
    },

    async rules(p: Principal, rangeId: string | undefined): Promise<FraudRuleSet & { rangeId: string | null }> {
      if (!rangeId) return { rangeId: null, ...effectiveRules(deps.settings, {}) };
      const overrides = await deps.ranges.fraudRulesOf(p, rangeId);
      return { rangeId, ...effectiveRules(deps.settings, overrides) };
    },

    async putRules(p: Principal, rangeId: string, rules: Partial<FraudRuleSet>) {
      await deps.ranges.setFraudRules(p, rangeId, rules);
      return { rangeId, ...effectiveRules(deps.settings, rules) };
    },

    async flags(
      p: Principal,
      q: {
        status?: string | undefined;
        as?: 'holder' | 'supplier' | undefined;
        limit: number;
        cursor?: string | undefined;
      },
    ) {
      const scope =
        q.as === 'supplier' ? (p.role === 'admin' ? {} : { supplierId: p.accountId }) : { holderId: p.accountId };
      const rows = await repo.flags(sql, {
        ...scope,
        limit: q.limit,
        ...(q.status ? { status: q.status } : {}),
        ...(q.cursor ? { cursor: q.cursor } : {}),
      });
      return rows.map((f) => ({
        ...f,
        calls: Number(f.calls),
        payout: Money.parse(f.payout).toString(),
        resolvedAt: iso(f.resolvedAt),
        createdAt: f.createdAt.toISOString(),
      }));
    },

    /**
     * The range's supplier or the operator reviews a flag: `clear` returns its calls to the hold,
     * `confirm` reverses their credits (the supplier is not charged, the holder not paid).
     */
    async resolve(p: Principal, flagId: string, input: { action: 'clear' | 'confirm'; note?: string | undefined }) {
      const result = await sql.begin(async (tx) => {
        const f = await repo.flag(tx, flagId, true);
        if (!f || (p.role !== 'admin' && f.supplierId !== p.accountId)) {
          if (f && f.holderId === p.accountId)
            throw forbidden('The range’s supplier or the operator reviews fraud flags');
          throw notFound('Flag');
        }
        if (f.status !== 'open') throw conflict(`The flag is already ${f.status}`);
        let postingId: string | null = null;
        const totals = await repo.flagTotals(tx, flagId);
        if (input.action === 'confirm' && Money.parse(totals.charge).isPositive()) {
          const posting = await deps.ledger.clawback(tx, {
            key: `revshare:clawback:${flagId}`,
            holderId: f.holderId,
            charge: totals.charge,
            payout: totals.payout,
            reference: `fraud flag ${flagId} (${f.rule})`,
            at: clock.now(),
          });
          postingId = posting.postingId;
        }
        const status: 'cleared' | 'confirmed' = input.action === 'clear' ? 'cleared' : 'confirmed';
        await repo.resolveFlag(tx, flagId, {
          status,
          note: input.note ?? null,
          by: p.accountId,
          at: clock.now(),
          postingId,
        });
        const data = {
          flagId,
          status,
          calls: Number(totals.calls),
          payout: Money.parse(totals.payout).toString(),
          note: input.note ?? null,
        };
        await emit(tx, { accountId: f.holderId, event: 'revenue_share.flag_resolved', data });
        return { id: flagId, ...data, transactionId: postingId };
      });
      log.info({ flagId, status: result.status }, 'revenue share fraud flag resolved');
      return result;
    },

    /** Operator only: the supplier paid for the range's traffic up to `periodEnd` (cash in; releases wait on it). */
    async supplierPayment(
      p: Principal,
      input: { rangeId: string; periodEnd: string; amount: string; reference?: string | undefined },
    ) {
      if (p.role !== 'admin') throw forbidden('Only the operator records supplier payments');
      const range = await deps.ranges.managed(p, input.rangeId);
      if (!Money.parse(input.amount).isPositive()) throw ruleError('amount must be above zero');
      const id = newId();
      const at = clock.now();
      await sql.begin(async (tx) => {
        const posting = await deps.ledger.supplierPayment(tx, {
          key: `revshare:supplier-payment:${id}`,
          supplierId: range.supplierId,
          amount: input.amount,
          reference: input.reference ?? `range ${range.prefix} through ${input.periodEnd}`,
          at,
        });
        await repo.insertSupplierPayment(tx, {
          id,
          rangeId: range.id,
          supplierId: range.supplierId,
          periodEnd: input.periodEnd,
          amount: input.amount,
          reference: input.reference ?? null,
          postingId: posting.postingId,
          recordedBy: p.accountId,
          createdAt: at,
        });
      });
      const account = await repo.rangeAccount(sql, range.id);
      const outstanding = Money.parse(account.charged).minus(account.paid);
      return {
        id,
        rangeId: range.id,
        periodEnd: input.periodEnd,
        amount: Money.parse(input.amount).toString(),
        charged: Money.parse(account.charged).toString(),
        paid: Money.parse(account.paid).toString(),
        outstanding: outstanding.toString(),
        createdAt: at.toISOString(),
      };
    },
  };
}

export type Earnings = ReturnType<typeof createEarnings>;
