import { Type } from 'typebox';
import type { App } from '../../../http/app.js';
import { acceptCsvStream, isStream } from '../../../http/csv-body.js';
import { CursorPage, DateTime, Nullable, Ok, Uuid, ok } from '../../../http/envelope.js';
import { badRequest } from '../../../http/errors.js';
import { cursorPage, CursorQuery } from '../../../http/pagination.js';
import { DNC_IMPORT_MAX } from '../../dnc/service.js';
import type { SwitchSubscriptions } from '../subscriptions.js';
import { HONOR_MAX_CUSTOMERS, SCRUB_MAX_BYTES, SCRUB_MAX_NUMBERS, type SwitchDncService } from './service.js';

const TAGS = ['Switch'];
// Test keys read; every change (settings, list, scrub jobs) is refused with TEST_KEY_NOT_ALLOWED.
const ACCESS = { auth: 'required', scope: 'switch:manage' } as const;
const GATE = 'Needs an active Switch plan or trial (else 402 `SWITCH_SUBSCRIPTION_REQUIRED`).';

const Kind = Type.Union([Type.Literal('number'), Type.Literal('prefix')]);
const Entry = Type.Object({
  id: Uuid(),
  kind: Kind,
  value: Type.String({ description: 'a number in E.164 with `+`, or a dial prefix (digits)' }),
  note: Nullable(Type.String()),
  source: Type.Union([Type.Literal('api'), Type.Literal('import')]),
  createdAt: DateTime(),
});
const Channel = Type.Union([Type.Literal('voice'), Type.Literal('sms')]);
const Hit = Type.Object({
  id: Uuid(),
  customerId: Uuid(),
  channel: Channel,
  number: Type.String({ description: 'masked: the first five digits only' }),
  matchedBy: Kind,
  at: DateTime(),
});
const Scrub = Type.Object({
  id: Uuid(),
  phase: Type.Union([Type.Literal('queued'), Type.Literal('scrubbing'), Type.Literal('done'), Type.Literal('failed')]),
  fileBytes: Type.Integer(),
  counts: Type.Object({
    total: Type.Integer({ description: 'rows read (a header row excepted)' }),
    listed: Type.Integer({ description: 'numbers on the list (whole number or a listed prefix)' }),
    clean: Type.Integer({ description: 'valid numbers not on the list' }),
    invalid: Type.Integer({ description: 'rows that are not an E.164 number' }),
  }),
  truncated: Type.Boolean({ description: `the file held more than ${SCRUB_MAX_NUMBERS} rows; the rest was not read` }),
  maxNumbers: Type.Integer(),
  error: Nullable(Type.String()),
  createdAt: DateTime(),
  finishedAt: Nullable(DateTime()),
  downloads: Nullable(
    Type.Object(
      { clean: Type.String(), listed: Type.String() },
      { description: 'once done: the two lists as CSV (`number` column, E.164 with `+`)' },
    ),
  ),
});
const Honor = Type.Object({
  calls: Type.Boolean({ description: "customers' SIP calls to a listed number are refused (603)" }),
  sms: Type.Boolean({ description: "customers' messages to a listed number are refused" }),
  customers: Type.Array(Type.Object({ customerId: Uuid(), honor: Type.Boolean() }), {
    description: 'per customer overrides: true scrubs both channels, false neither, whatever the account setting',
  }),
  updatedAt: Nullable(DateTime()),
});
const ImportResult = Type.Object({
  rowsRead: Type.Integer(),
  imported: Type.Integer(),
  duplicates: Type.Integer(),
  invalid: Type.Integer(),
  truncated: Type.Boolean(),
  maxRows: Type.Integer(),
  errors: Type.Array(Type.Object({ row: Type.Integer(), value: Type.String(), message: Type.String() })),
});

