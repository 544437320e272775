import type { Stringifier } from 'csv-stringify';
import type { Logger } from 'pino';
import type { Config } from '../../config/schema.js';
import type { Sql } from '../../db/connection.js';
import type { Ledger } from '../../ledger/ledger.js';
import { money6 } from '../../ledger/money.js';
import { createCsvWriter } from '../../http/csv.js';
import { validationError } from '../../http/errors.js';
import type { Clock } from '../../platform/clock.js';
import { createBillingRepo, type TransactionFilter, type TransactionRow } from './repo.js';

export const CSV_MAX_ROWS = 10_000;

export const CSV_COLUMNS = [
  'id',
  'userId',
  'type',
  'ledger',
  'amount',
  'balanceAfter',
  'reference',
  'relatedEntityType',
  'relatedEntityId',
  'callId',
  'createdAt',
] as const;
export const CSV_NUMERIC = ['amount', 'balanceAfter'] as const;

export const presentTransaction = (r: TransactionRow) => ({ ...r, createdAt: r.createdAt.toISOString() });

/** Display figures of charts are plain JSON numbers (spec "Conventions": money). */
const display = (s: string | null) => (s === null ? 0 : Number(money6(s)));

export function createBillingService(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  config: Readonly<Config>;
  ledger: Ledger;
  withdrawable: (accountId: string) => Promise<string>;
}) {
  const { clock, ledger } = deps;
  const repo = createBillingRepo(deps.sql);

  function checkRange(f: TransactionFilter) {
    if (f.from && f.to && new Date(f.from) >= new Date(f.to))
      throw validationError([{ path: 'from', message: 'must be before "to"' }]);
  }

  return {
    async balance(accountId: string) {
      const b = await ledger.balanceOf(accountId);
      return {
        balance: b.balance,
        available: b.available,
        held: b.held,
        creditLimit: b.creditLimit,
        testCredit: b.testCredit,
        earnings: b.payable,
        currency: 'USD' as const,
        dailySpendCapReached: await ledger.capSuspended(accountId),
      };
    },

    async transactions(accountId: string, f: TransactionFilter, limit: number) {
      checkRange(f);
      return (await repo.transactions(accountId, f, limit + 1)).map(presentTransaction);
    },

    /** CSV of up to 10,000 transactions, newest first, produced while rows are read. */
    transactionsCsv(accountId: string, f: TransactionFilter): Stringifier {
      checkRange(f);
      const out = createCsvWriter(CSV_COLUMNS, CSV_NUMERIC);
      void (async () => {
        try {
          await repo.eachTransactionBatch(accountId, f, CSV_MAX_ROWS, async (rows) => {
            for (const r of rows) {
              if (!out.write(presentTransaction(r))) await new Promise<void>((resolve) => out.once('drain', resolve));
            }
          });
          out.end();
        } catch (err) {
          deps.log.error({ err }, 'transactions csv export failed');
          out.destroy(err as Error);
        }
      })();
      return out;
    },

    async summary(accountId: string) {
      const now = clock.now();
      const s = await repo.summary(accountId, now, deps.config.billing.card_chargeback_hold_days);
      const availableBalance = await deps.withdrawable(accountId);
      return {
        totalSpending: money6(s['totalSpending']),
        totalTransactions: Number(s['totalTransactions']),
        spendingToday: money6(s['spendingToday']),
        transactionsToday: Number(s['transactionsToday']),
        // Purchases and campaigns are other modules' records; zero until those modules report them.
        activePurchases: 0,
        runningCampaigns: 0,
        totalCampaigns: 0,
        totalEarnings: money6(s['totalEarnings']),
        earnings30d: money6(s['earnings30d']),
        earningsToday: money6(s['earningsToday']),
        availableBalance,
        heldBalance: money6(s['heldBalance']),
      };
    },

    async balanceHistory(accountId: string, days: number) {
      const rows = await repo.balanceHistory(accountId, clock.now(), days);
      const b = await ledger.balanceOf(accountId);
      return {
        points: rows.map((r) => ({ date: r.date, balance: display(r.balance) })),
        currentBalance: display(b.balance),
        hasData: rows.some((r) => r.balance !== null),
        days,
      };
    },

    async dailySpend(accountId: string, days: number) {
      const rows = await repo.dailySpend(accountId, clock.now(), days);
      return {
        points: rows.map((r) => ({
          date: r.date,
          voice: display(r.voice),
          sms: display(r.sms),
          total: display(r.total),
        })),
        days,
        hasData: rows.some((r) => Number(r.total) !== 0),
      };
    },
  };
}

export type BillingService = ReturnType<typeof createBillingService>;
