import { Type } from 'typebox';
import type { App } from '../../../http/app.js';
import { createCsvWriter } from '../../../http/csv.js';
import { DateTime, Money, Nullable, Ok, OffsetPage, ok, Uuid } from '../../../http/envelope.js';
import { validationError, type ErrorDetail } from '../../../http/errors.js';
import {
  parseIncrement,
  parseRateSheetCsv,
  validateSheetRows,
  type SheetResult,
  type SheetRow,
} from '../../../rating/index.js';
import type { SwitchSubscriptions } from '../subscriptions.js';
import type { SellKind } from './deck.js';
import { DEFAULT_INCREMENT, type CustomersService } from './service.js';

// Reads are open to test keys; every change is refused to them (TEST_KEY_NOT_ALLOWED: `testKeys` unset).
const access = { auth: 'required', scope: 'switch:manage' } as const;
const tags = ['Switch'];
const MAX_JSON_ROWS = 5000;
const MAX_CSV_ROWS = 100_000;
const MAX_CSV_CHARS = 8_000_000;
const EMAIL = /^[^\s@,;]+@[^\s@,;]+\.[^\s@,;]+$/;
const GATE = 'Needs an active Switch plan or trial (else 402 `SWITCH_SUBSCRIPTION_REQUIRED`). ';
const NOTICE_RULE =
  'The notice rule: an increase on a prefix already in force takes effect `noticeDays` later (see ' +
  '`/sell-rates/notice`); a decrease and a new prefix apply at once. A change to a prefix replaces a pending ' +
  'change of it (cancelled); a row identical to the one in force is not written. ';

const Params = Type.Object({ id: Uuid('The customer: a sub-account of the Switch account') });
const Kind = Type.Union([Type.Literal('voice'), Type.Literal('sms'), Type.Literal('inbound')], {
  description:
    "`voice` outbound calls and `sms` messages by the dialled number; `inbound` calls to the customer's rented " +
    'numbers by the called number (per minute, default increment 60/60)',
});

const Customer = Type.Object({
  id: Uuid(),
  subAccountId: Uuid(),
  label: Nullable(Type.String()),
  externalRef: Nullable(Type.String()),
  status: Type.String(),
  balance: Money(),
  creditLimit: Money(),
  dailySpendCap: Nullable(Money()),
  maxConcurrentCalls: Nullable(Type.Integer()),
  markupPct: Nullable(Type.String({ description: 'What the customer pays where no sell rate matches' })),
  currency: Type.String(),
  sellRates: Type.Object({
    voicePrefixes: Type.Integer({ description: 'Voice prefixes with a rate in force' }),
    smsPrefixes: Type.Integer(),
    inboundPrefixes: Type.Integer({ description: "Inbound prefixes (the customer's numbers) with a rate in force" }),
    scheduledChanges: Type.Integer({ description: 'Versions written and not yet in force' }),
    nextChangeAt: Nullable(DateTime()),
    noticeDays: Type.Integer(),
  }),
  createdAt: DateTime(),
});

const SellRate = Type.Object({
  id: Uuid(),
  kind: Kind,
  prefix: Type.String(),
  destination: Type.String(),
  rate: Money('Per minute (voice, inbound) or per message (SMS)'),
  billingIncrement: Type.String(),
  effectiveFrom: DateTime(),
  change: Type.Union([
    Type.Literal('new'),
    Type.Literal('increase'),
    Type.Literal('decrease'),
    Type.Literal('unchanged'),
  ]),
  previousRate: Nullable(Money()),
  createdAt: DateTime(),
});

const Change = Type.Object({
  ...SellRate.properties,
  status: Type.Union([Type.Literal('pending'), Type.Literal('effective'), Type.Literal('cancelled')]),
  cancelledAt: Nullable(DateTime()),
  notifiedAt: Nullable(DateTime()),
});

const WriteResult = Type.Object({
  written: Type.Integer(),
  new: Type.Integer(),
  increases: Type.Integer(),
  decreases: Type.Integer(),
  unchanged: Type.Integer(),
  cancelledScheduled: Type.Integer(),
  scheduled: Type.Array(SellRate),
  autoSent: Nullable(Type.Object({ sent: Type.Boolean(), to: Type.Array(Type.String()) })),
});

