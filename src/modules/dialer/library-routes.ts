import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { CursorPage, DateTime, Nullable, Ok, Uuid, ok } from '../../http/envelope.js';
import { cursorPage, CursorQuery } from '../../http/pagination.js';
import type { Clock } from '../../platform/clock.js';
import type { LibraryService } from './library.js';
import { startOfLocalDay } from './window.js';

const TAGS = ['Dialer'];
// Saved records live campaigns use: a test key reads them, only live credentials change them.
const WRITE = { auth: 'required', scope: 'dialer:write' } as const;
const FULL = { auth: 'required', fullAccessOnly: true } as const;
const Id = Type.Object({ id: Uuid() });
const E164 = Type.String({ maxLength: 32, description: 'E.164' });

export const Template = Type.Object({
  id: Uuid(),
  name: Type.String(),
  body: Type.String({
    description: '{{variable}} placeholders are stored as written; no per-recipient merge is applied',
  }),
  createdAt: DateTime(),
  updatedAt: DateTime(),
});
export const ContactList = Type.Object({
  id: Uuid(),
  userId: Uuid(),
  name: Type.String(),
  count: Type.Integer(),
  createdAt: DateTime(),
});
export const Contact = Type.Object({
  number: Type.String(),
  name: Nullable(Type.String()),
  fields: Type.Record(Type.String(), Type.String()),
});
export const CliSet = Type.Object({
  id: Uuid(),
  userId: Uuid(),
  name: Type.String(),
  clis: Type.String({ description: 'caller IDs, newline-separated' }),
  createdAt: DateTime(),
});

