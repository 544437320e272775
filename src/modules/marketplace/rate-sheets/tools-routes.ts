import { Type } from 'typebox';
import type { App } from '../../../http/app.js';
import { createCsvWriter } from '../../../http/csv.js';
import { DateTime, Money, Nullable, Ok, OffsetPage, Uuid, ok } from '../../../http/envelope.js';
import { OffsetQuery } from '../../../http/pagination.js';
import { UploadResultSchema } from '../listings/routes.js';
import type { RoutesService } from '../listings/service.js';
import { MAX_BULK_SHEET_ROUTES, MAX_ROW_EDITS, TEMPLATES, type SheetTools } from './tools.js';
import { uploadSlotHooks } from './upload-slots.js';

const TAGS = ['Rate sheets'];
const READ = { auth: 'required', scope: 'routes:read' } as const;
const WRITE = { auth: 'required', scope: 'routes:write' } as const;
const Id = Type.Object({ id: Uuid() });
const VersionParams = Type.Object({ id: Uuid(), number: Type.Integer({ minimum: 1 }) });
const When = Type.Optional(
  Type.String({
    format: 'date-time',
    description: 'when increases (and removals) take effect; default: after the route notice period',
  }),
);
const Increment = Type.String({ pattern: '^\\d{1,4}/\\d{1,4}$' });

