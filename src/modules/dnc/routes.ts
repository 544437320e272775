import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { acceptCsvStream, isStream } from '../../http/csv-body.js';
import { CursorPage, DateTime, Nullable, Ok, Uuid, ok } from '../../http/envelope.js';
import { badRequest } from '../../http/errors.js';
import { cursorPage, CursorQuery } from '../../http/pagination.js';
import { DNC_IMPORT_MAX, type DncService } from './service.js';

const TAGS = ['Do not call'];
// A test key reads the list; changing it would change what live campaigns may dial, so it is refused.
const WRITE = { auth: 'required', scope: 'dialer:write' } as const;
const READ = { auth: 'required', scope: 'dialer:write' } as const;

const Entry = Type.Object({
  id: Uuid(),
  kind: Type.Union([Type.Literal('number'), Type.Literal('prefix')]),
  value: Type.String({ description: 'a number in E.164 with `+`, or a dial prefix (digits)' }),
  note: Nullable(Type.String()),
  source: Type.Union([Type.Literal('api'), Type.Literal('import')]),
  createdAt: DateTime(),
});

const ImportResult = Type.Object({
  rowsRead: Type.Integer(),
  imported: Type.Integer({ description: 'entries newly listed' }),
  duplicates: Type.Integer({ description: 'valid rows already listed (or repeated in the file)' }),
  invalid: Type.Integer(),
  truncated: Type.Boolean({ description: 'the file held more than maxRows entries; the rest was not read' }),
  maxRows: Type.Integer(),
  errors: Type.Array(Type.Object({ row: Type.Integer(), value: Type.String(), message: Type.String() }), {
    description: 'the first 100 refused rows',
  }),
});

export function dncRoutes(dnc: DncService) {
  return async (app: App) => {
    app.get(
      '/dnc',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'List the do-not-call entries of the account, newest first',
          querystring: Type.Object({
            kind: Type.Optional(Type.Union([Type.Literal('number'), Type.Literal('prefix')])),
            search: Type.Optional(Type.String({ maxLength: 20, description: 'entries starting with these digits' })),
            ...CursorQuery(),
          }),
          response: { 200: CursorPage(Entry) },
        },
      },
      async (req) =>
        cursorPage(
          await dnc.list(req.principal!.accountId, { ...req.query, limit: req.query.limit ?? 25 }),
          req.query.limit ?? 25,
        ),
    );

    app.post(
      '/dnc',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Add numbers and prefixes to the do-not-call list',
          description:
            'No campaign ever dials or messages a listed number, nor a number starting with a listed prefix: the dialer checks ' +
            'at dial time, so an entry added while a campaign runs applies to its next call. Entries already listed count as ' +
            'duplicates. Up to 1,000 numbers and 1,000 prefixes per request; larger lists go through `POST /dnc/import`.',
          body: Type.Object(
            {
              numbers: Type.Optional(Type.Array(Type.String({ maxLength: 32 }), { maxItems: 1000 })),
              prefixes: Type.Optional(Type.Array(Type.String({ maxLength: 20 }), { maxItems: 1000 })),
              note: Type.Optional(Type.String({ maxLength: 500 })),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Type.Object({ added: Type.Integer(), duplicates: Type.Integer() })) },
        },
      },
      async (req) => ok(await dnc.add(req.principal!.accountId, req.body)),
    );

    app.delete(
      '/dnc/:id',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Remove a do-not-call entry',
          params: Type.Object({ id: Uuid() }),
          response: { 200: Ok(Type.Object({ id: Uuid() })) },
        },
      },
      async (req) => ok(await dnc.remove(req.principal!.accountId, req.params.id)),
    );

    app.get(
      '/dnc/check',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'Whether a number is on the do-not-call list, and which entry lists it',
          querystring: Type.Object({ number: Type.String({ minLength: 1, maxLength: 32, description: 'E.164' }) }),
          response: {
            200: Ok(Type.Object({ number: Type.String(), blocked: Type.Boolean(), match: Nullable(Entry) })),
          },
        },
      },
      async (req) => ok(await dnc.check(req.principal!.accountId, req.query.number)),
    );

    await app.register(async (scope) => {
      acceptCsvStream(scope);
      // The child scope keeps the TypeBox provider at run time; only its static type is the plain instance.
      (scope as unknown as App).post(
        '/dnc/import',
        {
          config: { access: WRITE },
          schema: {
            tags: TAGS,
            summary: 'Import a CSV file of numbers and prefixes into the do-not-call list (streamed)',
            description:
              `Body: \`text/csv\`, up to ${DNC_IMPORT_MAX.toLocaleString('en-US')} entries. First column a number (E.164, \`+\`, ` +
              '`00` or bare digits; spaces and dashes ignored) or a prefix ending with `*`; optional second column a note; a ' +
              'header row is skipped. The file is read and stored as it arrives; refused rows are reported with their line.',
            consumes: ['text/csv'],
            response: { 200: Ok(ImportResult) },
          },
        },
        async (req) => {
          if (!isStream(req.body)) throw badRequest('Send the file as text/csv');
          return ok(await dnc.import(req.principal!.accountId, req.body));
        },
      );
    });
  };
}
