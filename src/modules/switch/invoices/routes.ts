import { Type, type TSchema } from 'typebox';
import type { App } from '../../../http/app.js';
import { DateTime, Money, Nullable, Ok, OffsetPage, ok, Uuid } from '../../../http/envelope.js';
import type { SwitchSubscriptions } from '../subscriptions.js';
import { PAYMENT_TERMS_DAYS, type SwitchInvoices } from './service.js';

const Status = Type.Union(
  [
    Type.Literal('draft'),
    Type.Literal('open'),
    Type.Literal('partial'),
    Type.Literal('paid'),
    Type.Literal('overdue'),
    Type.Literal('void'),
  ],
  { description: '`overdue`: open or partial past its due date' },
);
const Instant = Type.String({ minLength: 10, maxLength: 40, description: 'ISO date (midnight UTC) or timestamp' });
const Any = (description: string) => Type.Unknown({ description });
const Brief = Nullable(Type.Object({ id: Uuid(), invoiceNumber: Type.String(), status: Type.String() }));

const PreviewFields = {
  customerId: Uuid('the sub-account billed'),
  periodStart: Instant,
  periodEnd: Instant,
  notes: Type.Optional(Type.String({ maxLength: 2000 })),
  includeBroughtForward: Type.Optional(
    Type.Boolean({ description: "add what the customer's earlier open invoices still owe (they are then carried)" }),
  ),
  applyCredits: Type.Optional(
    Type.Boolean({ description: "deduct the customer's credit (overpayments of earlier invoices)" }),
  ),
  excludeUnrated: Type.Optional(
    Type.Object(
      { reason: Type.String({ minLength: 1, maxLength: 2000 }) },
      { additionalProperties: false, description: 'leave unpriced usage off the invoice; needs billing:write' },
    ),
  ),
};

const Summary = {
  id: Uuid(),
  customerId: Uuid(),
  invoiceNumber: Type.String({ description: '`SW-` and the number, sequential per Switch account, gap-free' }),
  periodStart: DateTime(),
  periodEnd: DateTime(),
  issueDate: Type.String({ format: 'date' }),
  dueDate: Type.String({ format: 'date' }),
  currency: Type.String({ maxLength: 3 }),
  subtotal: Money(),
  tax: Money(),
  total: Money(),
  amountPaid: Money(),
  status: Status,
  overdue: Type.Boolean(),
  notes: Nullable(Type.String()),
  replacesInvoiceId: Nullable(Uuid()),
  sentAt: Nullable(DateTime()),
  sendCount: Type.Integer(),
  customerLabel: Type.String(),
  createdAt: DateTime(),
};

const Detail = {
  ...Summary,
  lines: Type.Array(
    Any('kind, description, countryCode, destination, unit, ratePerUnit, records, billedSeconds, segments, amount'),
  ),
  payments: Type.Array(
    Type.Object({
      id: Uuid(),
      amount: Money(),
      method: Type.String(),
      reference: Nullable(Type.String()),
      paidAt: DateTime(),
      createdAt: DateTime(),
    }),
  ),
  customer: Type.Object({ id: Uuid(), label: Type.String(), source: Type.String(), currency: Type.String() }),
  countryBreakdown: Type.Array(Any('per destination country: calls, seconds, messages, segments, amount')),
  billingProfile: Type.Object({}, { additionalProperties: true, description: 'issuer and billed-to, frozen at issue' }),
  identityFrozen: Type.Literal(true),
  exclusions: Nullable(Type.Object({}, { additionalProperties: true })),
  broughtForward: Money(),
  creditsApplied: Money(),
  carriedIntoId: Nullable(Uuid()),
  claimedRecords: Type.Integer({ description: 'CDRs this invoice holds' }),
  releasedRecords: Type.Integer({ description: 'CDRs a void released' }),
  voidReason: Nullable(Type.String()),
  voidedAt: Nullable(DateTime()),
  replaces: Brief,
  replacedBy: Brief,
};

