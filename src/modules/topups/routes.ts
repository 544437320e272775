import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { Money, Nullable, Ok, ok } from '../../http/envelope.js';
import type { TopupsService } from './service.js';

const X402Required = Type.Object({
  x402Version: Type.Literal(1),
  error: Type.String(),
  accepts: Type.Array(
    Type.Object({
      scheme: Type.Literal('exact'),
      network: Type.String(),
      maxAmountRequired: Type.String({ description: 'atomic units of the asset (6 decimals)' }),
      resource: Type.String(),
      description: Type.String(),
      mimeType: Type.String(),
      payTo: Type.String(),
      maxTimeoutSeconds: Type.Integer(),
      asset: Type.String(),
      extra: Type.Object({}, { additionalProperties: true }),
    }),
  ),
});

export function topupsRoutes(topups: TopupsService, publicBase: string) {
  return (app: App) => {
    app.post(
      '/topups/invite-codes/redeem',
      {
        config: {
          access: { auth: 'required', scope: 'billing:write', testKeys: 'allow' },
          rateLimit: { points: 10, seconds: 60 },
        },
        schema: {
          tags: ['Top-ups'],
          summary: 'Redeem an invite code for test credit (spent only by test keys)',
          description: 'Each code is redeemed at most once per account; a code has a redemption limit and may expire.',
          body: Type.Object({ code: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false }),
          response: {
            200: Ok(
              Type.Object({
                code: Type.String(),
                amount: Money(),
                testCredit: Money(),
                transactionId: Type.String({ format: 'uuid' }),
              }),
            ),
          },
        },
      },
      async (req) => ok(await topups.redeemInviteCode(req.principal!.accountId, req.body.code)),
    );

    // Not `idempotent`: the 402 answer must not be replayed to the retry that carries X-PAYMENT;
    // each payment credits once by its own identity instead.
    app.post(
      '/topups/x402',
      {
        config: {
          access: { auth: 'required', scope: 'billing:write', denyTestKeys: true },
          rateLimit: { points: 10, seconds: 1 },
        },
        schema: {
          tags: ['Top-ups'],
          summary: 'Top up with an x402 payment (automated agents)',
          description:
            'x402 version 1, scheme `exact`. Without an `X-PAYMENT` header the answer is 402 with `accepts` (the payment ' +
            'requirements for `amount`). Retry with `X-PAYMENT` (base64 payment payload): it is verified and settled through ' +
            "the exchange's facilitator, the balance is credited, and `X-PAYMENT-RESPONSE` carries the settlement. " +
            'The same payment presented again credits nothing more and answers the first result (`replayed: true`).',
          body: Type.Object(
            {
              amount: Type.String({
                pattern: '^\\d{1,14}(\\.\\d{1,6})?$',
                description: 'USD to credit, up to 6 decimals',
              }),
            },
            { additionalProperties: false },
          ),
          response: {
            200: Ok(
              Type.Object({
                amount: Money(),
                balance: Money(),
                transactionId: Type.String({ format: 'uuid' }),
                network: Type.String(),
                transaction: Nullable(Type.String()),
                payer: Nullable(Type.String()),
                replayed: Type.Boolean(),
              }),
            ),
            402: X402Required,
          },
        },
      },
      async (req, reply) => {
        const header = req.headers['x-payment'];
        const out = await topups.x402(req.principal!.accountId, {
          amount: req.body.amount,
          resource: `${publicBase}/topups/x402`,
          paymentHeader: typeof header === 'string' && header !== '' ? header : undefined,
        });
        if (out.kind === 'payment_required') return reply.code(402).send(out.body);
        void reply.header('x-payment-response', out.paymentResponse);
        return ok(out.data);
      },
    );
  };
}
