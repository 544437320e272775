import type { Sql } from '../../db/connection.js';
import { notFound, validationError } from '../../http/errors.js';
import { Money, money6 } from '../../ledger/money.js';
import type { Clock } from '../../platform/clock.js';

const LINE_NAMES: Record<string, string> = {
  topup: 'Top-ups',
  charge: 'Traffic and services',
  platform_fee: 'Platform fees',
  refund: 'Refunds',
  transfer: 'Transfers to sub-accounts',
  chargeback: 'Card chargebacks',
  credit: 'Credits',
  refund_reversal: 'Refund reversals',
  payout: 'Payouts',
  test_credit: 'Test credit',
};

const MONTH = /^(\d{4})-(0[1-9]|1[0-2])$/;

/** Monthly statements of the live balance and of seller earnings, from the ledger's entries. */
export function createStatements(deps: { sql: Sql; clock: Clock }) {
  const { sql, clock } = deps;

  function bounds(month: string) {
    const m = MONTH.exec(month);
    if (!m) throw validationError([{ path: 'month', message: 'must be YYYY-MM' }]);
    const start = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, 1));
    const end = new Date(Date.UTC(Number(m[1]), Number(m[2]), 1));
    return { start, end };
  }

  /** The balance after the last entry of `kind` before `at` (0 before any). */
  async function balanceAt(accountId: string, kind: 'customer' | 'seller_payable', at: Date) {
    const [row] = await sql<{ b: string }[]>`
      select balance_after::text as b from entries
      where owner_id = ${accountId} and account_kind = ${kind} and created_at < ${at}
      order by created_at desc, seq desc limit 1`;
    return money6(row?.b ?? '0');
  }

  async function statement(accountId: string, month: string) {
    const { start, end } = bounds(month);
    if (start > clock.now()) throw notFound('Statement');
    const sums = await sql<{ kind: string; type: string; n: string; total: string }[]>`
      select account_kind as kind, type, count(*)::text as n, sum(amount)::text as total from entries
      where owner_id = ${accountId} and account_kind in ('customer', 'seller_payable')
        and created_at >= ${start} and created_at < ${end}
      group by account_kind, type order by account_kind, type`;
    const [opening, closing, earningsOpening, earningsClosing] = await Promise.all([
      balanceAt(accountId, 'customer', start),
      balanceAt(accountId, 'customer', end),
      balanceAt(accountId, 'seller_payable', start),
      balanceAt(accountId, 'seller_payable', end),
    ]);
    const lines = (kind: string) =>
      sums
        .filter((s) => s.kind === kind)
        .map((s) => ({
          type: s.type,
          description: LINE_NAMES[s.type] ?? s.type,
          count: Number(s.n),
          amount: money6(s.total),
        }));
    const total = (kind: string, types: string[]) =>
      sums
        .filter((s) => s.kind === kind && types.includes(s.type))
        .reduce((a, s) => a.plus(s.total), Money.zero)
        .toString();
    return {
      month,
      periodStart: start.toISOString(),
      periodEnd: end.toISOString(),
      currency: 'USD' as const,
      final: end <= clock.now(),
      balance: {
        opening,
        closing,
        topups: total('customer', ['topup']),
        spend: Money.zero.minus(total('customer', ['charge', 'platform_fee', 'refund'])).toString(),
        lines: lines('customer'),
      },
      earnings: {
        opening: earningsOpening,
        closing: earningsClosing,
        credited: total('seller_payable', ['credit', 'refund_reversal']),
        paidOut: Money.zero.minus(total('seller_payable', ['payout'])).toString(),
        lines: lines('seller_payable'),
      },
      generatedAt: clock.now().toISOString(),
    };
  }

  return {
    statement,

    /** Months with ledger activity, newest first (at most 24), with their opening and closing balances. */
    async months(accountId: string) {
      const rows = await sql<{ month: string }[]>`
        select distinct to_char(created_at at time zone 'UTC', 'YYYY-MM') as month from entries
        where owner_id = ${accountId} and account_kind in ('customer', 'seller_payable')
        order by 1 desc limit 24`;
      return Promise.all(
        rows.map(async ({ month }) => {
          const s = await statement(accountId, month);
          return {
            month,
            final: s.final,
            openingBalance: s.balance.opening,
            closingBalance: s.balance.closing,
            topups: s.balance.topups,
            spend: s.balance.spend,
            earningsCredited: s.earnings.credited,
            pdfUrl: `/billing/statements/${month}/pdf`,
          };
        }),
      );
    },
  };
}

export type Statements = ReturnType<typeof createStatements>;
export type Statement = Awaited<ReturnType<Statements['statement']>>;