const Preview = Type.Object(
  {
    customer: Type.Object({ id: Uuid(), label: Type.String(), source: Type.String(), currency: Type.String() }),
    period: Type.Object({ start: DateTime(), end: DateTime(), timezone: Type.String(), label: Type.String() }),
    issueDate: Type.String({ format: 'date' }),
    dueDate: Type.String({ format: 'date' }),
    paymentTermsDays: Type.Integer(),
    currency: Type.String(),
    usage: Any('records; voice { calls, billedSeconds, amount }; sms { messages, segments, amount }; amount'),
    broughtForward: Any('included, amount, invoices[] { id, invoiceNumber, outstanding }'),
    unrated: Any('records, voiceCalls, voiceSeconds, smsMessages, excluded, reason'),
    lines: Type.Array(Any('as on the invoice')),
    countryBreakdown: Type.Array(Any('as on the invoice')),
    subtotal: Money(),
    charges: Type.Number({ description: 'display number of subtotal' }),
    credits: Any('applied, available, amount'),
    tax: Money(),
    total: Type.Number({ description: 'display number of totalAmount' }),
    totalAmount: Money(),
    notes: Nullable(Type.String()),
    releaseInvoiceId: Nullable(Uuid()),
    provenance: Any('source, ratedRecords, unratedRecords, computedAt, digest'),
    reviewToken: Type.String({ maxLength: 120 }),
  },
  { additionalProperties: true },
);

const manage = { auth: 'required' as const, scope: 'switch:manage' as const };
const detail = (extra: Record<string, TSchema> = {}) => Ok(Type.Object({ ...Detail, ...extra }));
const IdParams = Type.Object({ id: Uuid() });

