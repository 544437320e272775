import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { ChatHistory } from '../ai-agents/history.js';
import { acceptCsvStream, isStream } from '../../http/csv-body.js';
import { CursorPage, DateTime, Ok, Uuid, ok } from '../../http/envelope.js';
import { badRequest } from '../../http/errors.js';
import type { Clock } from '../../platform/clock.js';
import { cursorPage, CursorQuery } from '../../http/pagination.js';
import type { DialerAnalytics } from './analytics.js';
import type { DialerAssistant } from './assistant.js';
import type { CampaignsService } from './campaigns.js';
import type { LibraryService } from './library.js';
import type { DialerRepo } from './repo.js';
import type { Results } from './results.js';
import { campaignAccess } from './access.js';
import { Attempt, Campaign, CampaignStatus, CampaignCreate, CampaignUpdate, ImportJob } from './schemas.js';

const TAGS = ['Dialer'];
const WRITE = { auth: 'required', scope: 'dialer:write' } as const;
const FULL = { auth: 'required', fullAccessOnly: true } as const;
const Id = Type.Object({ id: Uuid() });
const Any = Type.Object({}, { additionalProperties: true });

export interface DialerRouteDeps {
  campaigns: CampaignsService;
  library: LibraryService;
  analytics: DialerAnalytics;
  repo: DialerRepo;
  ask: DialerAssistant;
  results: Results;
  clock: Clock;
}

/**
 * Campaign routes. A test key's campaign is simulated (spec "Campaign": environment `test`); a
 * test key changes only test campaigns, never a live one.
 */
