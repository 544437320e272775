import { Type } from 'typebox';
import type { App } from '../../../http/app.js';
import { DateTime, Money, Nullable, Ok, Uuid } from '../../../http/envelope.js';
import type { SwitchSubscriptions } from '../subscriptions.js';
import { actorOf } from './audit.js';
import { DisputeStatuses, type DisputeService } from './disputes.js';
import type { ProviderService } from './providers.js';
import { Contact, Endpoint, Enum, MoneyInput, Provider, ProviderStatuses, Trunk, wire } from './views.js';

const TAGS = ['Switch'];
const ACCESS = { auth: 'required', scope: 'switch:manage' } as const;
const GATE =
  'Needs an active Switch plan or trial (else 402 `SWITCH_SUBSCRIPTION_REQUIRED`); test keys may read, their writes get 403.';

const Text = (max: number) => Nullable(Type.String({ maxLength: max }));
const Day = Nullable(Type.String({ maxLength: 10, pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: 'YYYY-MM-DD' }));

const ProviderFieldsIn = {
  accountCode: Text(40),
  legalName: Text(200),
  tradingName: Text(200),
  providerType: Enum(['carrier', 'aggregator', 'mno', 'mvno', 'sip_provider'] as const),
  registrationNumber: Text(80),
  taxId: Text(80),
  vatId: Text(80),
  address: Text(600),
  country: Text(2),
  accountManager: Text(160),
  tags: Type.Array(Type.String({ minLength: 1, maxLength: 60 }), { maxItems: 50 }),
  services: Type.Array(Enum(['termination', 'origination', 'did', 'sms'] as const), { maxItems: 4, uniqueItems: true }),
  portalEmail: Nullable(Type.String({ maxLength: 255, format: 'email' })),
  notes: Text(4000),
  currency: Type.String({ minLength: 1, maxLength: 3 }),
  contractStart: Day,
  contractEnd: Day,
  autoRenew: Type.Boolean(),
  rateNoticeDays: Type.Integer({ minimum: 0, maximum: 365 }),
  disputeDays: Type.Integer({ minimum: 1, maximum: 365 }),
  billingMode: Enum(['prepaid', 'postpaid'] as const),
  creditLimit: MoneyInput('credit limit, at least 0'),
  paymentTermsDays: Type.Integer({ minimum: 0, maximum: 365 }),
  invoiceCycle: Enum(['weekly', 'biweekly', 'monthly'] as const),
  billingTimezone: Type.String({ minLength: 1, maxLength: 64 }),
};
const Name = Type.String({ minLength: 1, maxLength: 160 });

const ProviderCreate = Type.Object(
  {
    name: Name,
    ...Object.fromEntries(Object.entries(ProviderFieldsIn).map(([k, s]) => [k, Type.Optional(s)])),
    status: Type.Optional(
      Enum(ProviderStatuses, 'accepted on create only; later moves go through the status operation'),
    ),
  },
  { additionalProperties: false },
);
const ProviderPatch = Type.Object(
  {
    version: Type.Integer({
      minimum: 1,
      description: 'the version last read; 409 STALE_WRITE when it is not the current one',
    }),
    name: Type.Optional(Name),
    ...Object.fromEntries(Object.entries(ProviderFieldsIn).map(([k, s]) => [k, Type.Optional(s)])),
  },
  { additionalProperties: false },
);

const ProviderRow = Type.Object({
  ...Provider.properties,
  trunks: Type.Array(Trunk),
  trunkCount: Type.Integer(),
  activeTrunks: Type.Integer(),
  totalCapacity: Type.Integer(),
});
const ProviderDetail = Type.Object({
  ...ProviderRow.properties,
  trunks: Type.Array(Type.Object({ ...Trunk.properties, endpoints: Type.Array(Endpoint) })),
  contacts: Type.Array(Contact),
});

const AuditEntry = Type.Object({
  id: Uuid(),
  entity: Type.String({ description: 'provider, contact, dispute, trunk or endpoint' }),
  entityId: Uuid(),
  trunkId: Nullable(Uuid()),
  action: Type.String({ description: 'created, updated, deleted, status:<to>, endpoint:<what>, rates:uploaded' }),
  actor: Type.Object({ kind: Type.String(), id: Nullable(Type.String()), credentialId: Nullable(Type.String()) }),
  before: Type.Unknown({ description: 'the record before the change (secrets redacted); null on create' }),
  after: Type.Unknown({ description: 'the record after the change (secrets redacted); null on delete' }),
  createdAt: DateTime(),
});

