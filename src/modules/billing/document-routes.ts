import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { CursorPage, DateTime, Money, Ok, ok, Uuid, Nullable } from '../../http/envelope.js';
import { cursorPage, CursorQuery } from '../../http/pagination.js';
import type { Invoices } from './invoices.js';
import { invoicePdf, statementPdf } from './pdf.js';
import type { Statements } from './statements.js';

const Month = Type.String({ pattern: '^\\d{4}-(0[1-9]|1[0-2])$', description: 'YYYY-MM (UTC)' });

const Line = Type.Object({ type: Type.String(), description: Type.String(), count: Type.Integer(), amount: Money() });

const Statement = Type.Object({
  month: Type.String(),
  periodStart: DateTime(),
  periodEnd: DateTime(),
  currency: Type.Literal('USD'),
  final: Type.Boolean({ description: 'false for the current month (month to date)' }),
  balance: Type.Object({
    opening: Money(),
    closing: Money(),
    topups: Money(),
    spend: Money('charges and fees net of refunds'),
    lines: Type.Array(Line),
  }),
  earnings: Type.Object({
    opening: Money(),
    closing: Money(),
    credited: Money(),
    paidOut: Money(),
    lines: Type.Array(Line),
  }),
  generatedAt: DateTime(),
});

const Invoice = Type.Object({
  id: Uuid(),
  invoiceNumber: Type.String(),
  issueDate: Type.String({ format: 'date' }),
  status: Type.Literal('paid'),
  issuer: Type.Object({ name: Type.String() }),
  billedTo: Type.Object({}, { additionalProperties: true, description: 'frozen when the top-up was credited' }),
  identityFrozen: Type.Literal(true),
  currency: Type.Literal('USD'),
  lines: Type.Array(
    Type.Object({ description: Type.String(), quantity: Type.Integer(), unitPrice: Money(), amount: Money() }),
  ),
  subtotal: Money(),
  tax: Money(),
  total: Money(),
  amountPaid: Money(),
  paidAt: DateTime(),
  paymentMethod: Type.String(),
  paymentReference: Nullable(Type.String()),
  transactionId: Nullable(Uuid()),
  topupId: Uuid(),
});

const read = { access: { auth: 'required' as const, scope: 'account:read' as const } };

export function documentRoutes(p: {
  statements: Statements;
  invoices: Invoices;
  issuer: string;
  holder: (accountId: string) => Promise<Record<string, unknown>>;
}) {
  return (app: App) => {
    app.get(
      '/billing/statements',
      {
        config: read,
        schema: {
          tags: ['Billing'],
          summary: 'Monthly statements: months with activity, newest first (at most 24)',
          response: {
            200: Ok(
              Type.Array(
                Type.Object({
                  month: Type.String(),
                  final: Type.Boolean(),
                  openingBalance: Money(),
                  closingBalance: Money(),
                  topups: Money(),
                  spend: Money(),
                  earningsCredited: Money(),
                  pdfUrl: Type.String(),
                }),
              ),
            ),
          },
        },
      },
      async (req) => ok(await p.statements.months(req.principal!.accountId)),
    );

    app.get(
      '/billing/statements/:month',
      {
        config: read,
        schema: {
          tags: ['Billing'],
          summary: 'Statement of one month: balance and earnings, opening to closing, by entry type',
          params: Type.Object({ month: Month }),
          response: { 200: Ok(Statement) },
        },
      },
      async (req) => ok(await p.statements.statement(req.principal!.accountId, req.params.month)),
    );

    app.get(
      '/billing/statements/:month/pdf',
      {
        config: read,
        schema: {
          tags: ['Billing'],
          summary: 'Statement of one month as PDF',
          params: Type.Object({ month: Month }),
          produces: ['application/pdf'],
        },
      },
      async (req, reply) => {
        const accountId = req.principal!.accountId;
        const s = await p.statements.statement(accountId, req.params.month);
        const pdf = await statementPdf(s, p.issuer, await p.holder(accountId));
        return reply
          .type('application/pdf')
          .header('content-disposition', `attachment; filename="statement-${s.month}.pdf"`)
          .send(pdf);
      },
    );

    app.get(
      '/billing/invoices',
      {
        config: read,
        schema: {
          tags: ['Billing'],
          summary: 'Invoices for top-ups, newest first',
          description:
            'One paid invoice per credited top-up, numbered in order; the billing identity is frozen at credit.',
          querystring: Type.Object({ ...CursorQuery(25, 100) }),
          response: { 200: CursorPage(Invoice) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 25;
        return cursorPage(await p.invoices.list(req.principal!.accountId, req.query.cursor, limit + 1), limit);
      },
    );

    app.get(
      '/billing/invoices/:id',
      {
        config: read,
        schema: {
          tags: ['Billing'],
          summary: 'One invoice (id: the top-up id)',
          params: Type.Object({ id: Uuid() }),
          response: { 200: Ok(Invoice) },
        },
      },
      async (req) => ok(await p.invoices.one(req.principal!.accountId, req.params.id)),
    );

    app.get(
      '/billing/invoices/:id/pdf',
      {
        config: read,
        schema: {
          tags: ['Billing'],
          summary: 'One invoice as PDF',
          params: Type.Object({ id: Uuid() }),
          produces: ['application/pdf'],
        },
      },
      async (req, reply) => {
        const inv = await p.invoices.one(req.principal!.accountId, req.params.id);
        return reply
          .type('application/pdf')
          .header('content-disposition', `attachment; filename="${inv.invoiceNumber}.pdf"`)
          .send(await invoicePdf(inv));
      },
    );
  };
}
