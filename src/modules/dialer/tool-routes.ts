import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { CursorPage, DateTime, Money, Nullable, Ok, Uuid, ok } from '../../http/envelope.js';
import { cursorPage } from '../../http/pagination.js';
import type { Clock } from '../../platform/clock.js';
import { campaignAccess } from './access.js';
import type { CampaignsService } from './campaigns.js';
import type { createCampaignCloner } from './clone.js';
import { ESTIMATE_SAMPLE, type Estimator } from './estimate.js';
import { digitsOrFail, type CampaignNumbers } from './numbers.js';
import type { Results } from './results.js';
import { Attempt, Campaign, ImportJob } from './schemas.js';
import type { createTestCaller } from './test-call.js';

const TAGS = ['Dialer'];
const WRITE = { auth: 'required', scope: 'dialer:write' } as const;
// A test key works on its own (test) campaigns; a live one is refused by campaignAccess.
const WRITE_TEST = { ...WRITE, testKeys: 'simulate' } as const;
const Id = Type.Object({ id: Uuid() });
const E164 = Type.String({ maxLength: 32, description: 'E.164 (`+`, `00` or bare digits)' });
const NumberList = Type.Array(E164, { minItems: 1, maxItems: 10000 });
const State = Type.Union([
  Type.Literal('pending'),
  Type.Literal('dialing'),
  Type.Literal('answered'),
  Type.Literal('failed'),
  Type.Literal('blocked'),
]);
const Resettable = Type.Union([Type.Literal('no_answer'), Type.Literal('busy'), Type.Literal('failed')]);
const NumberCursor = {
  cursor: Type.Optional(Type.String({ pattern: '^[0-9]{1,19}$', description: 'nextCursor of the previous page' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 25 })),
};

// Numbers page by their position in the campaign, not by a UUID.
const PositionCursor = { nextCursor: Nullable(Type.String({ description: 'id of the last number of this page' })) };

export const CampaignNumber = Type.Object({
  id: Type.String({ description: 'position of the number in the campaign (the cursor)' }),
  number: Type.String(),
  name: Nullable(Type.String()),
  fields: Type.Record(Type.String(), Type.String()),
  state: Type.String({ description: 'pending, dialing, answered, failed, blocked (on the do-not-call list)' }),
  attempts: Type.Integer(),
  nextAttemptAt: Nullable(DateTime()),
  lastStatus: Nullable(Type.String()),
  lastCause: Nullable(Type.String()),
  lastCallId: Nullable(Uuid()),
  updatedAt: Nullable(DateTime()),
});

export interface ToolRouteDeps {
  campaigns: CampaignsService;
  numbers: CampaignNumbers;
  results: Results;
  clock: Clock;
  clone: ReturnType<typeof createCampaignCloner>;
  estimate: Estimator;
  testCall: ReturnType<typeof createTestCaller>;
}

/**
 * The campaign operations the spec names but does not show: clone, estimate, test call, the
 * numbers one by one (list, remove, reset, history, duplicate check), one import, the results
 * export and per-call dispositions. Designed in docs/dialer.md.
 */