const RowFields = {
  destination: Type.String({ minLength: 1, maxLength: 200 }),
  rate: Type.String({ maxLength: 30, description: 'Up to 6 decimal places' }),
  billingIncrement: Type.Optional(
    Type.String({ maxLength: 9, description: '`<first>/<next>` seconds; default 60/60 (voice, inbound), 1/1 (SMS)' }),
  ),
};
const Row = Type.Object(
  { prefix: Type.String({ minLength: 1, maxLength: 15, pattern: '^[0-9]+$' }), ...RowFields },
  { additionalProperties: false },
);

const Notice = Type.Object({
  customerId: Uuid(),
  noticeDays: Type.Integer(),
  recipients: Type.Array(Type.String()),
  autoSend: Type.Boolean(),
  updatedAt: Nullable(DateTime()),
});

const CHANGE_COLUMNS = [
  'kind',
  'prefix',
  'destination',
  'change',
  'previous_rate',
  'rate',
  'billing_increment',
  'effective_from',
  'status',
  'notified_at',
] as const;

const sheetOptions = (kind: SellKind, maxRows: number) => ({
  // An inbound deck is checked as a voice sheet: per minute, no networks.
  type: kind === 'sms' ? ('sms' as const) : ('voice' as const),
  defaultIncrement: parseIncrement(DEFAULT_INCREMENT[kind])!,
  maxRows,
});

/** Rows the deck cannot hold: its dates come from the notice rule, and it prices by prefix only. */
function unsupported(rows: readonly SheetRow[]): { line: number; reason: string }[] {
  const out: { line: number; reason: string }[] = [];
  for (const r of rows) {
    if (r.effectiveAt) out.push({ line: r.line, reason: 'effective date: set by the notice rule, not by the row' });
    else if (r.mccMnc) out.push({ line: r.line, reason: 'MCC-MNC: a sell-rate deck prices by prefix only' });
    else if (r.origin) out.push({ line: r.line, reason: 'origin: a sell-rate deck prices by prefix only' });
  }
  return out;
}

function checked(result: SheetResult, detail: (e: { line: number; reason: string }) => ErrorDetail): SheetRow[] {
  const errors = result.errors.length > 0 ? result.errors : unsupported(result.rows);
  if (errors.length > 0) throw validationError(errors.map(detail));
  return result.rows;
}

