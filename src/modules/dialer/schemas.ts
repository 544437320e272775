import { Type } from 'typebox';
import { DateTime, Money, Nullable, Uuid } from '../../http/envelope.js';
import { ActionItem, Language } from '../api-calls/actions.js';

export const CampaignStatus = Type.Union([
  Type.Literal('draft'),
  Type.Literal('ready'),
  Type.Literal('running'),
  Type.Literal('paused'),
  Type.Literal('completed'),
  Type.Literal('failed'),
]);

const Hour = Type.Integer({ minimum: 0, maximum: 23 });

export const CliStrategy = Type.Object(
  {
    strategy: Type.Union(
      [
        Type.Literal('round_robin'),
        Type.Literal('least_used'),
        Type.Literal('match_destination'),
        Type.Literal('random'),
      ],
      { description: 'how the next caller ID of the set is chosen' },
    ),
    dailyCap: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 1000000,
        description:
          'calls per caller ID per day (from midnight in the campaign windowTz) across the account (0: none)',
      }),
    ),
  },
  { additionalProperties: false },
);

// Defaults only on create: the validator fills them in, so on an update they would reset every
// field the request left out.
const fields = (withDefaults: boolean) => {
  const dflt = (value: number) => (withDefaults ? { default: value } : {});
  return {
    messageBody: Type.Optional(Nullable(Type.String({ maxLength: 1600 }))),
    senderId: Type.Optional(Nullable(Type.String({ maxLength: 20 }))),
    targetAcd: Type.Optional(Nullable(Type.String({ maxLength: 12 }))),
    targetAsr: Type.Optional(Nullable(Type.String({ maxLength: 12 }))),
    concurrency: Type.Optional(Type.Integer({ minimum: 1, maximum: 128, ...dflt(1) })),
    maxCallDuration: Type.Optional(Type.Integer({ minimum: 1, maximum: 3600, ...dflt(300), description: 'seconds' })),
    callInterval: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 60000, ...dflt(0), description: 'milliseconds between two call starts' }),
    ),
    notes: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
    windowStartHour: Type.Optional(Nullable(Hour)),
    windowEndHour: Type.Optional(Nullable(Hour)),
    windowTz: Type.Optional(Nullable(Type.String({ maxLength: 64, description: 'IANA time zone (default UTC)' }))),
    maxAttempts: Type.Optional(Type.Integer({ minimum: 1, maximum: 10, ...dflt(1) })),
    retryDelayMinutes: Type.Optional(Type.Integer({ minimum: 1, maximum: 1440, ...dflt(60) })),
    maxSpend: Type.Optional(
      Nullable(Type.String({ maxLength: 24, description: 'money; the campaign pauses when reached' })),
    ),
    scheduleAt: Type.Optional(Nullable(DateTime())),
    aiAgentId: Type.Optional(Nullable(Uuid())),
    cliSetId: Type.Optional(Nullable(Uuid('caller-ID set the voice calls present'))),
    cliStrategy: Type.Optional(Nullable(CliStrategy)),
    actions: Type.Optional(
      Type.Array(ActionItem, {
        maxItems: 10,
        description: 'what an answered call plays, as POST /comms/calls actions',
      }),
    ),
    language: Type.Optional(Language),
  };
};

export const CampaignCreate = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 255 }),
    routeId: Uuid(),
    kind: Type.Optional(Type.Union([Type.Literal('voice'), Type.Literal('sms')], { default: 'voice' })),
    ...fields(true),
  },
  { additionalProperties: false },
);

export const CampaignUpdate = Type.Object(
  { name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })), ...fields(false) },
  { additionalProperties: false },
);

export const Campaign = Type.Object({
  id: Uuid(),
  userId: Uuid(),
  routeId: Uuid(),
  name: Type.String(),
  kind: Type.Union([Type.Literal('voice'), Type.Literal('sms')]),
  environment: Type.Union([Type.Literal('live'), Type.Literal('test')]),
  status: CampaignStatus,
  statusReason: Nullable(
    Type.String({
      description:
        'why it is paused or completed: paused_by_user, max_spend_reached, insufficient_balance, no_caller_ids, stopped_by_user, all_numbers_done',
    }),
  ),
  messageBody: Nullable(Type.String()),
  senderId: Nullable(Type.String()),
  aiAgentId: Nullable(Uuid()),
  actions: Type.Array(Type.Object({}, { additionalProperties: true })),
  language: Type.String(),
  targetAcd: Nullable(Type.String()),
  targetAsr: Nullable(Type.String()),
  notes: Nullable(Type.String()),
  concurrency: Type.Integer(),
  maxCallDuration: Type.Integer(),
  callInterval: Type.Integer(),
  platformFeePerCall: Money(),
  totalNumbers: Type.Integer(),
  totalClis: Type.Integer(),
  cliSetId: Nullable(Uuid()),
  cliStrategy: Nullable(Type.Object({}, { additionalProperties: true })),
  numbersDialed: Type.Integer(),
  numbersAnswered: Type.Integer(),
  numbersFailed: Type.Integer(),
  totalDurationSeconds: Type.Integer(),
  windowStartHour: Nullable(Type.Integer()),
  windowEndHour: Nullable(Type.Integer()),
  windowTz: Nullable(Type.String()),
  maxAttempts: Type.Integer(),
  retryDelayMinutes: Type.Integer(),
  maxSpend: Nullable(Money()),
  spent: Money('settled call costs and platform fees so far'),
  scheduleAt: Nullable(DateTime()),
  startedAt: Nullable(DateTime()),
  completedAt: Nullable(DateTime()),
  createdAt: DateTime(),
  updatedAt: DateTime(),
  simulated: Type.Optional(Type.Boolean()),
});

export const ImportJob = Type.Object({
  id: Uuid(),
  campaignId: Uuid(),
  status: Type.Union([Type.Literal('running'), Type.Literal('completed'), Type.Literal('failed')]),
  rowsRead: Type.Integer(),
  imported: Type.Integer(),
  duplicates: Type.Integer(),
  invalid: Type.Integer(),
  errors: Type.Array(Type.Object({ row: Type.Integer(), value: Type.String(), message: Type.String() })),
  error: Nullable(Type.String()),
  startedAt: DateTime(),
  finishedAt: Nullable(DateTime()),
});

export const Attempt = Type.Object({
  id: Uuid(),
  number: Type.String(),
  attempt: Type.Integer(),
  callId: Nullable(Uuid()),
  cli: Nullable(Type.String()),
  status: Type.String({ description: 'completed, no_answer, busy, failed (calls); sent, failed (SMS)' }),
  sipCode: Nullable(Type.Integer()),
  cause: Nullable(Type.String()),
  durationSeconds: Type.Integer(),
  cost: Money(),
  fee: Money(),
  disposition: Nullable(Type.String({ description: "the account's outcome of the call (PUT …/disposition)" })),
  dispositionNote: Nullable(Type.String()),
  dispositionAt: Nullable(DateTime()),
  startedAt: DateTime(),
  endedAt: DateTime(),
});