export function switchDncRoutes(svc: SwitchDncService, subscriptions: SwitchSubscriptions) {
  return async (app: App) => {
    app.get(
      '/switch/dnc/summary',
      {
        config: { access: ACCESS },
        schema: {
          tags: TAGS,
          summary: "The Switch DNC at a glance: the list's size, honor settings, hits, recent scrubs",
          description: `${GATE} The list is the account's do-not-call list (the same one as \`GET /dnc\`).`,
          response: {
            200: Ok(
              Type.Object({
                list: Type.Object({
                  numbers: Type.Integer(),
                  prefixes: Type.Integer(),
                  lastAddedAt: Nullable(DateTime()),
                }),
                honor: Type.Object({
                  calls: Type.Boolean(),
                  sms: Type.Boolean(),
                  customerOverrides: Type.Integer(),
                }),
                hits: Type.Object({
                  total: Type.Integer(),
                  last30Days: Type.Integer(),
                  voiceLast30Days: Type.Integer(),
                  smsLast30Days: Type.Integer(),
                  lastAt: Nullable(DateTime()),
                }),
                recentScrubs: Type.Array(Scrub),
              }),
            ),
          },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        return ok(await svc.summary(req.principal!.accountId));
      },
    );

    app.get(
      '/switch/dnc/entries',
      {
        config: { access: ACCESS },
        schema: {
          tags: TAGS,
          summary: "The account's do-not-call entries, newest first",
          description: `${GATE} Entries are added and removed with \`POST /dnc\`, \`DELETE /dnc/{id}\` or \`POST /switch/dnc/import\`.`,
          querystring: Type.Object({
            kind: Type.Optional(Kind),
            search: Type.Optional(Type.String({ maxLength: 20, description: 'entries starting with these digits' })),
            ...CursorQuery(),
          }),
          response: { 200: CursorPage(Entry) },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        const limit = req.query.limit ?? 25;
        return cursorPage(await svc.entries(req.principal!.accountId, { ...req.query, limit }), limit);
      },
    );

    app.get(
      '/switch/dnc/hits',
      {
        config: { access: ACCESS },
        schema: {
          tags: TAGS,
          summary: "Customers' calls and messages refused because the destination is listed, newest first",
          description: `${GATE} Numbers are masked.`,
          querystring: Type.Object({
            customerId: Type.Optional(Uuid()),
            channel: Type.Optional(Channel),
            ...CursorQuery(),
          }),
          response: { 200: CursorPage(Hit) },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        const limit = req.query.limit ?? 25;
        return cursorPage(await svc.hits(req.principal!.accountId, { ...req.query, limit }), limit);
      },
    );

    app.get(
      '/switch/dnc/check',
      {
        config: { access: ACCESS },
        schema: {
          tags: TAGS,
          summary: 'Whether a number is listed, and whether a customer’s call or message to it would be refused',
          description: `${GATE} \`customerId\` (a customer of the account, else 404) adds \`refused\`.`,
          querystring: Type.Object({
            number: Type.String({ minLength: 1, maxLength: 32, description: 'E.164' }),
            customerId: Type.Optional(Uuid()),
          }),
          response: {
            200: Ok(
              Type.Object({
                number: Type.String(),
                listed: Type.Boolean(),
                blocked: Type.Boolean({ description: 'the same as `listed` (as `GET /dnc/check` names it)' }),
                match: Nullable(Entry),
                refused: Nullable(Type.Object({ customerId: Uuid(), voice: Type.Boolean(), sms: Type.Boolean() })),
              }),
            ),
          },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        return ok(await svc.check(req.principal!.accountId, req.query.number, req.query.customerId));
      },
    );

    app.get(
      '/switch/dnc/customers',
      {
        config: { access: ACCESS },
        schema: {
          tags: TAGS,
          summary: 'Customers with their honor state and hit counts',
          description: `${GATE} Customers are the account's sub-accounts, in the order \`GET /application/sub-accounts\` lists them.`,
          querystring: Type.Object({
            search: Type.Optional(Type.String({ maxLength: 200, description: 'label or external reference' })),
            ...CursorQuery(50, 200),
          }),
          response: {
            200: Ok(
              Type.Object({
                rows: Type.Array(
                  Type.Object({
                    customerId: Uuid(),
                    label: Type.String(),
                    status: Type.String(),
                    override: Nullable(Type.Boolean({ description: 'null: the account settings apply' })),
                    honored: Type.Object({ voice: Type.Boolean(), sms: Type.Boolean() }),
                    hits: Type.Object({
                      total: Type.Integer(),
                      last30Days: Type.Integer(),
                      lastAt: Nullable(DateTime()),
                    }),
                  }),
                ),
                total: Type.Integer(),
                limit: Type.Integer(),
                nextCursor: Nullable(Uuid()),
                hasMore: Type.Boolean(),
              }),
            ),
          },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        return ok(await svc.customers(req.principal!.accountId, { ...req.query, limit: req.query.limit ?? 50 }));
      },
    );

    app.get(
      '/switch/dnc/honor',
      {
        config: { access: ACCESS },
        schema: {
          tags: TAGS,
          summary: "Whether customers' calls and messages are scrubbed against the list",
          description: `${GATE} Until set, nothing is scrubbed.`,
          response: { 200: Ok(Honor) },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        return ok(await svc.honor(req.principal!.accountId));
      },
    );

    app.patch(
      '/switch/dnc/honor',
      {
        config: { access: ACCESS },
        schema: {
          tags: TAGS,
          summary: 'Change the honor settings and per customer overrides',
          description:
            `${GATE} Send only what changes. A customer's \`honor\` true scrubs its calls and messages, false exempts it, ` +
            `null removes its override; at most ${HONOR_MAX_CUSTOMERS} customers per request, each a customer of the ` +
            'account (else 404). Applies to the next call or message on every daemon.',
          body: Type.Object(
            {
              calls: Type.Optional(Type.Boolean()),
              sms: Type.Optional(Type.Boolean()),
              customers: Type.Optional(
                Type.Array(Type.Object({ customerId: Uuid(), honor: Nullable(Type.Boolean()) }), {
                  maxItems: HONOR_MAX_CUSTOMERS,
                }),
              ),
            },
            { additionalProperties: false, minProperties: 1 },
          ),
          response: { 200: Ok(Honor) },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        return ok(await svc.setHonor(req.principal!.accountId, req.body));
      },
    );

    app.get(
      '/switch/dnc/scrub/:id',
      {
        config: { access: ACCESS },
        schema: {
          tags: TAGS,
          summary: "A scrub's phase and counts, or one of its result lists",
          description:
            `${GATE} \`download\` (\`clean\` or \`listed\`) answers the list as \`text/csv\` once the scrub is done ` +
            '(409 before).',
          params: Type.Object({ id: Uuid() }),
          querystring: Type.Object({
            download: Type.Optional(Type.Union([Type.Literal('clean'), Type.Literal('listed')])),
          }),
          response: { 200: Ok(Scrub) },
        },
      },
      async (req, reply) => {
        await subscriptions.require(req.principal!);
        const accountId = req.principal!.accountId;
        if (req.query.download === undefined) return ok(await svc.scrub(accountId, req.params.id));
        const file = await svc.scrubFile(accountId, req.params.id, req.query.download);
        return (
          reply
            .type('text/csv; charset=utf-8')
            .header('content-length', file.bytes)
            .header('content-disposition', `attachment; filename="scrub-${req.params.id}-${req.query.download}.csv"`)
            .header('cache-control', 'private, no-store')
            // A stream bypasses the JSON serializer; the typed reply only knows the JSON answer.
            .send(file.stream as never)
        );
      },
    );

    app.get(
      '/switch/dnc/export',
      {
        config: { access: ACCESS },
        schema: {
          tags: TAGS,
          summary: 'The do-not-call list as CSV (streamed)',
          description:
            `${GATE} Columns \`entry\` (a number's digits, or a prefix ending with \`*\`), \`note\`, \`source\`, ` +
            '`createdAt`, newest first: the file `POST /switch/dnc/import` reads back.',
          produces: ['text/csv'],
        },
      },
      async (req, reply) => {
        await subscriptions.require(req.principal!);
        return reply
          .type('text/csv; charset=utf-8')
          .header('content-disposition', 'attachment; filename="dnc.csv"')
          .header('cache-control', 'private, no-store')
          .send(svc.export(req.principal!.accountId));
      },
    );

    await app.register(async (scope) => {
      acceptCsvStream(scope);
      // The child scope keeps the TypeBox provider at run time; only its static type is the plain instance.
      const s = scope as unknown as App;
      s.post(
        '/switch/dnc/import',
        {
          config: { access: ACCESS },
          schema: {
            tags: TAGS,
            summary: 'Import a CSV file into the do-not-call list (streamed)',
            description:
              `${GATE} The same import as \`POST /dnc/import\`, into the same list: \`text/csv\`, up to ` +
              `${DNC_IMPORT_MAX.toLocaleString('en-US')} entries; first column a number (E.164, \`+\`, \`00\` or bare ` +
              'digits) or a prefix ending with `*`, optional second column a note, a header row skipped.',
            consumes: ['text/csv'],
            response: { 200: Ok(ImportResult) },
          },
        },
        async (req) => {
          await subscriptions.require(req.principal!);
          if (!isStream(req.body)) throw badRequest('Send the file as text/csv');
          return ok(await svc.import(req.principal!.accountId, req.body));
        },
      );

      s.post(
        '/switch/dnc/scrub',
        {
          config: { access: ACCESS },
          schema: {
            tags: TAGS,
            summary: 'Scrub a file of numbers against the do-not-call list (asynchronous)',
            description:
              `${GATE} Body: \`text/csv\`, up to ${SCRUB_MAX_NUMBERS.toLocaleString('en-US')} numbers ` +
              `(${SCRUB_MAX_BYTES / 1024 / 1024} MiB, else 413), one per row in the first column (E.164, \`+\`, \`00\` ` +
              'or bare digits; a header row skipped). The file is stored as it arrives and checked in the background: ' +
              '202 with the job; `GET /switch/dnc/scrub/{id}` shows its phase and counts and, once done, the clean and ' +
              'listed numbers as CSV. At most 2 scrubs per account run at once (409). The list is not changed.',
            consumes: ['text/csv'],
            response: { 202: Ok(Scrub) },
          },
        },
        async (req, reply) => {
          await subscriptions.require(req.principal!);
          if (!isStream(req.body)) throw badRequest('Send the file as text/csv');
          return reply.code(202).send(ok(await svc.startScrub(req.principal!.accountId, req.body)));
        },
      );
    });
  };
}