/** Switch customers and their sell rates with notice (docs/switch.md "Customers and sell rates"). */
export function customersRoutes(service: CustomersService, subscriptions: SwitchSubscriptions) {
  return (app: App) => {
    app.get(
      '/switch/customers',
      {
        config: { access },
        schema: {
          tags,
          summary: 'Switch customers with status, balance, limits and sell-rate deck summary',
          description: GATE + 'Newest first. `search` matches the label or external reference.',
          querystring: Type.Object({
            search: Type.Optional(Type.String({ maxLength: 200 })),
            limit: Type.Integer({ minimum: 1, maximum: 500, default: 50 }),
            offset: Type.Integer({ minimum: 0, default: 0 }),
          }),
          response: { 200: OffsetPage(Customer) },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        return ok(await service.list(req.principal!.accountId, req.query));
      },
    );

    app.get(
      '/switch/customers/:id',
      {
        config: { access },
        schema: {
          tags,
          summary: 'One Switch customer',
          description: GATE + '404 for an id that is not a sub-account of the caller.',
          params: Params,
          response: { 200: Ok(Customer) },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        return ok(await service.get(req.principal!.accountId, req.params.id));
      },
    );

    app.get(
      '/switch/customers/:id/sell-rates',
      {
        config: { access },
        schema: {
          tags,
          summary: "A customer's sell rates in force",
          description:
            GATE +
            'One row per prefix (the version in force now), by kind then prefix. `search` (digits) matches the start of ' +
            'the prefix. Pending changes: `GET .../sell-rates/scheduled`.',
          params: Params,
          querystring: Type.Object({
            kind: Type.Optional(Kind),
            search: Type.Optional(Type.String({ maxLength: 15, pattern: '^[0-9]*$' })),
            limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
            offset: Type.Integer({ minimum: 0, default: 0 }),
          }),
          response: { 200: OffsetPage(SellRate) },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        return ok(await service.rates(req.principal!.accountId, req.params.id, req.query));
      },
    );

    app.get(
      '/switch/customers/:id/sell-rates/scheduled',
      {
        config: { access },
        schema: {
          tags,
          summary: "A customer's sell-rate versions not yet in force",
          description: GATE + 'Increases waiting out the notice period, soonest first.',
          params: Params,
          querystring: Type.Object({ kind: Type.Optional(Kind) }),
          response: { 200: Ok(Type.Object({ rows: Type.Array(SellRate) })) },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        return ok(await service.scheduled(req.principal!.accountId, req.params.id, req.query.kind));
      },
    );

    app.post(
      '/switch/customers/:id/sell-rates',
      {
        config: { access },
        schema: {
          tags,
          summary: 'Write sell rates (JSON rows)',
          description:
            GATE +
            NOTICE_RULE +
            `Up to ${MAX_JSON_ROWS} rows of one \`kind\`; every bad row is named in \`details\` (\`/rows/<index>\`) and ` +
            'nothing is written. From the next call or message (a live call keeps its rate).',
          params: Params,
          body: Type.Object(
            { kind: Kind, rows: Type.Array(Row, { minItems: 1, maxItems: MAX_JSON_ROWS }) },
            { additionalProperties: false },
          ),
          response: { 200: Ok(WriteResult) },
        },
      },
      async (req) => {
        const { kind, rows } = req.body;
        const parsed = validateSheetRows(
          rows.map((r, i) => ({
            line: i + 1,
            prefix: r.prefix,
            destination: r.destination,
            rate: r.rate,
            increment: r.billingIncrement,
          })),
          sheetOptions(kind, MAX_JSON_ROWS),
        );
        const valid = checked(parsed, (e) => ({ path: `/rows/${e.line - 1}`, message: e.reason }));
        await subscriptions.require(req.principal!);
        return ok(await service.write(req.principal!.accountId, req.params.id, kind, valid));
      },
    );

    app.put(
      '/switch/customers/:id/sell-rates/:prefix',
      {
        config: { access },
        schema: {
          tags,
          summary: 'Write one prefix’s sell rate',
          description: GATE + NOTICE_RULE,
          params: Type.Object({
            id: Uuid(),
            prefix: Type.String({ minLength: 1, maxLength: 15, pattern: '^[0-9]+$' }),
          }),
          body: Type.Object({ kind: Type.Optional(Kind), ...RowFields }, { additionalProperties: false }),
          response: { 200: Ok(WriteResult) },
        },
      },
      async (req) => {
        const kind = req.body.kind ?? 'voice';
        const parsed = validateSheetRows(
          [
            {
              line: 1,
              prefix: req.params.prefix,
              destination: req.body.destination,
              rate: req.body.rate,
              increment: req.body.billingIncrement,
            },
          ],
          sheetOptions(kind, 1),
        );
        const valid = checked(parsed, (e) => ({ path: '/body', message: e.reason }));
        await subscriptions.require(req.principal!);
        return ok(await service.write(req.principal!.accountId, req.params.id, kind, valid));
      },
    );

    app.post(
      '/switch/customers/:id/sell-rates/csv',
      {
        config: { access },
        bodyLimit: MAX_CSV_CHARS + 1024,
        schema: {
          tags,
          summary: 'Write sell rates from a CSV sheet',
          description:
            GATE +
            NOTICE_RULE +
            'Columns `prefix`, `destination`, `rate`, `increment` (header spellings as route rate sheets; empty ' +
            `increment: 60/60 voice and inbound, 1/1 SMS), up to ${MAX_CSV_ROWS} rows. Every bad row is named in \`details\` ` +
            '(`/csv` with its file line, the header being line 1) and nothing is written. Rows not in the file are kept.',
          params: Params,
          body: Type.Object(
            { kind: Kind, csv: Type.String({ minLength: 1, maxLength: MAX_CSV_CHARS }) },
            { additionalProperties: false },
          ),
          response: { 200: Ok(WriteResult) },
        },
      },
      async (req) => {
        const { kind, csv } = req.body;
        const parsed = parseRateSheetCsv(csv, sheetOptions(kind, MAX_CSV_ROWS));
        const valid = checked(parsed, (e) => ({
          path: '/csv',
          message: e.line > 0 ? `line ${e.line}: ${e.reason}` : e.reason,
        }));
        await subscriptions.require(req.principal!);
        return ok(await service.write(req.principal!.accountId, req.params.id, kind, valid));
      },
    );

    app.get(
      '/switch/customers/:id/sell-rates/notice',
      {
        config: { access },
        schema: {
          tags,
          summary: "A customer's sell-rate notice terms",
          description: GATE + 'Never set: 0 days (increases apply at once), no recipients, no auto-send.',
          params: Params,
          response: { 200: Ok(Notice) },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        return ok(await service.notice(req.principal!.accountId, req.params.id));
      },
    );

    app.put(
      '/switch/customers/:id/sell-rates/notice',
      {
        config: { access },
        schema: {
          tags,
          summary: "Set a customer's sell-rate notice terms",
          description:
            GATE +
            'Send only what changes. `noticeDays` applies to increases written from now on (a pending increase keeps ' +
            'its date). `autoSend`: each write that changes rates e-mails the `recipients` its changes at once.',
          params: Params,
          body: Type.Object(
            {
              noticeDays: Type.Optional(Type.Integer({ minimum: 0, maximum: 365 })),
              recipients: Type.Optional(Type.Array(Type.String({ maxLength: 255 }), { maxItems: 20 })),
              autoSend: Type.Optional(Type.Boolean()),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Notice) },
        },
      },
      async (req) => {
        const bad: ErrorDetail[] = (req.body.recipients ?? []).flatMap((r, i) =>
          EMAIL.test(r) ? [] : [{ path: `/recipients/${i}`, message: 'must be an e-mail address' }],
        );
        if (bad.length > 0) throw validationError(bad);
        await subscriptions.require(req.principal!);
        return ok(await service.putNotice(req.principal!.accountId, req.params.id, req.body));
      },
    );

    const changesQuery = Type.Object({
      days: Type.Integer({ minimum: 1, maximum: 365, default: 30, description: 'How far back written changes go' }),
    });

    app.get(
      '/switch/customers/:id/sell-rates/notice/changes',
      {
        config: { access },
        schema: {
          tags,
          summary: "A customer's pending and recent sell-rate changes",
          description:
            GATE +
            'Pending changes (not yet in force) and those written in the last `days`: old and new rate, when it ' +
            'applies, `change` (`increase`, `decrease`, `new`), `status` (`pending`, `effective`, `cancelled`) and when a ' +
            'notice listed it (`notifiedAt`). Latest effective date first.',
          params: Params,
          querystring: changesQuery,
          response: {
            200: Ok(Type.Object({ customerId: Uuid(), at: DateTime(), rows: Type.Array(Change) })),
          },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        return ok(await service.changes(req.principal!.accountId, req.params.id, req.query.days));
      },
    );

    app.get(
      '/switch/customers/:id/sell-rates/notice/changes.csv',
      {
        config: { access },
        schema: {
          tags,
          summary: "A customer's pending and recent sell-rate changes, as CSV",
          description: GATE + `The same rows as \`.../notice/changes\`; columns ${CHANGE_COLUMNS.join(', ')}.`,
          params: Params,
          querystring: changesQuery,
        },
      },
      async (req, reply) => {
        await subscriptions.require(req.principal!);
        const { rows } = await service.changes(req.principal!.accountId, req.params.id, req.query.days);
        const csv = createCsvWriter(CHANGE_COLUMNS, ['previous_rate', 'rate']);
        reply
          .type('text/csv; charset=utf-8')
          .header('content-disposition', `attachment; filename="sell-rate-changes-${req.params.id}.csv"`);
        for (const r of rows)
          csv.write({
            kind: r.kind,
            prefix: r.prefix,
            destination: r.destination,
            change: r.change,
            previous_rate: r.previousRate ?? '',
            rate: r.rate,
            billing_increment: r.billingIncrement,
            effective_from: r.effectiveFrom,
            status: r.status,
            notified_at: r.notifiedAt ?? '',
          });
        csv.end();
        return reply.send(csv as unknown as never);
      },
    );

    app.post(
      '/switch/customers/:id/sell-rates/notice/send',
      {
        config: { access },
        schema: {
          tags,
          summary: "E-mail a customer's unsent sell-rate changes",
          description:
            GATE +
            'Sends each recipient one e-mail through the exchange mailer listing every pending or recent change no ' +
            'notice listed yet, and records the send (the changes then show `notifiedAt`). 400 `VALIDATION_ERROR` ' +
            'when no recipients are set or nothing is left to send.',
          params: Params,
          response: {
            200: Ok(
              Type.Object({
                id: Uuid(),
                sent: Type.Literal(true),
                to: Type.Array(Type.String()),
                changes: Type.Integer(),
                sentAt: DateTime(),
              }),
            ),
          },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        return ok(await service.send(req.principal!.accountId, req.params.id));
      },
    );
  };
}