export function campaignToolRoutes(d: ToolRouteDeps) {
  const own = campaignAccess(d.campaigns);
  return (app: App) => {
    app.post(
      '/dialer/campaigns/:id/clone',
      {
        config: { access: WRITE_TEST },
        schema: {
          tags: TAGS,
          summary: "Copy a campaign's settings into a new draft, optionally with its numbers",
          description:
            '`numbers`: `none` (default), `all`, or `not_answered` (pending, failed and in-progress numbers, not those ' +
            "blocked by the do-not-call list), each fresh with no attempt. The copy is in the source's environment; the " +
            'create rules apply again (the route must still be usable).',
          params: Id,
          body: Type.Object(
            {
              name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
              numbers: Type.Optional(
                Type.Union([Type.Literal('none'), Type.Literal('all'), Type.Literal('not_answered')], {
                  default: 'none',
                }),
              ),
            },
            { additionalProperties: false },
          ),
          response: { 201: Ok(Campaign) },
        },
      },
      async (req, reply) => {
        const c = await own(req.principal!, req.params.id, true);
        return reply.code(201).send(ok(await d.clone(c, req.body)));
      },
    );

    app.get(
      '/dialer/campaigns/:id/estimate',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary:
            'What the rest of a campaign can cost and how long its calls take, before it starts or while it runs',
          description:
            'Cost: the route price for `maxCallDuration` in billing blocks with any reseller markup, plus ' +
            '`platformFeePerCall`, per attempt left (`firstRoundMax`: one attempt per pending number; `allAttemptsMax`: ' +
            `every attempt left). Beyond ${ESTIMATE_SAMPLE} pending numbers a uniform sample stands for the rest (\`sampled\`). ` +
            "Duration: the first round at the campaign's concurrency (capped by the account's concurrent-call limit) and " +
            '`callInterval`, with the average call length observed so far (else `maxCallDuration`), counted only inside ' +
            "the calling window and outside the account's holidays. Writes nothing.",
          params: Id,
          response: {
            200: Ok(
              Type.Object({
                campaignId: Uuid(),
                pendingNumbers: Type.Integer(),
                dialing: Type.Integer(),
                attemptsLeft: Type.Integer(),
                sampled: Type.Boolean(),
                sampleSize: Type.Integer(),
                cost: Type.Object({
                  perCallMax: Money(),
                  firstRoundMax: Money(),
                  allAttemptsMax: Money(),
                  uncoveredNumbers: Type.Integer({ description: 'numbers no rate of the route covers' }),
                }),
                spent: Money(),
                maxSpendLeft: Nullable(Money()),
                available: Money('balance the account can spend now (test credit for a test campaign)'),
                duration: Type.Object({
                  basis: Type.String({ description: 'observed, max_call_duration or assumed (SMS: 1 s)' }),
                  averageCallSeconds: Type.Number(),
                  concurrency: Type.Integer(),
                  callsPerMinute: Type.Number(),
                  dialingSeconds: Type.Integer({ description: 'open calling time the first round needs' }),
                  startsAt: DateTime(),
                  finishesAt: Nullable(DateTime()),
                }),
              }),
            ),
          },
        },
      },
      async (req) => ok(await d.estimate(await own(req.principal!, req.params.id, false))),
    );

    app.post(
      '/dialer/campaigns/:id/test-call',
      {
        config: { access: WRITE_TEST, rateLimit: { points: 10, seconds: 60 } },
        schema: {
          tags: TAGS,
          summary: 'Place one call (or send one message) of the campaign to a number of your choice',
          description:
            "The campaign's route, caller ID (`cli` from its set, else the first active one), actions or agent and " +
            '`maxCallDuration`; billed as an ordinary API call or message, never counted in the campaign (no attempt, ' +
            'spend or platform fee). A number on the do-not-call list is refused. Follow the call with ' +
            "`GET /comms/calls/{callId}`. A test campaign's call is simulated. 10/min.",
          params: Id,
          body: Type.Object({ number: E164, cli: Type.Optional(E164) }, { additionalProperties: false }),
          response: {
            202: Ok(
              Type.Object({
                kind: Type.String(),
                to: Type.String(),
                from: Type.String(),
                callId: Nullable(Uuid()),
                messageId: Nullable(Type.String()),
                status: Type.String(),
              }),
            ),
          },
        },
      },
      async (req, reply) => {
        const c = await own(req.principal!, req.params.id, true);
        return reply.code(202).send(ok(await d.testCall(c, req.body)));
      },
    );

    app.get(
      '/dialer/campaigns/:id/numbers',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: "A campaign's numbers in the order they were added, with their state and attempts",
          params: Id,
          querystring: Type.Object({
            state: Type.Optional(State),
            search: Type.Optional(Type.String({ maxLength: 32, description: 'leading digits' })),
            ...NumberCursor,
          }),
          response: { 200: CursorPage(CampaignNumber, PositionCursor) },
        },
      },
      async (req) => {
        await own(req.principal!, req.params.id, false);
        const limit = req.query.limit ?? 25;
        return cursorPage(await d.numbers.list(req.params.id, { ...req.query, limit }), limit);
      },
    );

    app.post(
      '/dialer/campaigns/:id/numbers/remove',
      {
        config: { access: WRITE_TEST },
        schema: {
          tags: TAGS,
          summary: 'Remove numbers not yet dialled from a campaign',
          description:
            'A number with an attempt, or being dialled, stays (its results refer to it) and is answered in `kept` ' +
            '(first 100) with its state; `totalNumbers` moves by the numbers removed. Up to 10,000 numbers.',
          params: Id,
          body: Type.Object({ numbers: NumberList }, { additionalProperties: false }),
          response: {
            200: Ok(
              Type.Object({
                removed: Type.Integer(),
                notInCampaign: Type.Integer(),
                kept: Type.Array(
                  Type.Object({ number: Type.String(), state: Type.String(), attempts: Type.Integer() }),
                ),
                totalNumbers: Type.Integer(),
              }),
            ),
          },
        },
      },
      async (req) => ok(await d.numbers.remove(await own(req.principal!, req.params.id, true), req.body.numbers)),
    );

    app.post(
      '/dialer/campaigns/:id/numbers/reset',
      {
        config: { access: WRITE_TEST },
        schema: {
          tags: TAGS,
          summary: 'Give failed numbers a fresh round of attempts',
          description:
            'Numbers that ended failed with a last outcome in `statuses` (default `no_answer`, `busy`, `failed`), or only ' +
            'those of `numbers`, become pending, due now, with `maxAttempts` attempts again; `numbersFailed` and ' +
            '`numbersDialed` move back by them. Answered and do-not-call numbers are never reset. A completed campaign ' +
            'is 409: clone it with `numbers: not_answered`.',
          params: Id,
          body: Type.Object(
            {
              statuses: Type.Optional(Type.Array(Resettable, { minItems: 1, maxItems: 3 })),
              numbers: Type.Optional(NumberList),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Type.Object({ reset: Type.Integer(), pending: Type.Integer() })) },
        },
      },
      async (req) => ok(await d.numbers.reset(await own(req.principal!, req.params.id, true), req.body)),
    );

    app.get(
      '/dialer/campaigns/:id/numbers/:number/attempts',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'One number of a campaign with every attempt made to it, first attempt first',
          params: Type.Object({ id: Uuid(), number: E164 }),
          response: {
            200: Ok(Type.Intersect([CampaignNumber, Type.Object({ history: Type.Array(Attempt) })])),
          },
        },
      },
      async (req) => {
        await own(req.principal!, req.params.id, false);
        const [digits] = digitsOrFail([req.params.number], 'number');
        const n = await d.numbers.one(req.params.id, digits!);
        return ok({ ...n, history: await d.results.history(req.params.id, digits!) });
      },
    );

    app.post(
      '/dialer/campaigns/:id/duplicate-check',
      {
        // A POST that writes nothing: any key may ask.
        config: { access: { ...WRITE, testKeys: 'allow' } },
        schema: {
          tags: TAGS,
          summary: 'Check numbers before adding them: already in the campaign, repeated, do-not-call, called recently',
          description:
            '`recentlyCalled`: numbers another campaign of the account attempted within `withinDays` (default 30; 0 ' +
            'skips the check), with the latest attempt. `unique`: valid distinct numbers that would be added and dialled. ' +
            'Writes nothing. Up to 10,000 numbers.',
          params: Id,
          body: Type.Object(
            {
              numbers: NumberList,
              withinDays: Type.Optional(Type.Integer({ minimum: 0, maximum: 365, default: 30 })),
            },
            { additionalProperties: false },
          ),
          response: {
            200: Ok(
              Type.Object({
                checked: Type.Integer(),
                unique: Type.Integer(),
                inCampaign: Type.Array(Type.String()),
                repeated: Type.Array(Type.String()),
                dnc: Type.Array(Type.String()),
                recentlyCalled: Type.Array(
                  Type.Object({
                    number: Type.String(),
                    campaignId: Uuid(),
                    lastCalledAt: DateTime(),
                    lastStatus: Type.String(),
                  }),
                ),
                invalid: Type.Array(
                  Type.Object({ index: Type.Integer(), value: Type.String(), message: Type.String() }),
                ),
              }),
            ),
          },
        },
      },
      async (req) => {
        const c = await own(req.principal!, req.params.id, false);
        return ok(await d.numbers.duplicateCheck(c, req.body.numbers, req.body.withinDays ?? 30));
      },
    );

    app.get(
      '/dialer/campaigns/:id/imports/:importId',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'One contact import of a campaign (progress while running)',
          params: Type.Object({ id: Uuid(), importId: Uuid() }),
          response: { 200: Ok(ImportJob) },
        },
      },
      async (req) => ok(await d.campaigns.importJob(req.principal!.accountId, req.params.id, req.params.importId)),
    );

    app.get(
      '/dialer/campaigns/:id/results/export',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Every attempt of a campaign as CSV, oldest first (streamed)',
          description:
            'Columns: attemptId, number, attempt, callId, cli, status, sipCode, cause, durationSeconds, cost, fee, ' +
            'disposition, dispositionNote, startedAt, endedAt. Money has 6 places; text that a spreadsheet would take ' +
            'for a formula is escaped.',
          produces: ['text/csv'],
          params: Id,
          querystring: Type.Object({ status: Type.Optional(Type.String({ maxLength: 20 })) }),
        },
      },
      async (req, reply) => {
        const c = await own(req.principal!, req.params.id, false);
        const csv = d.results.exportCsv(c.id, req.query);
        reply
          .type('text/csv; charset=utf-8')
          .header('content-disposition', `attachment; filename="campaign-${c.id}-results.csv"`);
        return reply.send(csv);
      },
    );

    app.put(
      '/dialer/campaigns/:id/results/:attemptId/disposition',
      {
        config: { access: WRITE_TEST },
        schema: {
          tags: TAGS,
          summary: "Record the account's outcome of one call (interested, callback, wrong_number…)",
          description:
            "`disposition` is the account's own code (lower-case letters, digits and `_`, up to 40); `null` clears it " +
            'and its note. Shown on the results and in the export.',
          params: Type.Object({ id: Uuid(), attemptId: Uuid() }),
          body: Type.Object(
            {
              disposition: Nullable(Type.String({ pattern: '^[a-z0-9_]{1,40}$' })),
              note: Type.Optional(Nullable(Type.String({ maxLength: 1000 }))),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Attempt) },
        },
      },
      async (req) => {
        await own(req.principal!, req.params.id, true);
        return ok(await d.results.setDisposition(req.params.id, req.params.attemptId, req.body, d.clock.now()));
      },
    );
  };
}
