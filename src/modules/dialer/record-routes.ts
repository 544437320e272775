import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { CursorPage, DateTime, Nullable, Ok, Uuid, ok } from '../../http/envelope.js';
import { cursorPage } from '../../http/pagination.js';
import type { Clock } from '../../platform/clock.js';
import type { CallerIdStates } from './caller-id-states.js';
import type { DialerCalendar } from './calendar.js';
import type { ContactMembers } from './contact-members.js';
import type { LibraryService } from './library.js';
import { CliSet, Contact, ContactList, Template } from './library-routes.js';
import { digitsOrFail } from './numbers.js';
import { startOfLocalDay } from './window.js';

const TAGS = ['Dialer'];
// Saved records live campaigns use: only live credentials change them.
const WRITE = { auth: 'required', scope: 'dialer:write' } as const;
const FULL = { auth: 'required', fullAccessOnly: true } as const;
const Id = Type.Object({ id: Uuid() });
const E164 = Type.String({ maxLength: 32, description: 'E.164' });
const Day = Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: 'YYYY-MM-DD' });
const Holiday = Type.Object({ id: Uuid(), date: Type.String(), name: Type.String(), createdAt: DateTime() });
const Rate = { calls: Type.Integer(), answered: Type.Integer(), answerRate: Type.Number() };

export interface RecordRouteDeps {
  library: LibraryService;
  members: ContactMembers;
  calendar: DialerCalendar;
  callerIds: CallerIdStates;
  clock: Clock;
}

/**
 * The saved records' operations beyond the shown ones: one template and its SMS preview, contact
 * list members, one caller-ID set and its change, caller IDs in rotation (one alone, paused or
 * active) and the account's holidays. Designed in docs/dialer.md.
 */
