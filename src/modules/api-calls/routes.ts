import { Type } from 'typebox';
import { HistoryEntry } from '../billing/history-entry.js';
import type { App } from '../../http/app.js';
import { CursorPage, DateTime, Money, Nullable, Ok, Uuid, ok } from '../../http/envelope.js';
import { cursorPage, CursorQuery } from '../../http/pagination.js';
import { ActionItem, Language, LIMITS } from './actions.js';
import type { ApiCallsService } from './service.js';

const Strategy = Type.Union([Type.Literal('cheapest'), Type.Literal('best_quality'), Type.Literal('balanced')]);
const CallStatus = Type.Union(
  ['queued', 'ringing', 'answered', 'completed', 'no_answer', 'busy', 'failed'].map((s) => Type.Literal(s)),
);

const PlaceCallBody = Type.Object(
  {
    to: Type.String({ minLength: 1, maxLength: 32, description: 'destination, E.164' }),
    from: Type.String({ minLength: 1, maxLength: 32, description: 'caller ID presented, E.164' }),
    routeId: Type.Optional(Uuid('a purchased or own route; omit for Smart Routing with failover')),
    strategy: Type.Optional(Strategy),
    maxDuration: Type.Optional(Type.Integer({ minimum: 10, maximum: 3600, default: 300 })),
    async: Type.Optional(Type.Boolean()),
    language: Type.Optional(Language),
    // Spec "Limits", Call: the schema states the same count that checkActions enforces.
    actions: Type.Optional(Type.Array(ActionItem, { maxItems: LIMITS.actions })),
    aiAgentId: Type.Optional(Uuid('an AI voice agent of the account holds the answered call (no actions then)')),
  },
  { additionalProperties: false },
);

const CreateAttempt = Type.Object({
  routeId: Nullable(Uuid()),
  sipResponseCode: Nullable(Type.Integer()),
  status: Type.String(),
  hangupCause: Nullable(Type.String()),
});

const CallCreated = Type.Object({
  callId: Uuid(),
  to: Type.String(),
  from: Type.String(),
  status: Type.String(),
  sipResponseCode: Type.Optional(Nullable(Type.Integer())),
  hangupCause: Type.Optional(Nullable(Type.String())),
  durationSeconds: Type.Optional(Type.Integer()),
  billableSeconds: Type.Optional(Type.Integer()),
  cost: Type.Optional(Money()),
  billingIncrement: Type.Optional(Nullable(Type.String())),
  startedAt: DateTime(),
  completedAt: Type.Optional(Nullable(DateTime())),
  simulated: Type.Optional(Type.Boolean()),
  routeId: Type.Optional(Nullable(Uuid())),
  attempts: Type.Optional(Type.Array(CreateAttempt)),
  mode: Type.Optional(Type.Literal('async')),
  actions: Type.Optional(Type.Integer()),
  statusUrl: Type.Optional(Type.String()),
});

const CallRecord = Type.Object({
  callId: Uuid(),
  status: CallStatus,
  mode: Type.Union([Type.Literal('sync'), Type.Literal('async')]),
  to: Type.String(),
  from: Type.String(),
  simulated: Type.Boolean(),
  createdAt: DateTime(),
  ringingAt: Nullable(DateTime()),
  answeredAt: Nullable(DateTime()),
  endedAt: Nullable(DateTime()),
  durationSeconds: Nullable(Type.Integer()),
  billableSeconds: Nullable(Type.Integer()),
  cost: Nullable(Money()),
  billingIncrement: Nullable(Type.String()),
  sipResponseCode: Nullable(Type.Integer()),
  hangupCause: Nullable(Type.String()),
  hangupReason: Nullable(Type.String()),
  error: Nullable(Type.String()),
  actions: Nullable(Type.Array(Type.Object({}, { additionalProperties: true }))),
  gathered: Nullable(
    Type.Array(
      Type.Object({
        index: Type.Integer(),
        digits: Nullable(Type.String()),
        status: Type.Union([Type.Literal('received'), Type.Literal('no_input')]),
      }),
    ),
  ),
  routeId: Nullable(Uuid()),
  // The conversation when an AI voice agent held the call (docs/dialer.md, "AI agents on calls").
  aiAgent: Type.Optional(
    Type.Object({
      agentId: Uuid(),
      outcome: Type.String(),
      transcript: Type.Array(
        Type.Object({
          role: Type.Union([Type.Literal('agent'), Type.Literal('caller')]),
          text: Type.String(),
          at: DateTime(),
          latencyMs: Type.Optional(Type.Integer()),
          interrupted: Type.Optional(Type.Boolean()),
        }),
      ),
      captured: Type.Record(Type.String(), Type.String()),
      transferTo: Nullable(Type.String()),
      transferCallId: Nullable(Uuid()),
      turnLatencyMs: Type.Array(Type.Integer()),
      fee: Money(),
    }),
  ),
  attempts: Type.Array(
    Type.Object({
      attempt: Type.Integer(),
      routeId: Nullable(Uuid()),
      status: Type.String(),
      sipResponseCode: Nullable(Type.Integer()),
      hangupCause: Nullable(Type.String()),
    }),
  ),
});

