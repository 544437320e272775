import { Type } from 'typebox';
import type { App } from '../../../http/app.js';
import { createCsvWriter } from '../../../http/csv.js';
import { DateTime, Money, Nullable, Ok, OffsetPage, Uuid, ok } from '../../../http/envelope.js';
import { OffsetQuery } from '../../../http/pagination.js';
import type { RoutesService } from '../listings/service.js';
import type { SheetReads } from './reads.js';
import { uploadSlotHooks } from './upload-slots.js';

const TAGS = ['Rate sheets'];
const READ = { auth: 'required', scope: 'routes:read' } as const;
const WRITE = { auth: 'required', scope: 'routes:write' } as const;
const Id = Type.Object({ id: Uuid() });
const CSV_COLUMNS = ['prefix', 'destination', 'rate', 'increment', 'mcc_mnc', 'origin', 'effective_date'] as const;

export function rateSheetRoutes(routes: RoutesService, reads: SheetReads) {
  return (app: App) => {
    // Validations share the upload slots: parsing a large sheet costs the same.
    const slots = uploadSlotHooks((accountId) => routes.acquireUploadSlot(accountId));
    app.post(
      '/routes/:id/rates/validate',
      {
        config: { access: { ...WRITE, testKeys: 'allow' } },
        ...slots.hooks,
        bodyLimit: 48 * 1024 * 1024,
        schema: {
          tags: TAGS,
          summary: 'Check a rate sheet without saving it: bad rows, or the changes it would make',
          description:
            'The body of `POST /routes/{id}/rates`. Answers 200 either way: `valid` false with the first 10,000 bad rows by line, ' +
            'or the counts an upload would make now against the rates in force (increases and removals scheduled per the notice rule, ' +
            'the first at `firstScheduledAt`). Nothing is written; the upload slots bound it as they bound uploads.',
          params: Id,
          body: Type.Object(
            {
              format: Type.Union([Type.Literal('csv'), Type.Literal('json')]),
              csv: Type.Optional(Type.String()),
              rows: Type.Optional(Type.Array(Type.Object({}, { additionalProperties: true }), { maxItems: 500000 })),
              increaseEffectiveAt: Type.Optional(DateTime()),
            },
            { additionalProperties: false },
          ),
          response: {
            200: Ok(
              Type.Object({
                valid: Type.Boolean(),
                rows: Type.Integer(),
                errorCount: Type.Integer(),
                errors: Type.Array(Type.Object({ line: Type.Integer(), reason: Type.String() })),
                changes: Nullable(
                  Type.Object({
                    increases: Type.Integer(),
                    decreases: Type.Integer(),
                    newDestinations: Type.Integer(),
                    removals: Type.Integer(),
                    updates: Type.Integer(),
                    unchanged: Type.Integer(),
                    scheduledChanges: Type.Integer(),
                    firstScheduledAt: Nullable(DateTime()),
                  }),
                ),
              }),
            ),
          },
        },
      },
      async (req) => {
        const slot = slots.take(req) ?? (() => {});
        return ok(await routes.validateSheet(req.principal!.accountId, req.params.id, req.body, slot));
      },
    );

    app.get(
      '/routes/:id/rates/download',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'The whole sheet in force, as CSV (the columns an upload takes) or JSON',
          params: Id,
          querystring: Type.Object({
            format: Type.Optional(Type.Union([Type.Literal('csv'), Type.Literal('json')], { default: 'csv' })),
          }),
          // The CSV form is a stream, which Fastify sends without this serializer.
          response: {
            200: Ok(
              Type.Object({
                routeId: Uuid(),
                at: DateTime(),
                rows: Type.Array(
                  Type.Object({
                    prefix: Type.String(),
                    destination: Type.String(),
                    rate: Money(),
                    increment: Type.String(),
                    mccMnc: Nullable(Type.String()),
                    origin: Nullable(
                      Type.String({
                        description:
                          'The callers the row prices (A-number prefix, country, EU or EEA); null: the default row',
                      }),
                    ),
                    effectiveFrom: DateTime(),
                  }),
                ),
              }),
            ),
          },
        },
      },
      async (req, reply) => {
        const { route, rows, at } = await reads.inForce(req.principal!.accountId, req.params.id);
        if ((req.query.format ?? 'csv') === 'json')
          return ok({ routeId: route.id, at, rows: rows.map(({ effectiveTo: _t, ...r }) => r) });
        const csv = createCsvWriter(CSV_COLUMNS, ['rate']);
        reply
          .type('text/csv; charset=utf-8')
          .header('content-disposition', `attachment; filename="rates-${route.id}.csv"`);
        for (const r of rows)
          csv.write({
            prefix: r.prefix,
            destination: r.destination,
            rate: r.rate,
            increment: r.increment,
            mcc_mnc: r.mccMnc ?? '',
            origin: r.origin ?? '',
            effective_date: r.effectiveFrom,
          });
        csv.end();
        return reply.send(csv as unknown as never);
      },
    );

    app.get(
      '/routes/:id/rates/history',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "Every rate a route's sheet has held: archived, in force and scheduled rows",
          params: Id,
          querystring: Type.Object({
            ...OffsetQuery(100, 1000),
            prefix: Type.Optional(Type.String({ pattern: '^\\d{1,15}$' })),
          }),
          response: {
            200: OffsetPage(
              Type.Object({
                prefix: Type.String(),
                destination: Type.String(),
                rate: Money(),
                increment: Type.String(),
                mccMnc: Nullable(Type.String()),
                origin: Nullable(
                  Type.String({
                    description:
                      'The callers the row prices (A-number prefix, country, EU or EEA); null: the default row',
                  }),
                ),
                effectiveFrom: DateTime(),
                effectiveTo: Nullable(DateTime()),
                state: Type.Union([Type.Literal('archived'), Type.Literal('in_force'), Type.Literal('scheduled')]),
              }),
            ),
          },
        },
      },
      async (req) =>
        ok(
          await reads.history(req.principal!.accountId, req.params.id, {
            ...(req.query.prefix === undefined ? {} : { prefix: req.query.prefix }),
            limit: req.query.limit ?? 100,
            offset: req.query.offset ?? 0,
          }),
        ),
    );
  };
}