export function recordRoutes(d: RecordRouteDeps) {
  const { library } = d;
  return (app: App) => {
    app.get(
      '/dialer/templates/:id',
      {
        config: { access: WRITE },
        schema: { tags: TAGS, summary: 'One SMS template', params: Id, response: { 200: Ok(Template) } },
      },
      async (req) => ok(await library.template(req.principal!.accountId, req.params.id)),
    );
    app.get(
      '/dialer/templates/:id/preview',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'How a template goes out as an SMS: encoding, characters, segments and its placeholders',
          description:
            'The body is sent as written (placeholders are not merged per recipient), so the figures are those of the ' +
            'message the SMS path bills.',
          params: Id,
          response: {
            200: Ok(
              Type.Object({
                id: Uuid(),
                body: Type.String(),
                characters: Type.Integer(),
                encoding: Type.Union([Type.Literal('GSM-7'), Type.Literal('UCS-2')]),
                segments: Type.Integer(),
                placeholders: Type.Array(Type.String()),
              }),
            ),
          },
        },
      },
      async (req) => ok(await library.previewTemplate(req.principal!.accountId, req.params.id)),
    );

    app.patch(
      '/dialer/contact-lists/:id',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Rename a contact list',
          params: Id,
          body: Type.Object({ name: Type.String({ minLength: 1, maxLength: 255 }) }, { additionalProperties: false }),
          response: { 200: Ok(ContactList) },
        },
      },
      async (req) => ok(await library.renameContactList(req.principal!.accountId, req.params.id, req.body.name)),
    );
    app.get(
      '/dialer/contact-lists/:id/members',
      {
        config: { access: FULL },
        schema: {
          tags: TAGS,
          summary: "A contact list's members in list order, paged",
          params: Id,
          querystring: Type.Object({
            search: Type.Optional(Type.String({ maxLength: 32, description: 'leading digits' })),
            cursor: Type.Optional(
              Type.String({ pattern: '^[0-9]{1,9}$', description: 'nextCursor of the previous page' }),
            ),
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 25 })),
          }),
          response: {
            200: CursorPage(Type.Intersect([Type.Object({ id: Type.String() }), Contact]), {
              nextCursor: Nullable(Type.String({ description: 'position of the last member' })),
            }),
          },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 25;
        return cursorPage(
          await d.members.list(req.principal!.accountId, req.params.id, { ...req.query, limit }),
          limit,
        );
      },
    );
    app.post(
      '/dialer/contact-lists/:id/members',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Add members to a contact list',
          description:
            '`numbers` and/or `contacts` (name and fields), up to 10,000 each; a number already listed is a duplicate and ' +
            'keeps its entry. A list holds at most 50,000 contacts. Campaigns that copied the list earlier are unchanged.',
          params: Id,
          body: Type.Object(
            {
              numbers: Type.Optional(Type.Array(E164, { maxItems: 10000 })),
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
                  { maxItems: 10000 },
                ),
              ),
            },
            { additionalProperties: false },
          ),
          response: {
            200: Ok(Type.Object({ added: Type.Integer(), duplicates: Type.Integer(), list: ContactList })),
          },
        },
      },
      async (req) => ok(await d.members.add(req.principal!.accountId, req.params.id, req.body)),
    );
    app.delete(
      '/dialer/contact-lists/:id/members/:number',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Remove one number from a contact list',
          params: Type.Object({ id: Uuid(), number: E164 }),
          response: { 200: Ok(Type.Object({ number: Type.String(), count: Type.Integer() })) },
        },
      },
      async (req) => ok(await d.members.remove(req.principal!.accountId, req.params.id, req.params.number)),
    );

    app.get(
      '/dialer/cli-sets/:id',
      {
        config: { access: FULL },
        schema: { tags: TAGS, summary: 'One caller-ID set', params: Id, response: { 200: Ok(CliSet) } },
      },
      async (req) => ok(await library.cliSet(req.principal!.accountId, req.params.id)),
    );
    app.patch(
      '/dialer/cli-sets/:id',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Rename a caller-ID set or replace its caller IDs',
          description: 'Campaigns presenting the set use the new caller IDs from their next call.',
          params: Id,
          body: Type.Object(
            {
              name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
              clis: Type.Optional(Type.Array(E164, { minItems: 1, maxItems: 10000 })),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(CliSet) },
        },
      },
      async (req) => ok(await library.updateCliSet(req.principal!.accountId, req.params.id, req.body)),
    );

    app.get(
      '/dialer/caller-ids/:cli',
      {
        config: { access: FULL },
        schema: {
          tags: TAGS,
          summary: 'One caller ID in rotation: status, answer rate per day and per campaign, the sets holding it',
          description:
            "`daily` dates and `callsToday` are in `tz` (an IANA zone; default the account's profile time zone, else " +
            'UTC), answered as `tz`.',
          params: Type.Object({ cli: E164 }),
          querystring: Type.Object({
            from: Type.Optional(DateTime()),
            to: Type.Optional(DateTime()),
            tz: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'IANA time zone of the days' })),
          }),
          response: {
            200: Ok(
              Type.Object({
                cli: Type.String(),
                status: Type.Union([Type.Literal('active'), Type.Literal('paused')]),
                note: Nullable(Type.String()),
                statusChangedAt: Nullable(DateTime()),
                ...Rate,
                tz: Type.String(),
                callsToday: Type.Integer(),
                talkSeconds: Type.Integer(),
                lastUsedAt: Nullable(DateTime()),
                daily: Type.Array(Type.Object({ date: Type.String(), ...Rate })),
                byCampaign: Type.Array(Type.Object({ campaignId: Uuid(), name: Type.String(), ...Rate })),
                sets: Type.Array(Type.Object({ id: Uuid(), name: Type.String() })),
              }),
            ),
          },
        },
      },
      async (req) => {
        const now = d.clock.now();
        const to = req.query.to ? new Date(req.query.to) : new Date(now.getTime() + 1000);
        const from = req.query.from ? new Date(req.query.from) : new Date(to.getTime() - 30 * 86400_000);
        const [cli] = digitsOrFail([req.params.cli], 'cli');
        const tz = await d.library.statsZone(req.principal!.accountId, { tz: req.query.tz });
        const today = startOfLocalDay(now, tz);
        return ok(await d.callerIds.detail(req.principal!.accountId, cli!, { from, to, today, tz }));
      },
    );
    app.put(
      '/dialer/caller-ids/:cli/status',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Pause a caller ID in every rotation of the account, or make it active again',
          description:
            'A paused caller ID is presented by no campaign (and no test call) until it is active again; a campaign whose ' +
            "caller IDs are all paused pauses with `no_caller_ids`. The caller ID must be in one of the account's sets " +
            'or have been presented by one of its campaigns.',
          params: Type.Object({ cli: E164 }),
          body: Type.Object(
            {
              status: Type.Union([Type.Literal('active'), Type.Literal('paused')]),
              note: Type.Optional(Nullable(Type.String({ maxLength: 500 }))),
            },
            { additionalProperties: false },
          ),
          response: {
            200: Ok(
              Type.Object({
                cli: Type.String(),
                status: Type.String(),
                note: Nullable(Type.String()),
                statusChangedAt: Nullable(DateTime()),
              }),
            ),
          },
        },
      },
      async (req) => {
        const [cli] = digitsOrFail([req.params.cli], 'cli');
        return ok(await d.callerIds.setStatus(req.principal!.accountId, cli!, req.body));
      },
    );

    app.get(
      '/dialer/holidays',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: "The account's holidays: dates on which no campaign starts a call or sends a message",
          querystring: Type.Object({ from: Type.Optional(Day), to: Type.Optional(Day) }),
          response: { 200: Ok(Type.Array(Holiday)) },
        },
      },
      async (req) => ok(await d.calendar.list(req.principal!.accountId, req.query)),
    );
    app.post(
      '/dialer/holidays',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Add a holiday',
          description:
            'The date is local to each campaign (its `windowTz`, UTC without one), as its calling window is: no call ' +
            'starts on it, calls in progress finish. A date already listed is 409; an account keeps at most 1,000.',
          body: Type.Object(
            { date: Day, name: Type.String({ minLength: 1, maxLength: 100 }) },
            { additionalProperties: false },
          ),
          response: { 201: Ok(Holiday) },
        },
      },
      async (req, reply) => reply.code(201).send(ok(await d.calendar.add(req.principal!.accountId, req.body))),
    );
    app.delete(
      '/dialer/holidays/:id',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Remove a holiday',
          params: Id,
          response: { 200: Ok(Type.Object({ id: Uuid() })) },
        },
      },
      async (req) => ok(await d.calendar.remove(req.principal!.accountId, req.params.id)),
    );
  };
}