export function commsCallsRoutes(svc: ApiCallsService) {
  return (app: App) => {
    app.post(
      '/comms/calls',
      {
        config: {
          access: { auth: 'required', scope: 'voice:send', testKeys: 'simulate' },
          rateLimit: { points: 10, seconds: 1 },
          idempotent: true,
        },
        schema: {
          tags: ['Voice and SMS'],
          summary: 'Place a call and run its actions (sync: answers when the call ends; async: 202 at once)',
          description:
            "Limits are checked before anything is dialled or held, and count trunk calls too: the account's calls placed " +
            "through the API at once (`[voice] max_api_calls_per_account`), a sub-account's `maxConcurrentCalls`, each route's " +
            '`capacity` and `maxCps` (a full route is skipped for the next one). Over a limit: 429 `RATE_LIMITED` with `Retry-After` ' +
            'and `error.details.limit` one of `api-calls`, `sub-account-calls`, `capacity`, `cps`; limiter unreachable: 503 `SERVICE_UNAVAILABLE`. ' +
            "A Switch customer (a sub-account) meets its operator's Switch rules (docs/switch.md): a number on the honored " +
            'do-not-call list is refused with 400 `VALIDATION_ERROR`, `details.code` `DO_NOT_CALL` (nothing held, the hit recorded); ' +
            'a matching sell rate is what the call costs, and when every route costs more than it: 400, `details.code` `SELL_RATE_BELOW_COST`.',
          body: PlaceCallBody,
          response: { 200: Ok(CallCreated), 202: Ok(CallCreated) },
        },
      },
      async (req, reply) => {
        const p = req.principal!;
        const r = await svc.place({ accountId: p.accountId, parentId: p.parentId, mode: p.mode }, req.body, {
          idempotency: req.idempotency,
        });
        return reply.code(r.status).send(ok(r.data as never));
      },
    );

    app.post(
      '/comms/voice-otp',
      {
        config: {
          access: { auth: 'required', scope: 'voice:send', testKeys: 'simulate' },
          rateLimit: { points: 10, seconds: 1 },
          idempotent: true,
        },
        schema: {
          tags: ['Voice and SMS'],
          summary: 'Call a number and read a one-time code aloud; outcome and cost follow on the call record',
          body: Type.Object(
            {
              to: Type.String({ minLength: 1, maxLength: 32, description: 'E.164' }),
              code: Type.Optional(
                Type.String({ pattern: '^[0-9]{4,10}$', description: 'generated (6 digits) when omitted' }),
              ),
              language: Type.Optional(Language),
              brand: Type.Optional(Type.String({ maxLength: 60 })),
              repeat: Type.Optional(Type.Integer({ minimum: 1, maximum: 3, default: 2 })),
            },
            { additionalProperties: false },
          ),
          response: {
            200: Ok(
              Type.Object({
                voiceOtpId: Uuid(),
                callId: Uuid(),
                status: Type.Literal('initiated'),
                to: Type.String(),
                language: Language,
                codeLength: Type.Integer(),
                repeat: Type.Integer(),
              }),
            ),
          },
        },
      },
      async (req) => {
        const p = req.principal!;
        return ok(
          (await svc.voiceOtp({ accountId: p.accountId, parentId: p.parentId, mode: p.mode }, req.body)) as never,
        );
      },
    );

    app.get(
      '/comms/calls/:id',
      {
        config: { access: { auth: 'required', scope: 'voice:send' } },
        schema: {
          tags: ['Voice and SMS'],
          summary: 'One call placed through the API',
          params: Type.Object({ id: Uuid() }),
          response: { 200: Ok(CallRecord) },
        },
      },
      async (req) => ok((await svc.get(req.principal!, req.params.id)) as never),
    );

    app.get(
      '/comms/calls',
      {
        config: { access: { auth: 'required', fullAccessOnly: true } },
        schema: {
          tags: ['Voice and SMS'],
          summary: 'History of API calls (ledger entries), newest first',
          querystring: Type.Object({
            type: Type.Optional(
              Type.Union(
                ['api_call', 'api_sms', 'smpp_sms', 'dialer_campaign'].map((s) => Type.Literal(s)),
                { description: 'accepted, not applied' },
              ),
            ),
            from: Type.Optional(DateTime()),
            to: Type.Optional(DateTime()),
            ...CursorQuery(),
          }),
          response: { 200: CursorPage(HistoryEntry) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 25;
        const rows = await svc.history(req.principal!.accountId, {
          from: req.query.from,
          to: req.query.to,
          cursor: req.query.cursor,
          limit,
        });
        const page = cursorPage(rows, limit);
        return { ...page, data: page.data.map((r) => ({ ...r, createdAt: r.createdAt.toISOString() })) };
      },
    );
  };
}
