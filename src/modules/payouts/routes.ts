import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { CursorPage, DateTime, Money, Nullable, Ok, ok, Uuid } from '../../http/envelope.js';
import { cursorPage, CursorQuery } from '../../http/pagination.js';
import type { PayoutsService } from './service.js';

const Payout = Type.Object({
  id: Uuid(),
  amount: Money(),
  currency: Type.Literal('USD'),
  status: Type.Unsafe<'pending_approval' | 'paid' | 'rejected' | 'canceled'>(
    Type.String({ enum: ['pending_approval', 'paid', 'rejected', 'canceled'] }),
  ),
  method: Type.Literal('wire'),
  destination: Type.Object({
    accountName: Type.String(),
    bankName: Nullable(Type.String()),
    accountLast4: Nullable(Type.String({ description: 'last 4 characters of the IBAN or account number' })),
    swift: Nullable(Type.String()),
    country: Nullable(Type.String()),
  }),
  note: Nullable(Type.String()),
  reviewNote: Nullable(Type.String({ description: "the operator's note (the reason of a rejection)" })),
  transactionId: Nullable(Uuid('the ledger `payout` transaction, once paid')),
  reviewedAt: Nullable(DateTime()),
  createdAt: DateTime(),
  updatedAt: DateTime(),
});

const TAGS = ['Payouts'];

export function payoutsRoutes(payouts: PayoutsService) {
  return (app: App) => {
    app.post(
      '/payouts',
      {
        config: { access: { auth: 'session' }, idempotent: true },
        schema: {
          tags: TAGS,
          summary: 'Request a payout of seller earnings (session only)',
          description:
            'Session only: API keys get 403. Needs identity verification (403 `KYC_REQUIRED`). `amount` at least ' +
            '`[billing] payout_min_amount` and at most `availableBalance` (earnings not yet paid, less those younger ' +
            'than the hold period and those already requested): above it, 400 `VALIDATION_ERROR` "Insufficient balance". ' +
            'The request waits for the operator (`pending_approval`); approval posts the ledger `payout` entry ' +
            '(`payout.paid`), a rejection says why (`payout.rejected`).',
          body: Type.Object(
            {
              amount: Type.String({ pattern: '^\\d{1,12}(\\.\\d{1,2})?$', description: 'USD, up to 2 decimals' }),
              method: Type.Optional(Type.Literal('wire', { default: 'wire' })),
              destination: Type.Object(
                {
                  accountName: Type.String({ minLength: 1, maxLength: 140 }),
                  bankName: Type.Optional(Type.String({ maxLength: 140 })),
                  iban: Type.Optional(Type.String({ pattern: '^[A-Z]{2}[0-9]{2}[A-Z0-9 ]{10,36}$' })),
                  accountNumber: Type.Optional(Type.String({ pattern: '^[0-9A-Z -]{4,34}$' })),
                  routingNumber: Type.Optional(Type.String({ pattern: '^[0-9]{9}$' })),
                  swift: Type.Optional(Type.String({ pattern: '^[A-Z]{6}[A-Z0-9]{2}([A-Z0-9]{3})?$' })),
                  country: Type.Optional(Type.String({ pattern: '^[A-Z]{2}$' })),
                },
                { additionalProperties: false },
              ),
              note: Type.Optional(Type.String({ maxLength: 500 })),
            },
            { additionalProperties: false },
          ),
          response: { 201: Ok(Payout) },
        },
      },
      async (req, reply) => {
        const { amount, destination, note } = req.body;
        return reply.code(201).send(ok(await payouts.request(req.principal!.accountId, { amount, destination, note })));
      },
    );

    app.get(
      '/payouts',
      {
        config: { access: { auth: 'required', scope: 'account:read' } },
        schema: {
          tags: TAGS,
          summary: 'Payouts, newest first, with what can be withdrawn now',
          querystring: Type.Object({ ...CursorQuery(25, 100) }),
          response: {
            200: CursorPage(Payout, {
              availableBalance: Money('withdrawable now'),
              minimum: Money(),
              holdDays: Type.Integer({ description: 'earnings younger than this are not yet withdrawable' }),
            }),
          },
        },
      },
      async (req) => {
        const accountId = req.principal!.accountId;
        const limit = req.query.limit ?? 25;
        const page = cursorPage(await payouts.list(accountId, req.query.cursor, limit + 1), limit);
        const t = payouts.terms();
        return { ...page, availableBalance: await payouts.withdrawable(accountId), ...t };
      },
    );
  };
}
