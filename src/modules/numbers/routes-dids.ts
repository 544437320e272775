import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { CursorPage, DateTime, Money, Nullable, Ok, Uuid, ok } from '../../http/envelope.js';
import { cursorPage, CursorQuery } from '../../http/pagination.js';
import { ruleError, validationError } from '../../http/errors.js';
import { createCsvWriter } from '../../http/csv.js';
import { presentUsage, type NumberManagement } from './manage.js';
import type { Orders } from './orders.js';
import type { StoreSwitch } from './routes-store.js';
import { BuyFields, Did, Disabled, READ, TAGS, WRITE } from './schemas.js';

const IdParams = Type.Object({ id: Uuid() });
const StatusQuery = Type.Optional(
  Type.Union([
    Type.Literal('pending'),
    Type.Literal('active'),
    Type.Literal('suspended'),
    Type.Literal('released'),
    Type.Literal('failed'),
  ]),
);

const BulkItem = Type.Object({
  index: Type.Integer(),
  skuId: Type.String(),
  groupId: Type.String(),
  status: Type.Union([Type.Literal('ok'), Type.Literal('failed'), Type.Literal('skipped')]),
  did: Nullable(Did),
  error: Nullable(Type.Object({ code: Type.String(), message: Type.String() })),
});

const Usage = Type.Object({
  calls: Type.Number({ description: 'calls that reached the number (delivered, forwarded or answered here)' }),
  answeredCalls: Type.Number(),
  callMinutes: Type.Number({ description: 'connected minutes (seconds / 60, two places)' }),
  callCost: Money('what those calls cost the renter, forward legs included'),
  sms: Type.Number(),
  smsReceived: Type.Number(),
  smsSent: Type.Number(),
  smsCost: Money(),
  voicemails: Type.Number(),
  voicemailMinutes: Type.Number(),
  cost: Money('callCost + smsCost'),
});

const USAGE_CSV = [
  'period',
  'number',
  'calls',
  'answered_calls',
  'call_minutes',
  'call_cost',
  'sms_received',
  'sms_sent',
  'sms_cost',
  'voicemails',
  'voicemail_minutes',
  'total_cost',
] as const;

const HistoryItem = Type.Object({
  id: Uuid(),
  kind: Type.String(),
  amount: Nullable(Money()),
  transactionId: Nullable(Uuid()),
  data: Type.Object({}, { additionalProperties: true }),
  createdAt: DateTime(),
});

/** Buying, reading and managing the caller's numbers. */
/** The dialer's caller-ID sets, where `POST /dids/to-cli-set` puts numbers. */
export interface CliSets {
  createCliSet(accountId: string, input: { name: string; clis: string[] }): Promise<CliSetView>;
  addToCliSet(accountId: string, id: string, input: { clis: string[] }): Promise<CliSetView>;
}
interface CliSetView {
  id: string;
  name: string;
  clis: string;
}

