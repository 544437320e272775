import { Type } from 'typebox';
import { DateTime, Money, Nullable, Uuid } from '../../http/envelope.js';

/** Every operation of the group carries exactly the spec's group name. */
export const TAGS = ['Revenue share numbers'];
export const READ = { auth: 'required', scope: 'numbers:read' } as const;
export const WRITE = { auth: 'required', scope: 'numbers:write' } as const;

export const NumberType = Type.Union([
  Type.Literal('iprn'),
  Type.Literal('premium'),
  Type.Literal('shared_cost'),
  Type.Literal('audiotext'),
]);
export const RangeStatus = Type.Union([Type.Literal('active'), Type.Literal('paused'), Type.Literal('retired')]);
export const ReleaseOn = Type.Union([Type.Literal('hold_period'), Type.Literal('supplier_payment')]);

export const PayoutRow = Type.Object({
  origin: Type.String({ pattern: '^[0-9]{0,15}$', description: "caller number prefix (digits); '' = every origin" }),
  payoutPerMinute: Money(),
});

export const Range = Type.Object({
  id: Uuid(),
  name: Type.String(),
  country: Type.String(),
  countryCode: Type.String({ description: 'ISO-3166-1 alpha-2' }),
  prefix: Type.String({ description: 'E.164 digits every number of the range starts with' }),
  numberType: NumberType,
  payouts: Type.Array(PayoutRow, { description: 'payout per answered minute by origin, longest origin first' }),
  bestPayoutPerMinute: Money(),
  billingIncrement: Type.String({ description: 'shape <initial>/<increment>, seconds' }),
  holdDays: Type.Integer(),
  releaseOn: ReleaseOn,
  maxCallSeconds: Type.Integer(),
  status: RangeStatus,
  available: Type.Integer({ description: 'numbers free to allocate' }),
  testNumbers: Type.Array(Type.String()),
  createdAt: DateTime(),
});

/** What the range's supplier (and the operator) sees besides the catalogue fields. */
export const SupplierRange = Type.Intersect([
  Range,
  Type.Object({
    supplierId: Uuid(),
    ratePerMinute: Money(),
    sourceIps: Type.Array(Type.String()),
    allocated: Type.Integer(),
    paidThrough: Nullable(Type.String({ description: 'YYYY-MM-DD' })),
    fraudRules: Type.Object({}, { additionalProperties: true }),
  }),
]);

export const AnswerMode = Type.Union([Type.Literal('silence'), Type.Literal('announcement'), Type.Literal('forward')], {
  description:
    '`silence`: answered, nothing played; `announcement`: answered, the prompt looped until the end; ' +
    '`forward`: answered when the forward target answers',
});

export const Announcement = Type.Object(
  {
    url: Nullable(Type.String({ description: 'an https MP3 file (public address, at most 2 MB)' })),
    text: Nullable(Type.String({ description: 'read by the TTS' })),
    language: Nullable(Type.String({ description: 'of `text`: en, es, fr, de, pt or hi' })),
  },
  {
    description: '`announcement`: the prompt; `forward`: what plays when the holder’s balance cannot pay the forward',
  },
);

export const RsNumber = Type.Object({
  id: Uuid(),
  number: Type.String(),
  rangeId: Uuid(),
  rangeName: Type.String(),
  country: Type.String(),
  countryCode: Type.String(),
  numberType: NumberType,
  label: Nullable(Type.String()),
  maxCallSeconds: Type.Integer({ description: 'calls are ended after this many answered seconds' }),
  payouts: Type.Array(PayoutRow),
  allocatedAt: DateTime(),
  openFlag: Nullable(Uuid('an open fraud flag holds this number’s earnings')),
  answer: Type.Object(
    {
      mode: AnswerMode,
      target: Nullable(Type.String({ description: '`forward`: the SIP URI or E.164 number the call is forwarded to' })),
      announcement: Nullable(Announcement),
    },
    { description: 'What the caller hears' },
  ),
});

export const InventoryNumber = Type.Object({
  id: Uuid(),
  number: Type.String(),
  isTest: Type.Boolean(),
  state: Type.Union([Type.Literal('available'), Type.Literal('allocated'), Type.Literal('withdrawn')]),
  holderId: Nullable(Uuid()),
  allocatedAt: Nullable(DateTime()),
  createdAt: DateTime(),
});

export const CallStatus = Type.Union([
  Type.Literal('unanswered'),
  Type.Literal('test'),
  Type.Literal('held'),
  Type.Literal('flagged'),
  Type.Literal('released'),
  Type.Literal('clawed_back'),
]);

export const Cdr = Type.Object({
  id: Uuid(),
  numberId: Uuid(),
  number: Type.String(),
  rangeId: Uuid(),
  fromNumber: Type.String(),
  origin: Nullable(Type.String({ description: 'the origin row that priced the payout' })),
  startedAt: DateTime(),
  answeredAt: Nullable(DateTime()),
  endedAt: DateTime(),
  durationSeconds: Type.Integer(),
  billedSeconds: Type.Integer(),
  payoutPerMinute: Money(),
  payout: Money(),
  status: CallStatus,
  sipCode: Type.Integer(),
  hangupCause: Type.String(),
  releaseAt: Nullable(DateTime()),
  flagId: Nullable(Uuid()),
});

export const FraudRules = Type.Object({
  windowMinutes: Type.Integer({ minimum: 1, maximum: 1440 }),
  minSample: Type.Integer({ minimum: 1, maximum: 100000 }),
  shortCallSeconds: Type.Integer({ minimum: 1, maximum: 600 }),
  maxShortCallRatio: Type.Number({ minimum: 0, maximum: 1 }),
  maxSourceShare: Type.Number({ minimum: 0, maximum: 1 }),
  maxCallsPerSource: Type.Integer({ minimum: 1, maximum: 100000 }),
  maxCallsPerNumber: Type.Integer({ minimum: 1, maximum: 1000000 }),
});

export const Flag = Type.Object({
  id: Uuid(),
  numberId: Uuid(),
  number: Type.String(),
  rangeId: Uuid(),
  holderId: Uuid(),
  rule: Type.String(),
  detail: Type.Object({}, { additionalProperties: true }),
  status: Type.Union([Type.Literal('open'), Type.Literal('cleared'), Type.Literal('confirmed')]),
  calls: Type.Integer(),
  payout: Money('earnings of the calls the flag holds'),
  note: Nullable(Type.String()),
  resolvedAt: Nullable(DateTime()),
  createdAt: DateTime(),
});

export const Settings = Type.Object({
  ringSeconds: Type.Integer({ minimum: 0, maximum: 10 }),
  defaultMaxCallSeconds: Nullable(Type.Integer({ minimum: 10, maximum: 14400 })),
  notifyFraud: Type.Boolean(),
});

/** Date window of statistics, CDRs and exports. */
export const Window = {
  from: Type.Optional(Type.String({ format: 'date-time' })),
  to: Type.Optional(Type.String({ format: 'date-time' })),
};