export function campaignRoutes(d: DialerRouteDeps) {
  const { campaigns } = d;
  const ownCampaign = campaignAccess(campaigns);

  return async (app: App) => {
    app.get(
      '/dialer/campaigns',
      {
        config: { access: FULL },
        schema: {
          tags: TAGS,
          summary: 'List campaigns, newest first',
          querystring: Type.Object({
            status: Type.Optional(CampaignStatus),
            search: Type.Optional(Type.String({ maxLength: 255, description: 'part of the name' })),
            ...CursorQuery(),
          }),
          response: { 200: CursorPage(Campaign) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 25;
        return cursorPage(await campaigns.list(req.principal!.accountId, { ...req.query, limit }), limit);
      },
    );

    app.post(
      '/dialer/campaigns',
      {
        config: { access: { ...WRITE, testKeys: 'simulate' } },
        schema: {
          tags: TAGS,
          summary: 'Create a campaign (a draft)',
          description:
            'Add numbers with `POST /dialer/campaigns/{id}/numbers` or `/contacts/import`, then start it with ' +
            '`POST /dialer/campaigns/{id}/control`. A voice campaign plays `actions` (as `POST /comms/calls`) to whoever ' +
            'answers and presents the caller IDs of `cliSetId`; an SMS campaign sends `messageBody` from `senderId`. ' +
            'Created with a test key, it is simulated: routed and priced against test credit, never dialled.',
          body: CampaignCreate,
          response: { 201: Ok(Campaign) },
        },
      },
      async (req, reply) => {
        const p = req.principal!;
        return reply.code(201).send(ok(await campaigns.create(p.accountId, p.parentId, p.mode, req.body)));
      },
    );

    app.get(
      '/dialer/campaigns/:id',
      {
        config: { access: WRITE },
        schema: { tags: TAGS, summary: 'One campaign with its counters', params: Id, response: { 200: Ok(Campaign) } },
      },
      async (req) => ok(await campaigns.get(req.principal!.accountId, req.params.id)),
    );

    app.put(
      '/dialer/campaigns/:id',
      {
        config: { access: { ...WRITE, testKeys: 'simulate' } },
        schema: {
          tags: TAGS,
          summary: 'Change a campaign (fields given are set; a running campaign applies them to its next calls)',
          params: Id,
          body: CampaignUpdate,
          response: { 200: Ok(Campaign) },
        },
      },
      async (req) => {
        await ownCampaign(req.principal!, req.params.id, true);
        return ok(await campaigns.update(req.principal!.accountId, req.params.id, req.body));
      },
    );

    app.delete(
      '/dialer/campaigns/:id',
      {
        config: { access: { ...WRITE, testKeys: 'simulate' } },
        schema: {
          tags: TAGS,
          summary: 'Delete a campaign that is not running, with its numbers and results',
          params: Id,
          response: { 200: Ok(Type.Object({ id: Uuid() })) },
        },
      },
      async (req) => {
        await ownCampaign(req.principal!, req.params.id, true);
        return ok(await campaigns.remove(req.principal!.accountId, req.params.id));
      },
    );

    app.post(
      '/dialer/campaigns/:id/control',
      {
        config: { access: { ...WRITE, testKeys: 'simulate' } },
        schema: {
          tags: TAGS,
          summary: 'Start, pause or stop a campaign',
          description:
            '`start`: draft or paused → running (or `ready` until `scheduleAt`); `pause`: running or ready → paused, calls in ' +
            'progress finish; `stop`: → completed, numbers not yet called are left. The campaign also pauses by itself when ' +
            'the next call could take its spend past `maxSpend` (`statusReason` `max_spend_reached`) or the balance runs out, ' +
            'and completes when every number is answered, failed or out of attempts. Events: `campaign.started`, `campaign.completed`.',
          params: Id,
          body: Type.Object(
            { action: Type.Union([Type.Literal('start'), Type.Literal('pause'), Type.Literal('stop')]) },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Campaign) },
        },
      },
      async (req) => {
        await ownCampaign(req.principal!, req.params.id, true);
        return ok(await campaigns.control(req.principal!.accountId, req.params.id, req.body.action));
      },
    );

    app.post(
      '/dialer/campaigns/:id/numbers',
      {
        config: { access: { ...WRITE, testKeys: 'simulate' } },
        schema: {
          tags: TAGS,
          summary: 'Add numbers to a campaign, directly or from a contact list',
          description:
            'Numbers in E.164 (`+`, `00` or bare digits; spaces and dashes ignored). A number already in the campaign is a ' +
            'duplicate. Refused numbers are listed with their index; the others are added. Up to 10,000 numbers per request; ' +
            'a contact list or `/contacts/import` for more.',
          params: Id,
          body: Type.Object(
            {
              numbers: Type.Optional(Type.Array(Type.String({ maxLength: 32 }), { maxItems: 10000 })),
              contactListId: Type.Optional(Uuid()),
            },
            { additionalProperties: false },
          ),
          response: {
            200: Ok(
              Type.Object({
                added: Type.Integer(),
                duplicates: Type.Integer(),
                invalid: Type.Array(
                  Type.Object({ index: Type.Integer(), value: Type.String(), message: Type.String() }),
                ),
                totalNumbers: Type.Integer(),
              }),
            ),
          },
        },
      },
      async (req) => {
        const p = req.principal!;
        await ownCampaign(p, req.params.id, true);
        const contacts = req.body.contactListId
          ? (await d.library.contacts(p.accountId, req.body.contactListId)).contacts.map((x) => ({
              number: x.number,
              name: x.name,
              fields: Object.keys(x.fields).length ? x.fields : null,
            }))
          : [];
        return ok(await campaigns.addNumbers(p.accountId, req.params.id, req.body, contacts));
      },
    );

    await app.register(async (scope) => {
      acceptCsvStream(scope);
      // The child scope keeps the TypeBox provider at run time; only its static type is the plain instance.
      (scope as unknown as App).post(
        '/dialer/campaigns/:id/contacts/import',
        {
          config: { access: { ...WRITE, testKeys: 'simulate' } },
          schema: {
            tags: TAGS,
            summary: 'Import contacts into a campaign from a CSV file (streamed; up to 1,000,000 rows)',
            description:
              'Body: `text/csv`. A header row naming a `number` (or `phone`, `phone_number`, `msisdn`) column, optionally ' +
              "`name`; other columns become the contact's fields. Without a header the first column is the number. Rows are " +
              'stored in batches of 5,000 as the file arrives; `GET /dialer/campaigns/{id}/imports` shows the progress ' +
              'meanwhile. The response is the finished import: counts and the first 100 refused rows with their line number.',
            consumes: ['text/csv'],
            params: Id,
            response: { 200: Ok(ImportJob) },
          },
        },
        async (req) => {
          if (!isStream(req.body)) throw badRequest('Send the file as text/csv');
          await ownCampaign(req.principal!, req.params.id, true);
          return ok(await campaigns.importContacts(req.principal!.accountId, req.params.id, req.body));
        },
      );
    });

    app.get(
      '/dialer/campaigns/:id/imports',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Contact imports of a campaign, newest first (progress while running)',
          params: Id,
          response: { 200: Ok(Type.Array(ImportJob)) },
        },
      },
      async (req) => ok(await campaigns.imports(req.principal!.accountId, req.params.id)),
    );

    app.get(
      '/dialer/campaigns/:id/results',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Every attempt of a campaign, newest first',
          params: Id,
          querystring: Type.Object({
            status: Type.Optional(Type.String({ maxLength: 20 })),
            ...CursorQuery(),
          }),
          response: { 200: CursorPage(Attempt) },
        },
      },
      async (req) => {
        await campaigns.mustGet(req.principal!.accountId, req.params.id);
        const limit = req.query.limit ?? 25;
        return cursorPage(await d.results.page(req.params.id, { ...req.query, limit: limit + 1 }), limit);
      },
    );

    app.get(
      '/dialer/campaigns/:id/analytics',
      {
        config: { access: FULL },
        schema: {
          tags: TAGS,
          summary: 'Figures of one campaign',
          description:
            'Rates (connectRate, asr) are fractions 0–1 and figures display numbers; money fields are 6-place strings. ' +
            '`connectRate` = numbers answered / numbers dialled; `asr` = answered attempts / attempts; `acd` in seconds. ' +
            "Hours, days of week and days are in the campaign's `windowTz` (UTC without one). `dispositions` counts the " +
            "numbers' outcomes; `dispositionCodes[] { code, label, count, answered, lastAt }` the account's own " +
            'dispositions of its calls (PUT …/disposition or the assistant), most used first.',
          params: Id,
          response: { 200: Ok(Any) },
        },
      },
      async (req) => {
        const c = await campaigns.mustGet(req.principal!.accountId, req.params.id);
        return ok(await d.analytics.campaign(c));
      },
    );

    app.post(
      '/dialer/agent/ask',
      {
        config: { access: WRITE, rateLimit: { points: 20, seconds: 60 } },
        schema: {
          tags: TAGS,
          summary:
            "Ask the dialer assistant: answers from the account's data and performs the dialer actions asked for",
          description:
            'The `[ai]` chat model with tools over the dialer: list campaigns, read one, its analytics and the overview, ' +
            "start/pause/stop a campaign, set a call's disposition, check and add do-not-call numbers. Each tool call is reported in `actions` with " +
            '`ok` and `write`; the same rules apply as to the operations themselves. Pass the returned `history` back with ' +
            'the next message. Without `[ai] chat_url`: 400 naming the setting.',
          body: Type.Object(
            {
              message: Type.String({ minLength: 1, maxLength: 4000 }),
              history: Type.Optional(ChatHistory(8000)),
            },
            { additionalProperties: false },
          ),
          response: {
            200: Ok(
              Type.Object({
                reply: Type.String(),
                actions: Type.Array(Type.Object({ tool: Type.String(), ok: Type.Boolean(), write: Type.Boolean() })),
                suggestions: Type.Array(Type.String()),
                history: Type.Array(Type.Object({ role: Type.String(), content: Type.String() })),
              }),
            ),
          },
        },
      },
      async (req) => ok(await d.ask(req.principal!.accountId, req.body)),
    );

    app.get(
      '/dialer/analytics/overview',
      {
        config: { access: FULL },
        schema: {
          tags: TAGS,
          summary: 'Figures of every campaign of the account over a window (default the last 30 days)',
          querystring: Type.Object({ from: Type.Optional(DateTime()), to: Type.Optional(DateTime()) }),
          response: { 200: Ok(Any) },
        },
      },
      async (req) => {
        const to = req.query.to ? new Date(req.query.to) : d.clock.now();
        const from = req.query.from ? new Date(req.query.from) : new Date(to.getTime() - 30 * 86400_000);
        return ok(await d.analytics.overview(req.principal!.accountId, from, to));
      },
    );
  };
}