export function didRoutes(deps: { orders: Orders; manage: NumberManagement; store: StoreSwitch; cliSets: CliSets }) {
  const { orders, manage, store, cliSets } = deps;
  return (app: App) => {
    app.post(
      '/dids/buy',
      {
        config: { access: { ...WRITE, testKeys: 'simulate' }, idempotent: true },
        schema: {
          tags: TAGS,
          summary: 'Rent a number from a catalogue group: setup plus the first month are charged',
          description:
            'The DID starts `pending` (number null) and becomes `active` once provisioned. `subAccountId`: that ' +
            "sub-account's balance pays and the number is theirs. A group that needs verified identity answers 403 " +
            'KYC_REQUIRED; an empty group 409; a balance too small 400 "Insufficient balance". A test key\'s order is ' +
            'checked and priced against its test credit and answered with the number it would get and ' +
            '`simulated: true`: no number is taken, nothing is charged or kept.',
          body: Type.Object(BuyFields, { additionalProperties: false }),
          response: { 201: Ok(Did) },
        },
      },
      async (req, reply) => {
        const p = req.principal!;
        const did =
          p.mode === 'test' ? await orders.simulateBuy(p.accountId, req.body) : await orders.buy(p.accountId, req.body);
        return reply.code(201).send(ok(did));
      },
    );

    app.post(
      '/dids/bulk-buy',
      {
        config: { access: { ...WRITE, testKeys: 'simulate' }, idempotent: true },
        schema: {
          tags: TAGS,
          summary: 'Rent several numbers in order; the rest are skipped once the balance runs out',
          description: "A test key's order is simulated item by item against its test credit (`simulated: true`).",
          body: Type.Object(
            {
              items: Type.Array(Type.Object(BuyFields, { additionalProperties: false }), {
                minItems: 1,
                maxItems: 100,
              }),
            },
            { additionalProperties: false },
          ),
          response: {
            201: Ok(
              Type.Object({
                simulated: Type.Optional(Type.Literal(true)),
                requested: Type.Integer(),
                succeeded: Type.Integer(),
                failed: Type.Integer(),
                skipped: Type.Integer(),
                items: Type.Array(BulkItem),
              }),
            ),
          },
        },
      },
      async (req, reply) => {
        const p = req.principal!;
        const r = await orders.bulkBuy(p.accountId, req.body.items, { simulated: p.mode === 'test' });
        return reply.code(201).send(ok(r));
      },
    );

    app.get(
      '/dids/mine',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "The caller's numbers (and its sub-accounts'), newest first",
          querystring: Type.Object({
            ...CursorQuery(),
            status: StatusQuery,
            tag: Type.Optional(Type.String({ maxLength: 32, description: 'numbers carrying this tag' })),
          }),
          response: { 200: Type.Union([CursorPage(Did), Ok(Disabled)]) },
        },
      },
      async (req) => {
        if (!store.enabled) return ok({ disabled: true as const, comingSoon: true as const, message: store.message });
        const limit = req.query.limit ?? 25;
        return cursorPage(await manage.list(req.principal!.accountId, { ...req.query, limit } as never), limit);
      },
    );

    app.post(
      '/dids/to-cli-set',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Put chosen or all active numbers into a dialer caller-ID set',
          description:
            'Give `didIds` (numbers of yours) or `all: true` (every active provisioned number). With `cliSetId` the ' +
            'numbers join that set (each caller ID kept once); otherwise a new set named `name` (default ' +
            '"Phone numbers") is made. Numbers not active are refused by id.',
          body: Type.Object(
            {
              didIds: Type.Optional(Type.Array(Uuid(), { minItems: 1, maxItems: 1000, uniqueItems: true })),
              all: Type.Optional(Type.Boolean()),
              cliSetId: Type.Optional(Uuid()),
              name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
            },
            { additionalProperties: false },
          ),
          response: {
            201: Ok(
              Type.Object({
                cliSetId: Uuid(),
                name: Type.String(),
                added: Type.Integer({ description: 'numbers put into the set by this request' }),
                clis: Type.Array(Type.String(), { description: 'the whole set, E.164' }),
              }),
            ),
          },
        },
      },
      async (req, reply) => {
        const accountId = req.principal!.accountId;
        const b = req.body;
        if ((b.didIds === undefined) === (b.all !== true)) {
          throw validationError([{ path: 'didIds', message: 'give didIds or all: true, not both' }]);
        }
        const eligible = await manage.cliEligible(accountId);
        let chosen = eligible;
        if (b.didIds) {
          const byId = new Map(eligible.map((d) => [d.id, d]));
          const missing = b.didIds.flatMap((id, i) =>
            byId.has(id) ? [] : [{ path: `didIds/${i}`, message: 'not an active number of yours' }],
          );
          if (missing.length) throw validationError(missing);
          chosen = b.didIds.map((id) => byId.get(id)!);
        }
        if (chosen.length === 0) throw ruleError('You have no active numbers to use as caller ID');
        const clis = chosen.map((d) => d.number);
        const set = b.cliSetId
          ? await cliSets.addToCliSet(accountId, b.cliSetId, { clis })
          : await cliSets.createCliSet(accountId, { name: b.name ?? 'Phone numbers', clis });
        const all = set.clis.split('\n').filter(Boolean);
        return reply.code(201).send(ok({ cliSetId: set.id, name: set.name, added: clis.length, clis: all }));
      },
    );

    app.get(
      '/dids/cli-eligible',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'Active provisioned numbers usable as caller ID',
          response: {
            200: Ok(
              Type.Array(
                Type.Object({
                  id: Uuid(),
                  cli: Type.String({ description: 'digits only' }),
                  number: Type.String(),
                  country: Nullable(Type.String()),
                  countryCode: Nullable(Type.String()),
                  city: Nullable(Type.String()),
                  didType: Nullable(Type.String()),
                  channels: Type.Integer(),
                  label: Nullable(Type.String()),
                }),
              ),
            ),
          },
        },
      },
      async (req) => ok(await manage.cliEligible(req.principal!.accountId)),
    );

    app.get(
      '/dids/analytics/overview',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'Counts by status, monthly recurring cost, lifetime spend and usage (display numbers)',
          response: {
            200: Ok(
              Type.Object({
                counts: Type.Object({
                  total: Type.Integer(),
                  active: Type.Integer(),
                  pending: Type.Integer(),
                  suspended: Type.Integer(),
                  released: Type.Integer(),
                  failed: Type.Integer(),
                }),
                monthlyRecurring: Type.Number(),
                lifetimeSpend: Type.Number(),
                usage: Usage,
              }),
            ),
          },
        },
      },
      async (req) => ok(await manage.overview(req.principal!.accountId)),
    );

    app.get(
      '/dids/:id',
      {
        config: { access: READ },
        schema: { tags: TAGS, summary: 'One number', params: IdParams, response: { 200: Ok(Did) } },
      },
      async (req) => ok(await manage.get(req.principal!.accountId, req.params.id)),
    );

    app.get(
      '/dids/:id/analytics',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'Spend and usage of one number with its monthly series',
          params: IdParams,
          querystring: Type.Object({ months: Type.Optional(Type.Integer({ minimum: 1, maximum: 36, default: 6 })) }),
          response: {
            200: Ok(
              Type.Object({
                number: Nullable(Type.String()),
                status: Type.String(),
                price: Type.Object({ setup: Money(), monthly: Money() }),
                spend: Type.Object({
                  gross: Type.Number(),
                  refunded: Type.Number(),
                  net: Type.Number(),
                  setup: Type.Number(),
                  recurring: Type.Number(),
                }),
                usage: Usage,
                window: Type.Object({ months: Type.Integer(), from: DateTime() }),
                series: Type.Array(
                  Type.Object({
                    period: Type.String({ description: 'YYYY-MM' }),
                    ...Usage.properties,
                    spend: Type.Number(),
                  }),
                ),
              }),
            ),
          },
        },
      },
      async (req) => ok(await manage.analytics(req.principal!.accountId, req.params.id, req.query.months ?? 6)),
    );

    app.get(
      '/dids/:id/usage/export',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "The number's usage by month as CSV (calls from CDRs, messages, voicemails, cost)",
          description:
            'One row per calendar month (UTC) of the window, the current month last, months without use included. ' +
            'Money in 6-place figures; `call_cost` is everything the calls on the number cost the renter.',
          params: IdParams,
          querystring: Type.Object({ months: Type.Optional(Type.Integer({ minimum: 1, maximum: 36, default: 12 })) }),
          produces: ['text/csv'],
        },
      },
      async (req, reply) => {
        const u = await manage.usageExport(req.principal!.accountId, req.params.id, req.query.months ?? 12);
        const csv = createCsvWriter(USAGE_CSV, USAGE_CSV.slice(2));
        reply
          .type('text/csv; charset=utf-8')
          .header('content-disposition', `attachment; filename="number-usage-${req.params.id}.csv"`);
        for (const m of u.months) {
          const p = presentUsage(m);
          csv.write({
            period: m.period,
            number: u.number ?? '',
            calls: String(p.calls),
            answered_calls: String(p.answeredCalls),
            call_minutes: p.callMinutes.toFixed(2),
            call_cost: p.callCost,
            sms_received: String(p.smsReceived),
            sms_sent: String(p.smsSent),
            sms_cost: p.smsCost,
            voicemails: String(p.voicemails),
            voicemail_minutes: p.voicemailMinutes.toFixed(2),
            total_cost: p.cost,
          });
        }
        csv.end();
        return reply.send(csv as unknown as never);
      },
    );

    app.get(
      '/dids/:id/history',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "A number's history: orders, renewals, suspension, release, routing changes, with the money moved",
          params: IdParams,
          querystring: Type.Object(CursorQuery()),
          response: { 200: CursorPage(HistoryItem) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 25;
        return cursorPage(
          await manage.history(req.principal!.accountId, req.params.id, { ...req.query, limit }),
          limit,
        );
      },
    );

    app.put(
      '/dids/:id/routing',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary:
            'Point the number: unrouted, a SIP endpoint host[:port] (with a backup) or forward to an E.164 number',
          description:
            'SIP targets pass the outbound guard (no private or loopback addresses). Changing the routing clears ' +
            '`endpointReachable` until the next check. `ringTimeoutSeconds` (5–120, default 25, kept when absent): ' +
            'a target ringing that long is cancelled and the call goes to voicemail when it is on (a forwarded ' +
            'call too), else ends unanswered.',
          params: IdParams,
          body: Type.Object(
            {
              pointMode: Type.Union([Type.Literal('unrouted'), Type.Literal('sip'), Type.Literal('forward')]),
              pointsTo: Type.Optional(Nullable(Type.String({ maxLength: 260 }))),
              pointsToBackup: Type.Optional(Nullable(Type.String({ maxLength: 260 }))),
              ringTimeoutSeconds: Type.Optional(Type.Integer({ minimum: 5, maximum: 120 })),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Did) },
        },
      },
      async (req) => ok(await manage.setRouting(req.principal!.accountId, req.params.id, req.body)),
    );

    app.post(
      '/dids/:id/check-endpoint',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Check the SIP endpoint (then the backup) with OPTIONS; stores endpointReachable and endpointCause',
          params: IdParams,
          response: { 200: Ok(Did) },
        },
      },
      async (req) => ok(await manage.checkEndpoint(req.principal!.accountId, req.params.id)),
    );

    app.put(
      '/dids/:id/auto-renew',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Turn monthly renewal on or off (off: the number is released at nextRenewalAt)',
          params: IdParams,
          body: Type.Object({ autoRenew: Type.Boolean() }, { additionalProperties: false }),
          response: { 200: Ok(Did) },
        },
      },
      async (req) => ok(await manage.setAutoRenew(req.principal!.accountId, req.params.id, req.body.autoRenew)),
    );

    app.put(
      '/dids/:id/label',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Set the label (empty or null clears it)',
          params: IdParams,
          body: Type.Object({ label: Nullable(Type.String({ maxLength: 60 })) }, { additionalProperties: false }),
          response: { 200: Ok(Did) },
        },
      },
      async (req) => ok(await manage.setLabel(req.principal!.accountId, req.params.id, req.body.label)),
    );

    app.put(
      '/dids/:id/ai-agent',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Attach an AI voice agent to answer inbound calls (null detaches)',
          description:
            'An enabled agent of the account answers every inbound call on the number (when the exchange has its ' +
            'chat and speech-to-text providers); billed as the inbound call plus the agent fee per started minute.',
          params: IdParams,
          body: Type.Object({ aiAgentId: Nullable(Uuid()) }, { additionalProperties: false }),
          response: { 200: Ok(Did) },
        },
      },
      async (req) => ok(await manage.setAiAgent(req.principal!.accountId, req.params.id, req.body.aiAgentId)),
    );

    app.post(
      '/dids/:id/release',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Give the number up now (no refund of the month paid)',
          params: IdParams,
          response: { 200: Ok(Did) },
        },
      },
      async (req) => ok(await manage.release(req.principal!.accountId, req.params.id)),
    );
  };
}
