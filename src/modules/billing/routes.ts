import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { CursorPage, DateTime, Money, Nullable, Ok, ok } from '../../http/envelope.js';
import { cursorPage, CursorQuery } from '../../http/pagination.js';
import { EntryTypes, type EntryType } from '../../ledger/ledger.js';
import type { BillingService } from './service.js';

const EntryTypeName = Type.Unsafe<EntryType>(Type.String({ enum: [...EntryTypes] }));

const Transaction = Type.Object({
  id: Type.String({ format: 'uuid' }),
  userId: Type.String({ format: 'uuid' }),
  type: EntryTypeName,
  ledger: Type.Union([Type.Literal('balance'), Type.Literal('test_credit'), Type.Literal('earnings')], {
    description: 'which balance the entry moved: the live balance, test credit, or seller earnings',
  }),
  amount: Money('signed: negative for money out'),
  balanceAfter: Money('that balance after this entry'),
  reference: Nullable(Type.String()),
  relatedEntityType: Nullable(Type.String()),
  relatedEntityId: Nullable(Type.String()),
  callId: Nullable(Type.String({ description: "equals the record's callUuid" })),
  createdAt: DateTime(),
});

const Days = Type.Object({ days: Type.Optional(Type.Integer({ minimum: 1, maximum: 366, default: 30 })) });

export function billingRoutes(billing: BillingService) {
  return (app: App) => {
    app.get(
      '/account/balance',
      {
        config: { access: { auth: 'required', scope: 'account:read' } },
        schema: {
          tags: ['Billing'],
          summary: 'Balance, available (balance + credit limit − open holds), holds, credit limit, test credit',
          response: {
            200: Ok(
              Type.Object({
                balance: Money(),
                available: Money('balance + creditLimit − held; never below zero'),
                held: Money('open holds of live calls and messages'),
                creditLimit: Money(),
                testCredit: Money('spent only by test keys'),
                earnings: Money('seller earnings not yet paid out'),
                currency: Type.Literal('USD'),
                dailySpendCapReached: Type.Boolean({
                  description: 'a daily spend cap suspends spending until the next UTC day',
                }),
              }),
            ),
          },
        },
      },
      async (req) => ok(await billing.balance(req.principal!.accountId)),
    );

    app.get(
      '/billing/transactions',
      {
        config: { access: { auth: 'required', scope: 'account:read' } },
        schema: {
          tags: ['Billing'],
          summary: 'Ledger entries of the account, newest first (JSON pages or CSV)',
          description:
            '`format=csv` streams up to 10,000 rows (text/csv, header row, RFC 4180 quoting) and ignores `cursor`/`limit`.',
          querystring: Type.Object({
            ...CursorQuery(25, 100),
            type: Type.Optional(EntryTypeName),
            from: Type.Optional(Type.String({ format: 'date-time', description: 'inclusive' })),
            to: Type.Optional(Type.String({ format: 'date-time', description: 'exclusive' })),
            format: Type.Optional(Type.Union([Type.Literal('json'), Type.Literal('csv')], { default: 'json' })),
          }),
          response: { 200: CursorPage(Transaction) },
        },
      },
      async (req, reply) => {
        const q = req.query;
        const filter = { type: q.type, from: q.from, to: q.to, cursor: q.format === 'csv' ? undefined : q.cursor };
        if (q.format === 'csv') {
          const stream = billing.transactionsCsv(req.principal!.accountId, filter);
          return reply
            .type('text/csv; charset=utf-8')
            .header('content-disposition', 'attachment; filename="transactions.csv"')
            .send(stream as never);
        }
        const limit = q.limit ?? 25;
        return cursorPage(await billing.transactions(req.principal!.accountId, filter, limit), limit);
      },
    );

    app.get(
      '/billing/summary',
      {
        config: { access: { auth: 'required', scope: 'account:read' } },
        schema: {
          tags: ['Billing'],
          summary: 'Spending, earnings and balance figures',
          description:
            'Spending counts live charges and platform fees net of refunds; a transaction is one charge posting. ' +
            '`activePurchases`, `runningCampaigns` and `totalCampaigns` are 0 until the marketplace and dialer report them. ' +
            '`availableBalance` is the withdrawable seller earnings; `heldBalance` the card top-ups still inside the ' +
            'chargeback hold (`billing.card_chargeback_hold_days`).',
          response: {
            200: Ok(
              Type.Object({
                totalSpending: Money(),
                totalTransactions: Type.Integer(),
                spendingToday: Money(),
                transactionsToday: Type.Integer(),
                activePurchases: Type.Integer(),
                runningCampaigns: Type.Integer(),
                totalCampaigns: Type.Integer(),
                totalEarnings: Money(),
                earnings30d: Money(),
                earningsToday: Money(),
                availableBalance: Money(),
                heldBalance: Money(),
              }),
            ),
          },
        },
      },
      async (req) => ok(await billing.summary(req.principal!.accountId)),
    );

    app.get(
      '/billing/balance-history',
      {
        config: { access: { auth: 'required', scope: 'account:read' } },
        schema: {
          tags: ['Billing'],
          summary: 'End-of-day live balance per UTC day (display numbers)',
          querystring: Days,
          response: {
            200: Ok(
              Type.Object({
                points: Type.Array(Type.Object({ date: Type.String({ format: 'date' }), balance: Type.Number() })),
                currentBalance: Type.Number(),
                hasData: Type.Boolean(),
                days: Type.Integer(),
              }),
            ),
          },
        },
      },
      async (req) => ok(await billing.balanceHistory(req.principal!.accountId, req.query.days ?? 30)),
    );

    app.get(
      '/billing/daily-spend',
      {
        config: { access: { auth: 'required', scope: 'account:read' } },
        schema: {
          tags: ['Billing'],
          summary: 'Live voice and SMS spend per UTC day (display numbers; total includes other charges)',
          querystring: Days,
          response: {
            200: Ok(
              Type.Object({
                points: Type.Array(
                  Type.Object({
                    date: Type.String({ format: 'date' }),
                    voice: Type.Number(),
                    sms: Type.Number(),
                    total: Type.Number(),
                  }),
                ),
                days: Type.Integer(),
                hasData: Type.Boolean(),
              }),
            ),
          },
        },
      },
      async (req) => ok(await billing.dailySpend(req.principal!.accountId, req.query.days ?? 30)),
    );
  };
}
