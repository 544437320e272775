import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { CursorPage, DateTime, Money, Nullable, Ok, ok, Uuid } from '../../http/envelope.js';
import { forbidden, notFound, ruleError } from '../../http/errors.js';
import { cursorPage, CursorQuery } from '../../http/pagination.js';
import type { Sql } from '../../db/connection.js';
import { Money as MoneyValue } from '../../ledger/money.js';
import type { AutoRecharge } from './auto-recharge.js';
import { CARD_MIN, type CardTopups } from './card.js';
import { Card, MethodName, presentReceipt, presentTopup, Receipt, StatusName, Topup } from './present.js';
import type { TopupsRepo } from './repo.js';
import { WIRE_MIN, type WireTopups } from './wire.js';

const Amount2 = (description: string) =>
  Type.String({ pattern: '^\\d{1,9}(\\.\\d{1,2})?$', description: `${description}; USD with up to 2 decimals` });

const WireInstructions = Type.Object({
  bankName: Type.String(),
  accountName: Type.String(),
  iban: Nullable(Type.String()),
  accountNumber: Nullable(Type.String()),
  routingNumber: Nullable(Type.String()),
  swift: Nullable(Type.String()),
  bankAddress: Nullable(Type.String()),
});

const AutoRechargeView = Type.Object({
  enabled: Type.Boolean(),
  threshold: Nullable(Money('recharge when the live balance falls below this')),
  amount: Nullable(Money('charged to the saved card each time')),
  dailyLimit: Nullable(Money('at most this much auto-recharged per UTC day')),
  card: Card,
  lastAttemptAt: Nullable(DateTime()),
  lastFailure: Nullable(Type.String()),
  updatedAt: Nullable(DateTime()),
});

const TAGS = ['Top-ups'];

