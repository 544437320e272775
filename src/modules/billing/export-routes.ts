import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { DateTime, Nullable, Ok, ok, Uuid } from '../../http/envelope.js';
import { EntryTypes } from '../../ledger/ledger.js';
import type { BillingExports, ExportKind } from './exports.js';
import { MAX_EXPORT_ROWS, MAX_RUNNING } from './exports.js';

const Export = Type.Object({
  id: Uuid(),
  kind: Type.Unsafe<ExportKind>(
    Type.String({
      enum: ['transactions', 'cdrs', 'switch_cdrs'],
      description: '`switch_cdrs`: a Switch record export',
    }),
  ),
  phase: Type.Unsafe<'queued' | 'running' | 'completed' | 'failed'>(
    Type.String({ enum: ['queued', 'running', 'completed', 'failed'] }),
  ),
  status: Type.String(),
  requestedScope: Type.Object({}, { additionalProperties: true }),
  requestedAt: DateTime(),
  recordCount: Nullable(Type.Integer({ description: 'set once completed' })),
  rowCount: Nullable(Type.Integer()),
  truncated: Type.Boolean({ description: `the file stopped at ${MAX_EXPORT_ROWS} rows` }),
  error: Nullable(Type.String()),
  completedAt: Nullable(DateTime()),
  expiresAt: DateTime(),
  downloadable: Type.Boolean(),
  downloadUrl: Nullable(Type.String()),
  createdAt: DateTime(),
});

export function exportRoutes(exports: BillingExports) {
  return (app: App) => {
    app.post(
      '/billing/exports',
      {
        config: { access: { auth: 'required', scope: 'account:read' } },
        schema: {
          tags: ['Billing'],
          summary: 'Export transactions or call and message records as CSV, in the background',
          description:
            `202 with the export job; poll it or wait for \`billing.export_completed\`, then download. At most ${MAX_RUNNING} ` +
            `run at once per account (429 \`TOO_MANY_EXPORTS\`); up to ${MAX_EXPORT_ROWS} rows; files are kept 7 days. ` +
            '`type`: an entry type for transactions, `voice` or `sms` for records.',
          body: Type.Object(
            {
              kind: Type.Union([Type.Literal('transactions'), Type.Literal('cdrs')]),
              from: Type.Optional(Type.String({ format: 'date-time' })),
              to: Type.Optional(Type.String({ format: 'date-time' })),
              type: Type.Optional(Type.String({ enum: [...EntryTypes, 'voice', 'sms'] })),
            },
            { additionalProperties: false },
          ),
          response: { 202: Ok(Export) },
        },
      },
      async (req, reply) => {
        const { kind, ...params } = req.body;
        return reply.code(202).send(ok(await exports.create(req.principal!.accountId, kind, params)));
      },
    );

    app.get(
      '/billing/exports',
      {
        config: { access: { auth: 'required', scope: 'account:read' } },
        schema: { tags: ['Billing'], summary: 'The latest 25 exports', response: { 200: Ok(Type.Array(Export)) } },
      },
      async (req) => ok(await exports.list(req.principal!.accountId)),
    );

    app.get(
      '/billing/exports/:id',
      {
        config: { access: { auth: 'required', scope: 'account:read' } },
        schema: {
          tags: ['Billing'],
          summary: 'One export job',
          params: Type.Object({ id: Uuid() }),
          response: { 200: Ok(Export) },
        },
      },
      async (req) => ok(await exports.get(req.principal!.accountId, req.params.id)),
    );

    app.get(
      '/billing/exports/:id/download',
      {
        config: { access: { auth: 'required', scope: 'account:read' } },
        schema: {
          tags: ['Billing'],
          summary: 'Download a completed export (text/csv); 409 until completed',
          params: Type.Object({ id: Uuid() }),
          produces: ['text/csv'],
        },
      },
      async (req, reply) => {
        const f = await exports.download(req.principal!.accountId, req.params.id);
        return reply
          .type('text/csv; charset=utf-8')
          .header('content-disposition', `attachment; filename="${f.name}"`)
          .send(f.stream);
      },
    );
  };
}