export function switchInvoiceRoutes(invoices: SwitchInvoices, subscriptions: SwitchSubscriptions) {
  return (app: App) => {
    app.get(
      '/switch/invoices',
      {
        config: { access: manage },
        schema: {
          tags: ['Switch'],
          summary: 'Switch invoices, newest number first',
          querystring: Type.Object({
            customerId: Type.Optional(Uuid()),
            status: Type.Optional(Status),
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
            offset: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
          }),
          response: { 200: OffsetPage(Type.Object(Summary)) },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        const q = req.query;
        return ok(
          await invoices.list(req.principal!.accountId, {
            customerId: q.customerId,
            status: q.status,
            limit: q.limit ?? 50,
            offset: q.offset ?? 0,
          }),
        );
      },
    );

    app.post(
      '/switch/invoices/preview',
      {
        config: { access: { ...manage, testKeys: 'allow' } },
        schema: {
          tags: ['Switch'],
          summary: "Preview a customer's invoice for a period: allocates no number, claims nothing",
          description:
            "Prices the customer's rated CDRs of [periodStart, periodEnd) that no live invoice holds, at what the customer " +
            'was charged, in lines by kind, destination country and rate. `reviewToken` binds the customer, period, ' +
            'options, the exact records and the amounts, signed by the server; `POST /switch/invoices` needs it unchanged. ' +
            `Due date: issue date plus ${PAYMENT_TERMS_DAYS} days. Tax is 0: no tax rules are configured. Test keys may ` +
            'preview: it changes nothing.',
          body: Type.Object(
            { ...PreviewFields, releaseInvoiceId: Type.Optional(Uuid('a void invoice this one reissues')) },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Preview) },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        return ok(await invoices.preview(req.principal!, req.body));
      },
    );

    app.post(
      '/switch/invoices',
      {
        config: { access: manage },
        schema: {
          tags: ['Switch'],
          summary: 'Issue a previewed invoice: allocates the next number and claims the usage',
          description:
            'Recomputes the preview in one transaction. 422 `INVOICE_UNRATED_USAGE` when the period holds unpriced usage ' +
            'and `excludeUnrated` is absent; 409 `INVOICE_REVIEW_STALE` when anything the token binds changed (another ' +
            'invoice claimed the usage, new records, other amounts or options). Status at issue: `open`. Does not send.',
          body: Type.Object(
            { ...PreviewFields, reviewToken: Type.String({ minLength: 1, maxLength: 120 }) },
            { additionalProperties: false },
          ),
          response: { 201: detail({ reviewDigest: Type.String(), preview: Preview }) },
        },
      },
      async (req, reply) => {
        await subscriptions.require(req.principal!);
        return reply.code(201).send(ok(await invoices.issue(req.principal!, req.body)));
      },
    );

    app.get(
      '/switch/invoices/:id',
      {
        config: { access: manage },
        schema: {
          tags: ['Switch'],
          summary: 'One Switch invoice',
          params: IdParams,
          response: { 200: detail() },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        return ok(await invoices.get(req.principal!.accountId, req.params.id));
      },
    );

    app.get(
      '/switch/invoices/:id/pdf',
      {
        config: { access: manage },
        schema: {
          tags: ['Switch'],
          summary: 'One Switch invoice as PDF',
          params: IdParams,
          produces: ['application/pdf'],
        },
      },
      async (req, reply) => {
        await subscriptions.require(req.principal!);
        const { invoiceNumber, pdf } = await invoices.pdf(req.principal!.accountId, req.params.id);
        return reply
          .type('application/pdf')
          .header('content-disposition', `attachment; filename="${invoiceNumber}.pdf"`)
          .send(pdf);
      },
    );

    app.post(
      '/switch/invoices/:id/void',
      {
        config: { access: manage },
        schema: {
          tags: ['Switch'],
          summary: 'Void an open invoice with no payment',
          description:
            'Releases its usage (a later invoice, or a reissue through `releaseInvoiceId` on preview, can bill it) and ' +
            'the invoices it brought forward; the number stays used.',
          params: IdParams,
          body: Type.Optional(
            Type.Object({ reason: Type.Optional(Type.String({ maxLength: 2000 })) }, { additionalProperties: false }),
          ),
          response: { 200: detail() },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        return ok(await invoices.void(req.principal!, req.params.id, req.body?.reason ?? null));
      },
    );

    app.post(
      '/switch/invoices/:id/send',
      {
        config: { access: manage, rateLimit: { points: 20, seconds: 60 } },
        schema: {
          tags: ['Switch'],
          summary: 'E-mail the invoice with its PDF attached',
          description:
            "To `to`, else the customer's portal e-mail (400 when neither). The status does not change; `sentAt` and " +
            '`sendCount` do.',
          params: IdParams,
          body: Type.Optional(
            Type.Object(
              { to: Type.Optional(Type.String({ format: 'email', maxLength: 255 })) },
              { additionalProperties: false },
            ),
          ),
          response: {
            200: detail({ delivery: Type.Object({ via: Type.String(), messageId: Type.String() }) }),
          },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        return ok(await invoices.send(req.principal!, req.params.id, req.body?.to));
      },
    );

    app.post(
      '/switch/invoices/:id/settle',
      {
        config: { access: manage },
        schema: {
          tags: ['Switch'],
          summary: 'Record a payment against the invoice',
          description:
            '`partial` until the payments cover the total, then `paid`; an excess is credit for later invoices. Moves no ' +
            "money on the ledger: the customer's usage was paid from its prepaid balance as it settled.",
          params: IdParams,
          body: Type.Object(
            {
              amount: Type.String({ maxLength: 24, description: 'money, up to 6 decimals' }),
              method: Type.String({ minLength: 1, maxLength: 40, description: 'wire, card, cash, ledger, other …' }),
              reference: Type.Optional(Type.String({ maxLength: 200 })),
              paidAt: Type.Optional(Instant),
            },
            { additionalProperties: false },
          ),
          response: { 200: detail() },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        return ok(await invoices.settle(req.principal!, req.params.id, req.body));
      },
    );
  };
}