export function paymentRoutes(p: {
  sql: Sql;
  repo: TopupsRepo;
  card: CardTopups;
  wire: WireTopups;
  auto: AutoRecharge;
  issuer: string;
  x402: () => { enabled: boolean; minimum: string; maximum: string };
  cardMax: string;
}) {
  return (app: App) => {
    const own = async (accountId: string, id: string) => {
      const t = await p.repo.byId(p.sql, accountId, id);
      if (!t) throw notFound('Top-up');
      return t;
    };

    app.get(
      '/topups/methods',
      {
        config: { access: { auth: 'required', scope: 'account:read' } },
        schema: {
          tags: TAGS,
          summary: 'Top-up methods offered, their limits, and the saved card',
          response: {
            200: Ok(
              Type.Object({
                methods: Type.Array(
                  Type.Object({
                    method: MethodName,
                    enabled: Type.Boolean(),
                    minimum: Money(),
                    maximum: Nullable(Money()),
                  }),
                ),
                savedCard: Card,
              }),
            ),
          },
        },
      },
      async (req) => {
        const x = p.x402();
        const saved = await p.repo.savedCard(p.sql, req.principal!.accountId);
        return ok({
          methods: [
            {
              method: 'card' as const,
              enabled: p.card.enabled(),
              minimum: MoneyValue.parse(CARD_MIN).toString(),
              maximum: p.cardMax,
            },
            {
              method: 'wire' as const,
              enabled: p.wire.enabled(),
              minimum: MoneyValue.parse(WIRE_MIN).toString(),
              maximum: null,
            },
            { method: 'x402' as const, enabled: x.enabled, minimum: x.minimum, maximum: x.maximum },
          ],
          savedCard: saved?.paymentMethod ? { brand: saved.cardBrand, last4: saved.cardLast4 } : null,
        });
      },
    );

    app.post(
      '/topups/card',
      {
        config: { access: { auth: 'required', scope: 'billing:write' }, idempotent: true },
        schema: {
          tags: TAGS,
          summary: 'Start a card top-up (Stripe PaymentIntent)',
          description:
            'Creates a `pending` top-up and its PaymentIntent; confirm `clientSecret` with Stripe.js in the browser. ' +
            'The balance is credited when Stripe reports the payment succeeded (signed webhook), with event ' +
            '`topup.confirmed`; a refused payment ends `failed` with `topup.failed`. Minimum 5 USD. `saveCard` keeps ' +
            'the card for auto-recharge. Card top-ups stay in `heldBalance` during the chargeback window.',
          body: Type.Object(
            {
              amount: Amount2('5 to the configured maximum'),
              saveCard: Type.Optional(Type.Boolean({ default: false })),
            },
            { additionalProperties: false },
          ),
          response: { 201: Ok(Topup) },
        },
      },
      async (req, reply) =>
        reply
          .code(201)
          .send(
            ok(
              presentTopup(
                await p.card.create(req.principal!.accountId, { amount: req.body.amount, saveCard: req.body.saveCard }),
              ),
            ),
          ),
    );

    app.post(
      '/topups/stripe/webhook',
      {
        config: { access: { auth: 'public' } },
        schema: {
          tags: TAGS,
          summary: "Stripe's webhook (signed with the endpoint's secret)",
          description:
            'Called by Stripe, not by customers. Header `Stripe-Signature` (`t=<unix>,v1=<hex HMAC-SHA256 of ' +
            '"<t>.<raw body>">`) is checked against `[billing] stripe_webhook_secret` with a 5-minute tolerance; 401 ' +
            'otherwise. Handled: `payment_intent.succeeded` (credit once), `payment_intent.payment_failed`, ' +
            '`payment_intent.canceled`, `charge.dispute.created` (chargeback: the disputed amount leaves the balance, which ' +
            'may go below zero), `charge.dispute.closed` (won: returned). Each event id is applied once.',
          body: Type.Object({}, { additionalProperties: true }),
          response: {
            200: Ok(Type.Object({ received: Type.Literal(true), type: Type.String(), applied: Type.Boolean() })),
          },
        },
      },
      async (req) => {
        const sig = req.headers['stripe-signature'];
        const r = await p.card.webhook(req.rawBody ?? '', typeof sig === 'string' ? sig : undefined);
        return ok({ received: true as const, ...r });
      },
    );

    app.post(
      '/topups/wire',
      {
        config: { access: { auth: 'required', scope: 'billing:write' }, idempotent: true },
        schema: {
          tags: TAGS,
          summary: 'Start a bank wire top-up: bank details and a unique reference',
          description:
            'Minimum 100 USD. Put `reference` on the transfer: the operator matches arriving wires by it and the amount ' +
            'received is credited (`topup.confirmed`). A reference expires unmatched after `expiresAt`.',
          body: Type.Object({ amount: Amount2('100 or more') }, { additionalProperties: false }),
          response: { 201: Ok(Type.Object({ topup: Topup, instructions: WireInstructions })) },
        },
      },
      async (req, reply) => {
        const t = await p.wire.create(req.principal!.accountId, req.body.amount);
        return reply.code(201).send(ok({ topup: presentTopup(t), instructions: p.wire.instructions() }));
      },
    );

    app.post(
      '/topups/wire/confirm',
      {
        config: { access: { auth: 'session' }, idempotent: true },
        schema: {
          tags: TAGS,
          summary: 'Operator: credit an arrived wire, matched by its reference',
          description:
            'Operator accounts only (403 otherwise). The reference is matched ignoring case, spaces and dashes; the amount ' +
            'received is credited (at least 100 USD), once: a second confirm answers 409.',
          body: Type.Object(
            {
              reference: Type.String({ minLength: 1, maxLength: 64 }),
              amount: Type.String({ pattern: '^\\d{1,12}(\\.\\d{1,6})?$', description: 'USD received' }),
              bankReference: Type.Optional(
                Type.String({ maxLength: 120, description: "the bank's own transaction id" }),
              ),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Topup) },
        },
      },
      async (req) => {
        if (req.principal!.role !== 'admin') throw forbidden('Only an operator can confirm a wire');
        return ok(presentTopup(await p.wire.confirm(req.body)));
      },
    );

    app.get(
      '/topups',
      {
        config: { access: { auth: 'required', scope: 'account:read' } },
        schema: {
          tags: TAGS,
          summary: 'Top-up history, newest first',
          querystring: Type.Object({
            ...CursorQuery(25, 100),
            method: Type.Optional(MethodName),
            status: Type.Optional(StatusName),
          }),
          response: { 200: CursorPage(Topup) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 25;
        const rows = await p.repo.list(req.principal!.accountId, req.query, limit + 1);
        return cursorPage(rows.map(presentTopup), limit);
      },
    );

    app.get(
      '/topups/:id',
      {
        config: { access: { auth: 'required', scope: 'account:read' } },
        schema: {
          tags: TAGS,
          summary: 'One top-up',
          params: Type.Object({ id: Uuid() }),
          response: { 200: Ok(Topup) },
        },
      },
      async (req) => ok(presentTopup(await own(req.principal!.accountId, req.params.id))),
    );

    app.get(
      '/topups/:id/receipt',
      {
        config: { access: { auth: 'required', scope: 'account:read' } },
        schema: {
          tags: TAGS,
          summary: 'Receipt of a credited top-up',
          description:
            'The billing identity is the one the account had when the top-up was credited. 404 until credited.',
          params: Type.Object({ id: Uuid() }),
          response: { 200: Ok(Receipt) },
        },
      },
      async (req) => {
        const t = await own(req.principal!.accountId, req.params.id);
        if (t.receiptNumber === null || t.postingId === null) throw notFound('Receipt');
        return ok(presentReceipt(t, p.issuer));
      },
    );

    app.post(
      '/topups/:id/cancel',
      {
        config: { access: { auth: 'required', scope: 'billing:write' } },
        schema: {
          tags: TAGS,
          summary: 'Cancel a pending card top-up or a wire still awaiting funds',
          description: '409 once the payment succeeded, failed or was canceled.',
          params: Type.Object({ id: Uuid() }),
          response: { 200: Ok(Topup) },
        },
      },
      async (req) => {
        const accountId = req.principal!.accountId;
        const t = await own(accountId, req.params.id);
        if (t.method === 'wire') return ok(presentTopup(await p.wire.cancel(accountId, t.id)));
        if (t.method !== 'card') throw ruleError('Only card and wire top-ups can be canceled');
        return ok(presentTopup(await p.card.cancel(t)));
      },
    );

    app.get(
      '/topups/auto-recharge',
      {
        config: { access: { auth: 'required', scope: 'account:read' } },
        schema: { tags: TAGS, summary: 'Auto-recharge settings', response: { 200: Ok(AutoRechargeView) } },
      },
      async (req) => ok(await p.auto.view(req.principal!.accountId)),
    );

    app.put(
      '/topups/auto-recharge',
      {
        config: { access: { auth: 'required', scope: 'billing:write' } },
        schema: {
          tags: TAGS,
          summary: 'Set auto-recharge: charge the saved card when the balance falls below a threshold',
          description:
            'Enabling needs a saved card (a card top-up made with `saveCard: true`). `amount` 5 USD or more; `dailyLimit` ' +
            '(default three times `amount`) caps auto-recharges per UTC day. A refused charge emits `auto_recharge.failed` ' +
            'and is retried after `[billing] auto_recharge_retry_minutes`.',
          body: Type.Object(
            {
              enabled: Type.Boolean(),
              threshold: Amount2('recharge below this balance'),
              amount: Amount2('charged each time'),
              dailyLimit: Type.Optional(Amount2('per UTC day')),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(AutoRechargeView) },
        },
      },
      async (req) => ok(await p.auto.put(req.principal!.accountId, req.body)),
    );
  };
}