export function libraryRoutes(lib: LibraryService, clock: Clock) {
  return (app: App) => {
    app.get(
      '/dialer/templates',
      {
        config: { access: { auth: 'required', scope: 'dialer:write' } },
        schema: {
          tags: TAGS,
          summary: 'SMS templates, newest first',
          querystring: Type.Object({ ...CursorQuery() }),
          response: { 200: CursorPage(Template) },
        },
      },
      async (req) =>
        cursorPage(
          await lib.templates(req.principal!.accountId, { ...req.query, limit: req.query.limit ?? 25 }),
          req.query.limit ?? 25,
        ),
    );
    app.post(
      '/dialer/templates',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Save an SMS template',
          body: Type.Object(
            {
              name: Type.String({ minLength: 1, maxLength: 255 }),
              body: Type.String({ minLength: 1, maxLength: 1600 }),
            },
            { additionalProperties: false },
          ),
          response: { 201: Ok(Template) },
        },
      },
      async (req, reply) => reply.code(201).send(ok(await lib.createTemplate(req.principal!.accountId, req.body))),
    );
    app.patch(
      '/dialer/templates/:id',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Change an SMS template',
          params: Id,
          body: Type.Object(
            {
              name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
              body: Type.Optional(Type.String({ minLength: 1, maxLength: 1600 })),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Template) },
        },
      },
      async (req) => ok(await lib.updateTemplate(req.principal!.accountId, req.params.id, req.body)),
    );
    app.delete(
      '/dialer/templates/:id',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Delete an SMS template',
          params: Id,
          response: { 200: Ok(Type.Object({ id: Uuid(), message: Type.String() })) },
        },
      },
      async (req) => ok(await lib.deleteTemplate(req.principal!.accountId, req.params.id)),
    );

    app.get(
      '/dialer/contact-lists',
      {
        config: { access: FULL },
        schema: {
          tags: TAGS,
          summary: 'Contact lists, newest first',
          querystring: Type.Object({ ...CursorQuery() }),
          response: { 200: CursorPage(ContactList) },
        },
      },
      async (req) =>
        cursorPage(
          await lib.contactLists(req.principal!.accountId, { ...req.query, limit: req.query.limit ?? 25 }),
          req.query.limit ?? 25,
        ),
    );
    app.get(
      '/dialer/contact-lists/:id',
      {
        config: { access: FULL },
        schema: {
          tags: TAGS,
          summary: 'A contact list with its numbers and contacts',
          params: Id,
          response: {
            200: Ok(
              Type.Intersect([
                ContactList,
                Type.Object({ numbers: Type.Array(Type.String()), contacts: Type.Array(Contact) }),
              ]),
            ),
          },
        },
      },
      async (req) => {
        const { list, contacts } = await lib.contacts(req.principal!.accountId, req.params.id);
        return ok({
          id: list.id,
          userId: req.principal!.accountId,
          name: list.name,
          count: list.count,
          createdAt: list.createdAt.toISOString(),
          numbers: contacts.map((c) => c.number),
          contacts,
        });
      },
    );
    app.post(
      '/dialer/contact-lists',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Save a contact list',
          description:
            '`numbers` (E.164) and optionally `contacts` with a name and fields each; a number given twice is kept once ' +
            '(its contact entry wins). Add it to a campaign with `POST /dialer/campaigns/{id}/numbers` `{ contactListId }`.',
          body: Type.Object(
            {
              name: Type.String({ minLength: 1, maxLength: 255 }),
              numbers: Type.Array(E164, { maxItems: 50000 }),
              contacts: Type.Optional(
                Type.Array(
                  Type.Object(
                    {
                      number: E164,
                      name: Type.Optional(Type.String({ maxLength: 255 })),
                      fields: Type.Optional(
                        Type.Record(Type.String({ maxLength: 64 }), Type.String({ maxLength: 500 })),
                      ),
                    },
                    { additionalProperties: false },
                  ),
                  { maxItems: 50000 },
                ),
              ),
            },
            { additionalProperties: false },
          ),
          response: { 201: Ok(ContactList) },
        },
      },
      async (req, reply) => reply.code(201).send(ok(await lib.createContactList(req.principal!.accountId, req.body))),
    );
    app.delete(
      '/dialer/contact-lists/:id',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Delete a contact list',
          params: Id,
          response: { 200: Ok(Type.Object({ id: Uuid() })) },
        },
      },
      async (req) => ok(await lib.deleteContactList(req.principal!.accountId, req.params.id)),
    );

    app.get(
      '/dialer/cli-sets',
      {
        config: { access: FULL },
        schema: {
          tags: TAGS,
          summary: 'Simple caller-ID lists (rotation, caps and stats: `cliStrategy` and `/dialer/caller-ids`)',
          querystring: Type.Object({ ...CursorQuery() }),
          response: { 200: CursorPage(CliSet) },
        },
      },
      async (req) =>
        cursorPage(
          await lib.cliSets(req.principal!.accountId, { ...req.query, limit: req.query.limit ?? 25 }),
          req.query.limit ?? 25,
        ),
    );
    app.post(
      '/dialer/cli-sets',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Save a caller-ID set',
          body: Type.Object(
            {
              name: Type.String({ minLength: 1, maxLength: 255 }),
              clis: Type.Array(E164, { minItems: 1, maxItems: 10000 }),
            },
            { additionalProperties: false },
          ),
          response: { 201: Ok(CliSet) },
        },
      },
      async (req, reply) => reply.code(201).send(ok(await lib.createCliSet(req.principal!.accountId, req.body))),
    );
    app.delete(
      '/dialer/cli-sets/:id',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Delete a caller-ID set',
          params: Id,
          response: { 200: Ok(Type.Object({ id: Uuid() })) },
        },
      },
      async (req) => ok(await lib.deleteCliSet(req.principal!.accountId, req.params.id)),
    );

    app.get(
      '/dialer/caller-ids',
      {
        config: { access: FULL },
        schema: {
          tags: TAGS,
          summary: 'Caller IDs the campaigns presented, with calls, answers, answer rate and calls today (daily caps)',
          description:
            'One row per caller ID over the window (default the last 30 days), most used first; `callsToday` counts the ' +
            "calls since midnight in `tz` (an IANA zone; default the `campaignId` campaign's `windowTz`, else the " +
            "account's profile time zone, else UTC). A campaign's `cliStrategy.dailyCap` is measured from midnight in " +
            "that campaign's `windowTz`. Rotation is set per campaign with `cliStrategy` (`round_robin`, `least_used`, " +
            '`match_destination`, `random`).',
          querystring: Type.Object({
            campaignId: Type.Optional(Uuid()),
            tz: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'IANA time zone of "today"' })),
            from: Type.Optional(DateTime()),
            to: Type.Optional(DateTime()),
          }),
          response: {
            200: Ok(
              Type.Array(
                Type.Object({
                  cli: Type.String(),
                  calls: Type.Integer(),
                  answered: Type.Integer(),
                  answerRate: Type.Number(),
                  callsToday: Type.Integer(),
                  talkSeconds: Type.Integer(),
                  lastUsedAt: DateTime(),
                }),
              ),
            ),
          },
        },
      },
      async (req) => {
        const now = clock.now();
        const to = req.query.to ? new Date(req.query.to) : new Date(now.getTime() + 1000);
        const from = req.query.from ? new Date(req.query.from) : new Date(to.getTime() - 30 * 86400_000);
        const accountId = req.principal!.accountId;
        const tz = await lib.statsZone(accountId, req.query);
        const today = startOfLocalDay(now, tz);
        return ok(await lib.callerIdStats(accountId, { campaignId: req.query.campaignId, from, to, today }));
      },
    );
  };
}