const Dispute = Type.Object({
  id: Uuid(),
  supplierId: Uuid(),
  periodStart: Type.String(),
  periodEnd: Type.String(),
  ourAmount: Money(),
  theirAmount: Money(),
  currency: Type.String(),
  status: Enum(DisputeStatuses),
  reason: Nullable(Type.String()),
  resolution: Nullable(Type.String()),
  invoiceRef: Nullable(Type.String()),
  openedAt: DateTime(),
  respondBy: DateTime(),
  closedAt: Nullable(DateTime()),
  version: Type.Integer(),
  createdAt: DateTime(),
  updatedAt: DateTime(),
});
const DisputeFieldsIn = {
  periodStart: Type.String({ maxLength: 40, description: 'ISO date or timestamp' }),
  periodEnd: Type.String({ maxLength: 40 }),
  ourAmount: MoneyInput('our figure'),
  theirAmount: MoneyInput("the provider's figure"),
  currency: Type.String({ minLength: 1, maxLength: 3 }),
  reason: Text(4000),
  resolution: Text(4000),
  invoiceRef: Text(120),
};

const Id = Type.Object({ id: Uuid() });

export function providerRoutes(s: {
  subscriptions: SwitchSubscriptions;
  providers: ProviderService;
  disputes: DisputeService;
}) {
  const { subscriptions, providers, disputes } = s;
  return (app: App) => {
    app.get(
      '/switch/providers',
      {
        config: { access: ACCESS },
        schema: {
          tags: TAGS,
          summary: 'Providers with their trunks, and the trunks with no provider',
          description: `Secrets are never shown (only whether each is set). ${GATE}`,
          response: { 200: Ok(Type.Object({ accounts: Type.Array(ProviderRow), ungrouped: Type.Array(Trunk) })) },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        return wire(await providers.list(req.principal!.accountId));
      },
    );

    app.post(
      '/switch/providers',
      {
        config: { access: ACCESS },
        schema: {
          tags: TAGS,
          summary: 'Add a provider (supplier account)',
          description: `409 CONFLICT when the name or accountCode is already used in the account (case-insensitive). ${GATE}`,
          body: ProviderCreate,
          response: { 201: Ok(Provider) },
        },
      },
      async (req, reply) => {
        await subscriptions.require(req.principal!);
        const p = req.principal!;
        reply.code(201);
        return wire(await providers.create(p.accountId, actorOf(p), req.body as never));
      },
    );

    app.get(
      '/switch/providers/:id',
      {
        config: { access: ACCESS },
        schema: {
          tags: TAGS,
          summary: 'One provider with its trunks, their endpoints, and its contacts',
          description: GATE,
          params: Id,
          response: { 200: Ok(ProviderDetail) },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        return wire(await providers.detail(req.principal!.accountId, req.params.id));
      },
    );

    app.patch(
      '/switch/providers/:id',
      {
        config: { access: ACCESS },
        schema: {
          tags: TAGS,
          summary: "Edit a provider's details",
          description:
            'Only the fields given change; `status` is not accepted here (use the status operation). `version` must be ' +
            `the one last read, else 409 \`STALE_WRITE\`. ${GATE}`,
          params: Id,
          body: ProviderPatch,
          response: { 200: Ok(Provider) },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        const p = req.principal!;
        const { version, ...patch } = req.body;
        return wire(await providers.update(p.accountId, actorOf(p), req.params.id, version, patch as never));
      },
    );

    app.post(
      '/switch/providers/:id/status',
      {
        config: { access: ACCESS },
        schema: {
          tags: TAGS,
          summary: "Move a provider's status",
          description:
            'Moves: draft → pending_approval, testing, terminated; pending_approval → draft, testing, active, terminated; ' +
            'testing → active, suspended, terminated; active → suspended, terminated; suspended → active, testing, ' +
            'terminated; terminated is final. Others answer 400 `VALIDATION_ERROR`. Only `active` is routable. ' +
            GATE,
          params: Id,
          body: Type.Object(
            { status: Enum(ProviderStatuses), note: Type.Optional(Text(1000)) },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Provider) },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        const p = req.principal!;
        return wire(
          await providers.setStatus(p.accountId, actorOf(p), req.params.id, req.body.status, req.body.note ?? null),
        );
      },
    );

    app.get(
      '/switch/providers/:id/audit',
      {
        config: { access: ACCESS },
        schema: {
          tags: TAGS,
          summary: 'Every change to a provider, its contacts, disputes, trunks and endpoints',
          description: `Newest first, with the actor and the record before and after (secrets redacted). ${GATE}`,
          params: Id,
          querystring: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })) }),
          response: { 200: Ok(Type.Object({ entries: Type.Array(AuditEntry) })) },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        const accountId = req.principal!.accountId;
        await providers.one(accountId, req.params.id);
        return wire({ entries: await providers.audit(accountId, req.params.id, req.query.limit ?? 100) });
      },
    );

    app.post(
      '/switch/providers/:id/contacts',
      {
        config: { access: ACCESS },
        schema: {
          tags: TAGS,
          summary: 'Add a contact to a provider',
          description: `A NOC or technical contact is one of the readiness checks of its trunks. ${GATE}`,
          params: Id,
          body: Type.Object(
            {
              role: Enum(['noc', 'billing', 'rates', 'sales', 'technical', 'other'] as const),
              name: Type.String({ minLength: 1, maxLength: 160 }),
              email: Type.Optional(Nullable(Type.String({ maxLength: 255, format: 'email' }))),
              phone: Type.Optional(Nullable(Type.String({ maxLength: 40 }))),
            },
            { additionalProperties: false },
          ),
          response: { 201: Ok(Contact) },
        },
      },
      async (req, reply) => {
        await subscriptions.require(req.principal!);
        const p = req.principal!;
        reply.code(201);
        return wire(await providers.addContact(p.accountId, actorOf(p), req.params.id, req.body));
      },
    );

    app.delete(
      '/switch/providers/:id/contacts/:contactId',
      {
        config: { access: ACCESS },
        schema: {
          tags: TAGS,
          summary: 'Remove a contact from a provider',
          description: GATE,
          params: Type.Object({ id: Uuid(), contactId: Uuid() }),
          response: { 200: Ok(Type.Object({ deleted: Type.Literal(true) })) },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        const p = req.principal!;
        await providers.removeContact(p.accountId, actorOf(p), req.params.id, req.params.contactId);
        return wire({ deleted: true as const });
      },
    );

    app.get(
      '/switch/providers/:id/disputes',
      {
        config: { access: ACCESS },
        schema: {
          tags: TAGS,
          summary: "A provider's disputes, newest first",
          description: `\`daysLeft\`: whole days until \`respondBy\` (negative once the window has passed). ${GATE}`,
          params: Id,
          response: { 200: Ok(Type.Array(Type.Object({ ...Dispute.properties, daysLeft: Type.Integer() }))) },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        return wire(await disputes.list(req.principal!.accountId, req.params.id));
      },
    );

    app.post(
      '/switch/providers/:id/disputes',
      {
        config: { access: ACCESS },
        schema: {
          tags: TAGS,
          summary: 'Open a dispute with a provider',
          description:
            'Amounts are numbers or strings with at most 6 decimals, answered as 6-place strings. `respondBy` is ' +
            `\`openedAt\` plus the provider's \`disputeDays\`; \`currency\` defaults to the provider's. ${GATE}`,
          params: Id,
          body: Type.Object(
            {
              periodStart: DisputeFieldsIn.periodStart,
              periodEnd: DisputeFieldsIn.periodEnd,
              ourAmount: DisputeFieldsIn.ourAmount,
              theirAmount: DisputeFieldsIn.theirAmount,
              currency: Type.Optional(DisputeFieldsIn.currency),
              reason: Type.Optional(DisputeFieldsIn.reason),
              resolution: Type.Optional(DisputeFieldsIn.resolution),
              invoiceRef: Type.Optional(DisputeFieldsIn.invoiceRef),
              status: Type.Optional(Enum(['open', 'submitted'] as const)),
            },
            { additionalProperties: false },
          ),
          response: { 201: Ok(Dispute) },
        },
      },
      async (req, reply) => {
        await subscriptions.require(req.principal!);
        const p = req.principal!;
        reply.code(201);
        return wire(await disputes.open(p.accountId, actorOf(p), req.params.id, req.body as never));
      },
    );

    app.patch(
      '/switch/providers/:id/disputes/:disputeId',
      {
        config: { access: ACCESS },
        schema: {
          tags: TAGS,
          summary: 'Edit a dispute or move its status',
          description:
            'Moves: open → submitted, accepted, rejected, withdrawn; submitted → accepted, rejected, withdrawn; ' +
            'accepted → settled; rejected → open, withdrawn; settled and withdrawn are final. `version` must be the one ' +
            `last read, else 409 \`STALE_WRITE\`. ${GATE}`,
          params: Type.Object({ id: Uuid(), disputeId: Uuid() }),
          body: Type.Object(
            {
              version: Type.Integer({ minimum: 1 }),
              ...Object.fromEntries(Object.entries(DisputeFieldsIn).map(([k, s]) => [k, Type.Optional(s)])),
              status: Type.Optional(Enum(DisputeStatuses)),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Dispute) },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        const p = req.principal!;
        const { version, ...patch } = req.body;
        return wire(
          await disputes.update(p.accountId, actorOf(p), req.params.id, req.params.disputeId, version, patch as never),
        );
      },
    );
  };
}
