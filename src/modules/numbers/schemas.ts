import { Type } from 'typebox';
import { DateTime, Money, Nullable, Uuid } from '../../http/envelope.js';

export const TAGS = ['Phone numbers'];
export const READ = { auth: 'required', scope: 'numbers:read' } as const;
export const WRITE = { auth: 'required', scope: 'numbers:write' } as const;

export const EmergencyAddress = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    street: Type.String({ minLength: 1, maxLength: 200 }),
    street2: Nullable(Type.String({ maxLength: 200 })),
    city: Type.String({ minLength: 1, maxLength: 100 }),
    region: Nullable(Type.String({ maxLength: 100 })),
    postalCode: Type.String({ minLength: 1, maxLength: 20 }),
    countryCode: Type.String({ pattern: '^[A-Z]{2}$', description: "ISO-3166-1 alpha-2: the number's country" }),
  },
  { additionalProperties: false },
);

export const Did = Type.Object({
  id: Uuid(),
  number: Nullable(Type.String({ description: 'digits, null until provisioning finishes' })),
  country: Nullable(Type.String()),
  city: Nullable(Type.String()),
  areaPrefix: Nullable(Type.String()),
  didType: Nullable(Type.String()),
  countryCode: Nullable(Type.String({ description: 'ISO-3166-1 alpha-2' })),
  channelsIncluded: Type.Integer(),
  status: Type.Union([
    Type.Literal('pending'),
    Type.Literal('active'),
    Type.Literal('suspended'),
    Type.Literal('released'),
    Type.Literal('failed'),
  ]),
  pointMode: Type.Union([Type.Literal('unrouted'), Type.Literal('sip'), Type.Literal('forward')]),
  pointsTo: Nullable(Type.String({ description: 'host[:port][;transport=udp|tcp|tls] for sip; E.164 for forward' })),
  pointsToBackup: Nullable(Type.String()),
  ringTimeoutSeconds: Type.Integer({
    description: 'seconds a target (or a forward route before voicemail) rings before the call moves on',
  }),
  autoRenew: Type.Boolean(),
  setupPrice: Money(),
  monthlyPrice: Money(),
  orderedAt: Nullable(DateTime()),
  activatedAt: Nullable(DateTime()),
  nextRenewalAt: Nullable(DateTime()),
  suspendedAt: Nullable(DateTime()),
  releasedAt: Nullable(DateTime()),
  endpointReachable: Nullable(Type.Boolean({ description: 'null: not checked' })),
  endpointCause: Nullable(Type.String()),
  endpointCheckedAt: Nullable(DateTime()),
  aiAgentId: Nullable(Uuid()),
  graceDays: Type.Integer({ description: 'days a suspended number is held before release' }),
  label: Nullable(Type.String()),
  tags: Type.Array(Type.String()),
  callerName: Nullable(Type.String({ description: 'CNAM listing (US and Canadian numbers)' })),
  emergencyAddress: Nullable(EmergencyAddress),
  releaseAt: Nullable(DateTime()),
  accountId: Uuid('the owner: the caller, or the sub-account it bought for'),
  origin: Type.Union([Type.Literal('rented'), Type.Literal('ported')], {
    description: "rented from a seller's listing, or ported in (no seller, group or SKU; the platform's monthly fee)",
  }),
  portInId: Nullable(Uuid('the completed port-in order of a ported number')),
  simulated: Type.Optional(Type.Literal(true, { description: "a test key's order: nothing kept or charged" })),
});

/** A number's caller name or emergency address at the provisioning provider (docs/numbers.md "Provisioning"). */
export const ProvisionState = Type.Object({
  status: Type.Union([
    Type.Literal('not_provisioned'),
    Type.Literal('pending'),
    Type.Literal('provisioned'),
    Type.Literal('failed'),
  ]),
  error: Nullable(
    Type.String({ description: "why not provisioned, the provider's refusal, or the last retried error" }),
  ),
  attempts: Type.Integer(),
  nextAttemptAt: Nullable(DateTime()),
  provisionedAt: Nullable(DateTime()),
  updatedAt: DateTime(),
});

/** The answer of store reads while the store is switched off (spec "Phone numbers (DID store)"). */
export const Disabled = Type.Object({
  disabled: Type.Literal(true),
  comingSoon: Type.Literal(true),
  message: Type.String(),
});

export const Sku = Type.Object({
  skuId: Uuid(),
  channels: Type.Integer(),
  setupPrice: Type.Number({ description: 'USD (display number)' }),
  monthlyPrice: Type.Number({ description: 'USD (display number)' }),
});

export const Group = Type.Object({
  groupId: Uuid(),
  country: Type.String(),
  countryId: Type.String({ description: 'catalogue id, not an ISO code' }),
  countryCode: Type.String(),
  countryPrefix: Type.String(),
  city: Nullable(Type.String()),
  areaPrefix: Nullable(Type.String()),
  typeId: Type.String(),
  typeName: Type.String(),
  available: Type.Integer({ description: 'numbers on sale in the group' }),
  requiresKyc: Type.Optional(Type.Boolean()),
  graceDays: Type.Optional(Type.Integer()),
  skus: Type.Array(Sku),
});

export const CatalogQuery = Type.Object({
  countryId: Type.Optional(Type.String({ maxLength: 64 })),
  typeId: Type.Optional(Type.String({ maxLength: 40 })),
  search: Type.Optional(Type.String({ maxLength: 120 })),
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 10000, default: 1 })),
  sort: Type.Optional(
    Type.Union([
      Type.Literal('monthly_asc'),
      Type.Literal('monthly_desc'),
      Type.Literal('setup_asc'),
      Type.Literal('location_asc'),
    ]),
  ),
  maxMonthly: Type.Optional(Type.Number({ minimum: 0, maximum: 1000000 })),
});

export const CatalogPage = Type.Object({
  groups: Type.Array(Group),
  total: Nullable(Type.Integer()),
  page: Type.Integer(),
});

export const BuyFields = {
  skuId: Type.String({ minLength: 1, maxLength: 64 }),
  groupId: Type.String({ minLength: 1, maxLength: 64 }),
  countryId: Type.Optional(Type.String({ maxLength: 64 })),
  country: Type.Optional(Type.String({ maxLength: 120 })),
  city: Type.Optional(Nullable(Type.String({ maxLength: 120 }))),
  areaPrefix: Type.Optional(Nullable(Type.String({ maxLength: 16 }))),
  didType: Type.Optional(Nullable(Type.String({ maxLength: 40 }))),
  subAccountId: Type.Optional(Uuid("that sub-account's balance pays and the number is theirs")),
};
