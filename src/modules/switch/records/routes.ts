import { Type } from 'typebox';
import type { App } from '../../../http/app.js';
import { hasScope, type Access, type Principal } from '../../../http/access.js';
import { validationError } from '../../../http/errors.js';
import { DateTime, Money, Nullable, Ok, ok, Uuid } from '../../../http/envelope.js';
import { MAX_EXPORT_ROWS, MAX_RUNNING } from '../../billing/exports.js';
import type { SwitchSubscriptions } from '../subscriptions.js';
import { ExportBody, MAX_LIMIT, RecordQuery } from './filters.js';
import { USAGE_MAX_DAYS, type SwitchRecords } from './service.js';

const READ: Access = { auth: 'required', scope: 'switch:manage', testKeys: 'allow' };
const GATE = 'Needs an active Switch plan or trial (else 402 `SWITCH_SUBSCRIPTION_REQUIRED`).';
const MONEY_NOTE = 'Money in USD, 6-place strings.';

const Window = Type.Object({
  from: Type.Optional(Type.String({ format: 'date-time', description: 'inclusive; default 30 days before `to`' })),
  to: Type.Optional(Type.String({ format: 'date-time', description: 'exclusive; default now' })),
});

const Metrics = {
  revenue: Money('what the customers were charged (base price plus markup)'),
  cost: Money('the base charge: route seller rate plus platform fee'),
  margin: Money('revenue - cost: the markup credited to the Switch account'),
  marginPct: Nullable(Type.Number({ description: 'margin / revenue in percent; null with no revenue' })),
  calls: Type.Integer({ description: 'voice calls, a failed-over call once' }),
  answered: Type.Integer(),
  messages: Type.Integer({ description: 'SMS records' }),
  minutes: Type.Number({ description: 'billed minutes, 2 places' }),
  asr: Nullable(Type.Number({ description: 'percent of calls answered; null with no calls' })),
};

const Rating = Type.Object({
  unratedBilled: Type.Integer({ description: 'billed records with no rate' }),
  billedCalls: Type.Integer({ description: 'billed records (calls and messages)' }),
  unratedPct: Nullable(Type.Number()),
  unratedRevenue: Money(),
  unratedMinutes: Type.Number(),
});

const WindowOut = Type.Object({ from: DateTime(), to: DateTime(), label: Type.String() });

const Record = Type.Object({
  id: Uuid(),
  callId: Nullable(Uuid()),
  kind: Type.String(),
  direction: Type.String(),
  source: Type.String(),
  status: Nullable(Type.String()),
  subAccountId: Uuid(),
  customerLabel: Nullable(Type.String()),
  vendorTrunkId: Nullable(Uuid()),
  vendorTrunkName: Nullable(Type.String()),
  supplierId: Nullable(Uuid()),
  from: Nullable(Type.String()),
  to: Nullable(Type.String()),
  cli: Nullable(Type.String()),
  sipCode: Nullable(Type.Integer()),
  hangupCause: Nullable(Type.String()),
  releaseParty: Nullable(Type.String()),
  durationSeconds: Nullable(Type.Integer()),
  billedSeconds: Nullable(Type.Integer()),
  segments: Nullable(Type.Integer()),
  pddMs: Nullable(Type.Integer()),
  mediaMode: Nullable(Type.String()),
  ratePerUnit: Nullable(Money()),
  revenue: Money(),
  cost: Money(),
  margin: Money(),
  rated: Type.Boolean(),
  billed: Type.Boolean(),
  isProbe: Type.Boolean(),
  simulated: Type.Boolean(),
  answeredAt: Nullable(DateTime()),
  endedAt: Nullable(DateTime()),
  createdAt: DateTime(),
});

const SwitchExport = Type.Object({
  id: Uuid(),
  kind: Type.String(),
  phase: Type.String({ enum: ['queued', 'running', 'completed', 'failed'] }),
  status: Type.String(),
  requestedScope: Type.Object({}, { additionalProperties: true }),
  window: Type.Object({ from: DateTime(), to: DateTime() }),
  requestedAt: DateTime(),
  recordCount: Nullable(Type.Integer({ description: 'set once completed' })),
  rowCount: Nullable(Type.Integer()),
  numbersMasked: Type.Boolean(),
  addressesMasked: Type.Boolean(),
  truncated: Type.Boolean({ description: `the file stopped at ${MAX_EXPORT_ROWS} rows` }),
  error: Nullable(Type.String()),
  completedAt: Nullable(DateTime()),
  expiresAt: DateTime(),
  downloadable: Type.Boolean(),
  downloadUrl: Nullable(Type.String({ description: '`/billing/exports/{id}/download` once completed' })),
  createdAt: DateTime(),
  queryId: Uuid(),
});