const Version = Type.Object({
  number: Type.Integer(),
  kind: Type.String({ description: 'upload, flat, rows, restore or bulk' }),
  createdAt: DateTime(),
  rows: Type.Integer(),
  increases: Type.Integer(),
  decreases: Type.Integer(),
  newDestinations: Type.Integer(),
  removals: Type.Integer(),
  updates: Type.Integer(),
  unchanged: Type.Integer(),
  scheduledChanges: Type.Integer(),
  firstScheduledAt: Nullable(DateTime()),
  restoredFrom: Nullable(Type.Integer()),
});
const SheetRow = Type.Object({
  prefix: Type.String(),
  mccMnc: Nullable(Type.String()),
  origin: Nullable(
    Type.String({
      description: 'The callers the row prices (A-number prefix, country, EU or EEA); null: the default row',
    }),
  ),
  destination: Type.String(),
  rate: Money(),
  increment: Type.String(),
});
const Side = Nullable(Type.Object({ destination: Type.String(), rate: Money(), increment: Type.String() }));
const Change = Type.String({ description: 'added, removed, increase, decrease, updated or unchanged' });
const LookupRow = Type.Object({
  ...SheetRow.properties,
  effectiveFrom: DateTime(),
  effectiveTo: Nullable(DateTime()),
});
const RowIn = Type.Object(
  {
    prefix: Type.String({ pattern: '^\\d{1,15}$' }),
    destination: Type.String({ minLength: 1, maxLength: 120 }),
    rate: Type.String({ pattern: '^\\d{1,14}(\\.\\d{1,6})?$' }),
    increment: Type.Optional(Increment),
    mccMnc: Type.Optional(Nullable(Type.String({ pattern: '^\\d{3}-\\d{2,3}$' }))),
    origin: Type.Optional(Nullable(Type.String({ description: 'A-number prefix, ISO country, EU or EEA' }))),
    effectiveDate: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
const Job = Type.Object({
  jobId: Uuid(),
  routeId: Uuid(),
  status: Type.String(),
  rowsTotal: Type.Integer(),
  rowsParsed: Type.Integer(),
  rowsLoaded: Type.Integer(),
  errorCount: Type.Integer(),
  errors: Type.Array(Type.Object({ line: Type.Integer(), reason: Type.String() })),
  result: Nullable(Type.Object({}, { additionalProperties: true })),
  createdAt: DateTime(),
  finishedAt: Nullable(DateTime()),
});
const TemplateRow = Type.Object({
  prefix: Type.String(),
  destination: Type.String(),
  rate: Type.String({ description: 'empty: to fill' }),
  increment: Type.String({ description: "empty: the route's default" }),
  mccMnc: Nullable(Type.String()),
});

export function sheetToolRoutes(routes: RoutesService, tools: SheetTools, maxSyncRows: number) {
  return (app: App) => {
    app.get(
      '/routes/:id/rates/versions',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary:
            "An own route's sheet versions, newest first: every upload, flat change, row edit, restore and bulk upload",
          params: Id,
          querystring: Type.Object(OffsetQuery(25, 100)),
          response: { 200: OffsetPage(Version) },
        },
      },
      async (req) =>
        ok(
          await tools.versions(req.principal!.accountId, req.params.id, {
            limit: req.query.limit ?? 25,
            offset: req.query.offset ?? 0,
          }),
        ),
    );

    app.get(
      '/routes/:id/rates/versions/:number',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'One sheet version and its rows: the rates in force the moment it was made',
          description:
            'Increases and removals it scheduled are counted in `scheduledChanges`; they are in force in later versions.',
          params: VersionParams,
          querystring: Type.Object(OffsetQuery(100, 1000)),
          response: {
            200: Ok(
              Type.Object({
                version: Version,
                rows: Type.Array(SheetRow),
                total: Type.Integer(),
                limit: Type.Integer(),
                offset: Type.Integer(),
              }),
            ),
          },
        },
      },
      async (req) =>
        ok(
          await tools.version(req.principal!.accountId, req.params.id, req.params.number, {
            limit: req.query.limit ?? 100,
            offset: req.query.offset ?? 0,
          }),
        ),
    );

    app.get(
      '/routes/:id/rates/diff',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'What changed between two sheet versions, row by row (by prefix and network)',
          description:
            '`from` (a version number) and `to` (default: the latest). `change` narrows the rows (comma-separated: added, removed, increase, decrease, updated, unchanged; default all but unchanged); `counts` always counts every kind.',
          params: Id,
          querystring: Type.Object({
            ...OffsetQuery(100, 1000),
            from: Type.Integer({ minimum: 1 }),
            to: Type.Optional(Type.Integer({ minimum: 1 })),
            change: Type.Optional(
              Type.String({
                pattern:
                  '^(added|removed|increase|decrease|updated|unchanged)(,(added|removed|increase|decrease|updated|unchanged))*$',
              }),
            ),
          }),
          response: {
            200: Ok(
              Type.Object({
                from: Version,
                to: Version,
                counts: Type.Object({
                  added: Type.Integer(),
                  removed: Type.Integer(),
                  increases: Type.Integer(),
                  decreases: Type.Integer(),
                  updated: Type.Integer(),
                  unchanged: Type.Integer(),
                }),
                rows: Type.Array(
                  Type.Object({
                    prefix: Type.String(),
                    mccMnc: Nullable(Type.String()),
                    origin: Nullable(
                      Type.String({
                        description:
                          'The callers the row prices (A-number prefix, country, EU or EEA); null: the default row',
                      }),
                    ),
                    change: Change,
                    before: Side,
                    after: Side,
                  }),
                ),
                total: Type.Integer(),
                limit: Type.Integer(),
                offset: Type.Integer(),
              }),
            ),
          },
        },
      },
      async (req) =>
        ok(
          await tools.diff(req.principal!.accountId, req.params.id, {
            from: req.query.from,
            ...(req.query.to === undefined ? {} : { to: req.query.to }),
            ...(req.query.change === undefined ? {} : { change: req.query.change.split(',') }),
            limit: req.query.limit ?? 100,
            offset: req.query.offset ?? 0,
          }),
        ),
    );

    app.post(
      '/routes/:id/rates/versions/:number/restore',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: "Make an old version's rows the sheet again (a new version; increases and removals wait for notice)",
          params: VersionParams,
          body: Type.Object({ increaseEffectiveAt: When }, { additionalProperties: false }),
          response: { 200: Ok(UploadResultSchema) },
        },
        preValidation: async (req) => {
          req.body ??= {};
        },
      },
      async (req) =>
        ok(
          await tools.restore(
            req.principal!.accountId,
            req.params.id,
            req.params.number,
            req.body?.increaseEffectiveAt,
          ),
        ),
    );

    app.post(
      '/routes/:id/rates/rows',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Add or change some rows (by prefix and network) without uploading the whole sheet',
          description: `Up to ${MAX_ROW_EDITS} rows, as the JSON rows of an upload; every other row stays. The upload's rules apply: decreases and new destinations at once, increases at \`increaseEffectiveAt\` or after the notice period.`,
          params: Id,
          body: Type.Object(
            { rows: Type.Array(RowIn, { minItems: 1, maxItems: MAX_ROW_EDITS }), increaseEffectiveAt: When },
            { additionalProperties: false },
          ),
          response: { 200: Ok(UploadResultSchema) },
        },
      },
      async (req) => ok(await tools.upsertRows(req.principal!.accountId, req.params.id, req.body)),
    );

    app.post(
      '/routes/:id/rates/rows/remove',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Take destinations off the sheet (removals wait for the notice period, as increases do)',
          params: Id,
          body: Type.Object(
            {
              rows: Type.Array(
                Type.Object(
                  {
                    prefix: Type.String({ pattern: '^\\d{1,15}$' }),
                    mccMnc: Type.Optional(Nullable(Type.String({ pattern: '^\\d{3}-\\d{2,3}$' }))),
                    origin: Type.Optional(
                      Nullable(Type.String({ pattern: '^(\\+?\\d{1,15}|[A-Za-z]{2}|[Ee][Ee][Aa])$' })),
                    ),
                  },
                  { additionalProperties: false },
                ),
                { minItems: 1, maxItems: MAX_ROW_EDITS },
              ),
              increaseEffectiveAt: When,
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(UploadResultSchema) },
        },
      },
      async (req) => ok(await tools.removeRows(req.principal!.accountId, req.params.id, req.body)),
    );

    const slots = uploadSlotHooks((accountId) => routes.acquireUploadSlot(accountId));
    app.post(
      '/routes/my/bulk-rates',
      {
        config: { access: WRITE },
        ...slots.hooks,
        bodyLimit: 16 * 1024 * 1024,
        schema: {
          tags: TAGS,
          summary: `Upload one sheet to many own routes (up to ${MAX_BULK_SHEET_ROUTES}; dry run)`,
          description:
            `The upload body plus \`routeIds\` and \`dryRun\`. Each route's sheet is checked first; a bad row or a route that is not own refuses the whole request (400, \`details\` by route and line) before anything is written. ` +
            `Then each route's sheet is replaced under the upload's rules, each in its own transaction. Sheets of more than \`[rate_sheets] async_rows\` rows are uploaded per route. One upload slot for the request.`,
          body: Type.Object(
            {
              routeIds: Type.Array(Uuid(), { minItems: 1, maxItems: MAX_BULK_SHEET_ROUTES }),
              format: Type.Union([Type.Literal('csv'), Type.Literal('json')]),
              csv: Type.Optional(Type.String()),
              rows: Type.Optional(Type.Array(Type.Object({}, { additionalProperties: true }))),
              increaseEffectiveAt: When,
              dryRun: Type.Optional(Type.Boolean()),
            },
            { additionalProperties: false },
          ),
          response: {
            200: Ok(
              Type.Object({
                dryRun: Type.Boolean(),
                routes: Type.Array(
                  Type.Object({ routeId: Uuid(), rows: Type.Integer(), result: Nullable(UploadResultSchema) }),
                ),
              }),
            ),
          },
        },
      },
      async (req) => {
        const release = slots.take(req) ?? (() => {});
        try {
          return ok(await tools.bulkUpload(req.principal!.accountId, req.body, maxSyncRows));
        } finally {
          release();
        }
      },
    );

    app.get(
      '/routes/:id/rates/countries',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'A-Z view: per country calling code, the rows, their price range and the country default row',
          description:
            'The country default is the row on the bare calling code (it prices every number of the country no longer prefix covers); `withoutDefault` counts countries that have none. Seller rates, before the platform fee.',
          params: Id,
          querystring: Type.Object(OffsetQuery(100, 1000)),
          response: {
            200: Ok(
              Type.Object({
                countries: Type.Integer(),
                withoutDefault: Type.Integer(),
                unplacedRows: Type.Integer({ description: 'rows under no calling code' }),
                rows: Type.Array(
                  Type.Object({
                    countryCode: Type.String(),
                    country: Type.String({ description: 'ISO 3166 alpha-2 of the main country of the code' }),
                    name: Type.String(),
                    rows: Type.Integer(),
                    networkRows: Type.Integer(),
                    lowest: Nullable(Money()),
                    highest: Nullable(Money()),
                    countryDefault: Nullable(
                      Type.Object({ rate: Money(), increment: Type.String(), destination: Type.String() }),
                    ),
                  }),
                ),
                total: Type.Integer(),
                limit: Type.Integer(),
                offset: Type.Integer(),
              }),
            ),
          },
        },
      },
      async (req) =>
        ok(
          await tools.countries(req.principal!.accountId, req.params.id, {
            limit: req.query.limit ?? 100,
            offset: req.query.offset ?? 0,
          }),
        ),
    );

    app.get(
      '/routes/:id/rates/networks',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "Per-network view of an SMS sheet: each network's price beside its country price",
          params: Id,
          querystring: Type.Object({
            ...OffsetQuery(100, 1000),
            country: Type.Optional(Type.String({ pattern: '^[A-Z]{2}$' })),
          }),
          response: {
            200: OffsetPage(
              Type.Object({
                prefix: Type.String(),
                mccMnc: Type.String(),
                network: Nullable(Type.String({ description: 'the network name where the shipped ranges know it' })),
                destination: Type.String(),
                rate: Money(),
                increment: Type.String(),
                countryRate: Nullable(Money()),
              }),
            ),
          },
        },
      },
      async (req) =>
        ok(
          await tools.networks(req.principal!.accountId, req.params.id, {
            ...(req.query.country === undefined ? {} : { country: req.query.country }),
            limit: req.query.limit ?? 100,
            offset: req.query.offset ?? 0,
          }),
        ),
    );

    app.get(
      '/routes/:id/rates/lookup',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary:
            'The row of this sheet that prices a number now (SMS: its network row), and the change scheduled for it',
          params: Id,
          querystring: Type.Object({
            number: Type.String({ pattern: '^\\+?\\d{1,15}$' }),
            mccMnc: Type.Optional(Type.String({ pattern: '^\\d{3}-\\d{2,3}$' })),
            from: Type.Optional(
              Type.String({
                pattern: '^\\+?\\d{1,15}$',
                description: "The caller's number: origin-based rows that match it price the call",
              }),
            ),
          }),
          response: {
            200: Ok(
              Type.Object({
                number: Type.String(),
                type: Type.String(),
                mccMnc: Nullable(Type.String({ description: "SMS: the number's network (given, or from its range)" })),
                covered: Type.Boolean(),
                row: Nullable(LookupRow),
                countryRow: Nullable(LookupRow),
                scheduled: Nullable(LookupRow),
              }),
            ),
          },
        },
      },
      async (req) =>
        ok(
          await tools.lookup(
            req.principal!.accountId,
            req.params.id,
            req.query.number,
            req.query.mccMnc ?? null,
            req.query.from ?? null,
          ),
        ),
    );

    app.get(
      '/routes/:id/rates/jobs',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "An own route's large-sheet upload jobs, newest first",
          params: Id,
          querystring: Type.Object(OffsetQuery(25, 100)),
          response: { 200: OffsetPage(Job) },
        },
      },
      async (req) =>
        ok(
          await tools.jobs(req.principal!.accountId, req.params.id, {
            limit: req.query.limit ?? 25,
            offset: req.query.offset ?? 0,
          }),
        ),
    );

    app.get(
      '/routes/rate-templates',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'Rate sheet templates: A-Z voice and SMS with country defaults, per-network SMS per country',
          response: {
            200: Ok(
              Type.Array(
                Type.Object({
                  name: Type.String(),
                  type: Type.String(),
                  description: Type.String(),
                  needsCountry: Type.Boolean(),
                }),
              ),
            ),
          },
        },
      },
      async () => ok(tools.templates()),
    );

    app.get(
      '/routes/rate-templates/:name',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "A template's rows, as CSV (the upload's columns, rates empty) or JSON",
          params: Type.Object({ name: Type.Union(TEMPLATES.map((t) => Type.Literal(t.name))) }),
          querystring: Type.Object({
            country: Type.Optional(Type.String({ pattern: '^[A-Z]{2}$' })),
            format: Type.Optional(Type.Union([Type.Literal('csv'), Type.Literal('json')])),
          }),
          response: {
            200: Ok(
              Type.Object({
                name: Type.String(),
                type: Type.String(),
                country: Nullable(Type.String()),
                rows: Type.Array(TemplateRow),
              }),
            ),
          },
        },
      },
      async (req, reply) => {
        const t = tools.template(req.params.name, req.query.country);
        if (req.query.format === 'json') return ok(t);
        const csv = createCsvWriter(['prefix', 'destination', 'rate', 'increment', 'mcc_mnc', 'effective_date'], []);
        reply.type('text/csv; charset=utf-8').header('content-disposition', `attachment; filename="${t.name}.csv"`);
        for (const r of t.rows)
          csv.write({
            prefix: r.prefix,
            destination: r.destination,
            rate: '',
            increment: '',
            mcc_mnc: r.mccMnc ?? '',
            effective_date: '',
          });
        csv.end();
        return reply.send(csv as unknown as never);
      },
    );
  };
}