const UsageSums = {
  calls: Type.Integer(),
  answered: Type.Integer(),
  messages: Type.Integer(),
  minutes: Type.Number(),
  revenue: Money(),
  cost: Money(),
  margin: Money(),
};

/** Without `cdr:numbers` a scoped key sees calling and dialled numbers masked. */
const masked = (p: Principal) => !hasScope(p, 'cdr:numbers');

export function switchRecordRoutes(records: SwitchRecords, subscriptions: SwitchSubscriptions) {
  return (app: App) => {
    app.get(
      '/switch/cdrs',
      {
        config: { access: READ, rateLimit: { points: 120, seconds: 60 } },
        schema: {
          tags: ['Switch'],
          summary: "The Switch account's customer call and message records",
          description:
            `${GATE} One row per call leg or message of the account's customers (its sub-accounts). Probes hidden ` +
            `unless \`includeProbes\`. \`limit\` 1 to ${MAX_LIMIT} (default 50), \`offset\` from 0; default window: the ` +
            '7 days before `to`. A key without `cdr:numbers` sees `from`, `to` and `cli` masked. Filters on what ' +
            'records do not keep (`routeGroupId`, `q850Cause(s)`, `codec`, `ip`, `riskMin`, `attestation`) match ' +
            `nothing. ${MONEY_NOTE}`,
          querystring: RecordQuery,
          response: {
            200: Ok(
              Type.Object({
                rows: Type.Array(Record),
                total: Type.Integer(),
                limit: Type.Integer(),
                offset: Type.Integer(),
                window: Type.Object({ from: DateTime(), to: DateTime() }),
                numbersMasked: Type.Boolean(),
              }),
            ),
          },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        return ok(await records.list(req.principal!.accountId, req.query, masked(req.principal!)));
      },
    );

    app.get(
      '/switch/analytics/totals',
      {
        config: { access: READ },
        schema: {
          tags: ['Switch'],
          summary: 'Margin and quality totals of the customers’ traffic',
          description: `${GATE} Test-key traffic and probes excluded. ${MONEY_NOTE}`,
          querystring: Type.Object(Window.properties, { additionalProperties: false }),
          response: {
            200: Ok(
              Type.Object({
                ...Metrics,
                window: WindowOut,
                freshness: Type.Object({ asOf: DateTime(), latestRecordAt: Nullable(DateTime()) }),
                rating: Rating,
              }),
            ),
          },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        return ok(await records.totals(req.principal!.accountId, req.query));
      },
    );

    app.get(
      '/switch/analytics/daily',
      {
        config: { access: READ },
        schema: {
          tags: ['Switch'],
          summary: 'The totals per UTC day',
          description: `${GATE} Days with no records are left out. ${MONEY_NOTE}`,
          querystring: Type.Object(Window.properties, { additionalProperties: false }),
          response: { 200: Ok(Type.Array(Type.Object({ day: Type.String(), ...Metrics, rating: Rating }))) },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        return ok(await records.daily(req.principal!.accountId, req.query));
      },
    );

    app.get(
      '/switch/analytics/breakdown',
      {
        config: { access: READ },
        schema: {
          tags: ['Switch'],
          summary: 'The totals by customer, supplier route or destination country',
          description:
            `${GATE} \`customer\`: key the sub-account id, label its label, external its external reference; ` +
            '`supplier`: key the route the legs went out on, label its name; `destination`: key the route country ' +
            `(\`ZZ\` when unknown). Largest revenue first. ${MONEY_NOTE}`,
          querystring: Type.Object(
            {
              ...Window.properties,
              by: Type.Optional(
                Type.Union([Type.Literal('customer'), Type.Literal('supplier'), Type.Literal('destination')], {
                  default: 'customer',
                }),
              ),
            },
            { additionalProperties: false },
          ),
          response: {
            200: Ok(
              Type.Object({
                by: Type.String(),
                window: WindowOut,
                items: Type.Array(
                  Type.Object({
                    key: Nullable(Type.String()),
                    label: Nullable(Type.String()),
                    external: Nullable(Type.String()),
                    ...Metrics,
                  }),
                ),
              }),
            ),
          },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        return ok(await records.breakdown(req.principal!.accountId, req.query));
      },
    );

    app.get(
      '/switch/cdrs/exports',
      {
        config: { access: READ },
        schema: {
          tags: ['Switch'],
          summary: 'The latest 25 record exports',
          description: GATE,
          response: { 200: Ok(Type.Array(SwitchExport)) },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        return ok(await records.listExports(req.principal!.accountId));
      },
    );

    app.post(
      '/switch/cdrs/exports',
      {
        // Reads records into a file only this account can download: a test key may start one.
        config: { access: { ...READ, testKeys: 'allow' }, rateLimit: { points: 10, seconds: 60 } },
        schema: {
          tags: ['Switch'],
          summary: 'Export the records the filters select as CSV, in the background',
          description:
            `${GATE} Body: the filters of \`GET /switch/cdrs\` (no \`limit\`, \`offset\`). 202 with the export; at most ` +
            `${MAX_RUNNING} exports (this and billing exports) run at once per account (429 \`TOO_MANY_EXPORTS\`); up ` +
            `to ${MAX_EXPORT_ROWS} rows, oldest first; the file is downloaded at \`/billing/exports/{id}/download\` ` +
            'once completed and kept 7 days. A key without `cdr:numbers` gets masked numbers (`numbersMasked`).',
          body: ExportBody,
          response: { 202: Ok(SwitchExport) },
        },
      },
      async (req, reply) => {
        await subscriptions.require(req.principal!);
        const e = await records.startExport(req.principal!.accountId, req.body, masked(req.principal!));
        return reply.code(202).send(ok(e));
      },
    );

    app.get(
      '/switch/cdrs/exports/:id',
      {
        config: { access: READ },
        schema: {
          tags: ['Switch'],
          summary: 'One record export',
          description: `${GATE} 404 for an unknown id (or a billing export).`,
          params: Type.Object({ id: Uuid() }),
          response: { 200: Ok(SwitchExport) },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        return ok(await records.getExport(req.principal!.accountId, req.params.id));
      },
    );

    app.get(
      '/switch/customers/:id/usage',
      {
        config: { access: READ },
        schema: {
          tags: ['Switch'],
          summary: "A customer's usage: totals, per UTC day, and its live calls",
          description:
            `${GATE} The path id is the sub-account; the query's \`subAccountId\` (spec) may name it instead and ` +
            `must agree. \`since\` default 24 hours before \`until\` (default now). A window longer than ` +
            `${USAGE_MAX_DAYS} days is clamped to its first ${USAGE_MAX_DAYS} (\`window.clamped\`); \`nextSince\` is ` +
            'where the next window starts. `live.concurrentCalls` counts its calls not yet ended, null when that ' +
            'cannot be read. `rejectedAtCapacity` is null: refusals at the concurrency cap are not recorded per ' +
            `account. \`destinations\` adds usage per route country. ${MONEY_NOTE}`,
          params: Type.Object({ id: Uuid() }),
          querystring: Type.Object(
            {
              subAccountId: Type.Optional(Uuid()),
              since: Type.Optional(Type.String({ format: 'date-time' })),
              until: Type.Optional(Type.String({ format: 'date-time' })),
              destinations: Type.Optional(
                Type.Union([Type.Literal('true'), Type.Literal('false'), Type.Literal('1'), Type.Literal('0')]),
              ),
            },
            { additionalProperties: false },
          ),
          response: {
            200: Ok(
              Type.Object({
                window: Type.Object({
                  subAccountId: Uuid(),
                  since: DateTime(),
                  until: DateTime(),
                  requestedUntil: DateTime(),
                  nextSince: DateTime(),
                  clamped: Type.Boolean(),
                  maxWindowDays: Type.Integer(),
                }),
                customer: Type.Object({ id: Uuid(), label: Nullable(Type.String()) }),
                totals: Type.Object({ ...UsageSums, rejectedAtCapacity: Nullable(Type.Integer()) }),
                daily: Type.Array(Type.Object({ day: Type.String(), ...UsageSums })),
                destinations: Type.Optional(
                  Type.Array(Type.Object({ key: Type.String(), label: Type.String(), ...UsageSums })),
                ),
                live: Type.Object({ concurrentCalls: Nullable(Type.Integer()) }),
              }),
            ),
          },
        },
      },
      async (req) => {
        const q = req.query;
        if (q.subAccountId && q.subAccountId !== req.params.id)
          throw validationError([{ path: 'subAccountId', message: 'must be the customer of the path' }]);
        await subscriptions.require(req.principal!);
        return ok(
          await records.usage(
            req.principal!.accountId,
            {
              subAccountId: req.params.id,
              since: q.since,
              until: q.until,
              destinations: q.destinations === 'true' || q.destinations === '1',
            },
            (id) => records.openCalls(id),
          ),
        );
      },
    );
  };
}
