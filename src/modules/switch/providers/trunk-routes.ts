import { Type, type TSchema } from 'typebox';
import type { App } from '../../../http/app.js';
import { DateTime, Money, Nullable, Ok, OffsetPage, Uuid } from '../../../http/envelope.js';
import { validationError } from '../../../http/errors.js';
import { SmsDeliveryTest } from '../../sms/delivery-test.js';
import type { SwitchSubscriptions } from '../subscriptions.js';
import { actorOf, type SwitchAudit } from './audit.js';
import type { TrunkDelivery } from './delivery.js';
import type { EndpointService } from './endpoints.js';
import { MAX_UPLOAD_ROWS, parseDeckCsv, type RateService } from './rates.js';
import type { Readiness } from './readiness.js';
import type { TrunkService } from './trunks.js';
import { Endpoint, Enum, MoneyInput, Trunk, TrunkStatuses, wire } from './views.js';

const TAGS = ['Switch'];
const ACCESS = { auth: 'required', scope: 'switch:manage' } as const;
const GATE =
  'Needs an active Switch plan or trial (else 402 `SWITCH_SUBSCRIPTION_REQUIRED`); test keys may read, their writes get 403.';
const TEST_SMS_PER_MINUTE = 20;

const Text = (max: number) => Nullable(Type.String({ maxLength: max }));
const Transport = Enum(['udp', 'tcp', 'tls'] as const);

const TrunkFieldsIn = {
  supplierId: Nullable(Uuid('the provider; null: ungrouped')),
  sipHost: Nullable(Type.String({ minLength: 1, maxLength: 255, description: 'must pass the outbound guard' })),
  sipPort: Type.Integer({ minimum: 1, maximum: 65535 }),
  transport: Transport,
  techPrefix: Nullable(Type.String({ pattern: '^[0-9#*]{1,16}$' })),
  sipAuthUsername: Text(128),
  sipAuthPassword: Nullable(Type.String({ maxLength: 128, description: 'write-only; stored sealed; null clears' })),
  mediaMode: Enum(['proxy', 'direct'] as const),
  defaultRatePerUnit: MoneyInput('cost per minute when no deck row matches'),
  billingIncrement: Type.String({ pattern: '^\\d{1,4}/\\d{1,4}$', description: 'e.g. 60/60' }),
  currency: Type.String({ minLength: 1, maxLength: 3 }),
  capacity: Type.Integer({ minimum: 0, maximum: 100000, description: 'max concurrent channels' }),
  maxCps: Type.Integer({ minimum: 0, maximum: 10000 }),
  settlementMode: Enum(['ap', 'prepaid'] as const),
  smsDeliveryMethod: Nullable(Enum(['http', 'smpp'] as const)),
  smsDeliveryUrl: Nullable(Type.String({ maxLength: 500, description: 'https only; must pass the outbound guard' })),
  smppHost: Nullable(Type.String({ minLength: 1, maxLength: 255 })),
  smppPort: Nullable(Type.Integer({ minimum: 1, maximum: 65535 })),
  smppSystemId: Nullable(Type.String({ minLength: 1, maxLength: 16 })),
  smppPassword: Nullable(Type.String({ maxLength: 64, description: 'write-only; stored sealed; null clears' })),
  smppBindType: Nullable(Enum(['transceiver', 'transmitter'] as const)),
  smppSystemType: Text(13),
  smppTps: Nullable(Type.Integer({ minimum: 1, maximum: 1000 })),
  portalEmail: Nullable(Type.String({ maxLength: 255, format: 'email' })),
  readinessExempt: Type.Boolean({ description: 'skip readiness checks; needs exemptReason' }),
  exemptReason: Text(500),
};
const optional = (o: Record<string, TSchema>) =>
  Object.fromEntries(Object.entries(o).map(([k, s]) => [k, Type.Optional(s)]));
const Label = Type.String({ minLength: 1, maxLength: 120 });

const EndpointFieldsIn = {
  role: Enum(['primary', 'backup'] as const),
  port: Type.Integer({ minimum: 1, maximum: 65535 }),
  transport: Transport,
  priority: Type.Integer({ minimum: 1, maximum: 100 }),
  weightPct: Type.Integer({ minimum: 0, maximum: 100 }),
  enabled: Type.Boolean(),
  optionsIntervalSeconds: Nullable(Type.Integer({ minimum: 10, maximum: 3600 })),
  failureThreshold: Nullable(Type.Integer({ minimum: 1, maximum: 20 })),
  recoveryThreshold: Nullable(Type.Integer({ minimum: 1, maximum: 20 })),
  autoDisable: Type.Boolean(),
};
const Host = Type.String({ minLength: 1, maxLength: 255, description: 'must pass the outbound guard' });

const Check = Type.Object({
  id: Type.String(),
  spec: Type.String(),
  title: Type.String(),
  status: Enum(['pass', 'warn', 'fail'] as const),
  evidence: Type.String(),
  fix: Type.String(),
});
const ReadinessOut = Type.Object({
  trunkId: Uuid(),
  exempt: Type.Boolean(),
  exemptReason: Nullable(Type.String()),
  state: Enum(['ready', 'not_ready', 'exempt'] as const),
  checks: Type.Array(Check),
  failing: Type.Integer(),
  warning: Type.Integer(),
  grandfathered: Type.Boolean({ description: 'active while failing checks (activated before they failed)' }),
  blockingEnabled: Type.Boolean({ description: 'failing checks block activation (always, for an external trunk)' }),
});
const VersionOut = Type.Object({
  id: Uuid(),
  version: Type.Integer(),
  source: Type.String(),
  changedFields: Type.Array(Type.String()),
  diff: Type.Unknown(),
  note: Nullable(Type.String()),
  checksum: Type.String({ description: 'sha256 of the snapshot' }),
  changeRequestId: Nullable(Uuid()),
  actorUserId: Nullable(Uuid()),
  createdAt: DateTime(),
});
const DeckRow = Type.Object({
  id: Uuid(),
  vendorTrunkId: Uuid(),
  prefix: Type.String(),
  originPrefix: Type.String(),
  ratePerUnit: Money(),
  destinationName: Nullable(Type.String()),
  billingIncrement: Nullable(Type.String()),
  status: Type.String(),
  effectiveFrom: DateTime(),
});

const Id = Type.Object({ id: Uuid() });
const EndpointId = Type.Object({ id: Uuid(), endpointId: Uuid() });

export function trunkRoutes(s: {
  subscriptions: SwitchSubscriptions;
  trunks: TrunkService;
  endpoints: EndpointService;
  readiness: Readiness;
  audit: SwitchAudit;
  rates: RateService;
  delivery: TrunkDelivery;
}) {
  const { subscriptions, trunks, endpoints, readiness, audit, rates, delivery } = s;
  return (app: App) => {
    app.post(
      '/switch/suppliers',
      {
        config: { access: ACCESS },
        schema: {
          tags: TAGS,
          summary: 'Add a supplier trunk',
          description:
            'An external trunk, in a provider (`supplierId`) or ungrouped. Passwords are write-only and stored sealed; ' +
            'hosts and the SMS delivery URL must pass the outbound guard (400 otherwise). Created `draft` unless ' +
            `\`status\` says testing or disabled; activation goes through the status operation. ${GATE}`,
          body: Type.Object(
            {
              label: Label,
              ...optional(TrunkFieldsIn),
              status: Type.Optional(Enum(['draft', 'testing', 'disabled'] as const)),
            },
            { additionalProperties: false },
          ),
          response: { 201: Ok(Trunk) },
        },
      },
      async (req, reply) => {
        await subscriptions.require(req.principal!);
        const p = req.principal!;
        reply.code(201);
        return wire(await trunks.create(p.accountId, actorOf(p), req.body as never));
      },
    );

    app.get(
      '/switch/suppliers/:id',
      {
        config: { access: ACCESS },
        schema: {
          tags: TAGS,
          summary: 'One supplier trunk',
          description: GATE,
          params: Id,
          response: { 200: Ok(Trunk) },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        return wire(await trunks.one(req.principal!.accountId, req.params.id));
      },
    );

    app.patch(
      '/switch/suppliers/:id',
      {
        config: { access: ACCESS },
        schema: {
          tags: TAGS,
          summary: "Edit a supplier trunk's configuration",
          description:
            'Only the fields given change; each change is a configuration version. `version` must be the one last ' +
            `read, else 409 \`STALE_WRITE\`; \`note\` is kept on the version. ${GATE}`,
          params: Id,
          body: Type.Object(
            {
              version: Type.Integer({ minimum: 1 }),
              note: Type.Optional(Type.String({ maxLength: 1000 })),
              label: Type.Optional(Label),
              ...optional(TrunkFieldsIn),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Trunk) },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        const p = req.principal!;
        const { version, ...patch } = req.body;
        return wire(await trunks.update(p.accountId, actorOf(p), req.params.id, version, patch as never));
      },
    );

    app.post(
      '/switch/suppliers/:id/status',
      {
        config: { access: ACCESS },
        schema: {
          tags: TAGS,
          summary: "Move a supplier trunk's status (activation is readiness-gated)",
          description:
            'Moves: draft → testing, active, disabled; testing → active, draft, disabled; active → draining, fault, ' +
            'testing, disabled; draining → active, disabled; fault → active, testing, disabled; disabled → draft, ' +
            'testing, active. Into `active`, failing readiness checks (not warnings) refuse with 400 ' +
            `\`VALIDATION_ERROR\` and \`details { code: TRUNK_NOT_READY, blockers[] { id, title, evidence, fix } }\`. ${GATE}`,
          params: Id,
          body: Type.Object(
            { status: Enum(TrunkStatuses), note: Type.Optional(Text(1000)) },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Trunk) },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        const p = req.principal!;
        return wire(
          await trunks.setStatus(p.accountId, actorOf(p), req.params.id, req.body.status, req.body.note ?? null),
        );
      },
    );

    app.get(
      '/switch/suppliers/:id/readiness',
      {
        config: { access: ACCESS },
        schema: {
          tags: TAGS,
          summary: 'Whether a supplier trunk is ready to carry traffic',
          description: `A pure read: changes nothing and never blocks. Marketplace trunks and exempt ones have no checks. ${GATE}`,
          params: Id,
          response: { 200: Ok(ReadinessOut) },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        return wire(await readiness.evaluate(req.principal!.accountId, req.params.id));
      },
    );

    app.get(
      '/switch/suppliers/:id/config-history',
      {
        config: { access: ACCESS },
        schema: {
          tags: TAGS,
          summary: "A supplier trunk's configuration versions, newest first",
          description: `One version per change of its configuration or endpoints; secrets never appear. ${GATE}`,
          params: Id,
          querystring: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })) }),
          response: { 200: Ok(Type.Array(VersionOut)) },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        await trunks.one(req.principal!.accountId, req.params.id);
        return wire(await audit.history(req.params.id, req.query.limit ?? 50));
      },
    );

    app.get(
      '/switch/suppliers/:id/config-history/:versionId',
      {
        config: { access: ACCESS },
        schema: {
          tags: TAGS,
          summary: 'One configuration version with its snapshot and the previous one',
          description: GATE,
          params: Type.Object({ id: Uuid(), versionId: Uuid() }),
          response: {
            200: Ok(
              Type.Object({
                ...VersionOut.properties,
                snapshot: Type.Unknown(),
                previous: Nullable(
                  Type.Object({ id: Uuid(), version: Type.Integer(), snapshot: Type.Unknown(), createdAt: DateTime() }),
                ),
              }),
            ),
          },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        await trunks.one(req.principal!.accountId, req.params.id);
        return wire(await audit.historyOne(req.params.id, req.params.versionId));
      },
    );

    app.get(
      '/switch/suppliers/:id/credentials',
      {
        config: { access: { ...ACCESS, denyTestKeys: true } },
        schema: {
          tags: TAGS,
          summary: "A supplier trunk's stored credentials in clear",
          description: `The only read that shows the SIP and SMPP passwords. Test keys are refused (403): a secret is not theirs to read. ${GATE}`,
          params: Id,
          response: {
            200: Ok(
              Type.Object({
                sipAuthUsername: Nullable(Type.String()),
                sipAuthPassword: Nullable(Type.String()),
                smppSystemId: Nullable(Type.String()),
                smppPassword: Nullable(Type.String()),
              }),
            ),
          },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        return wire(await trunks.credentials(req.principal!.accountId, req.params.id));
      },
    );

    app.get(
      '/switch/suppliers/:id/endpoints',
      {
        config: { access: ACCESS },
        schema: {
          tags: TAGS,
          summary: "A supplier trunk's SIP endpoints",
          description: `A trunk with an address and no endpoint rows has the address adopted as endpoint 1 on this first read. ${GATE}`,
          params: Id,
          response: { 200: Ok(Type.Array(Endpoint)) },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        return wire(await endpoints.list(req.principal!.accountId, req.params.id));
      },
    );

    app.post(
      '/switch/suppliers/:id/endpoints',
      {
        config: { access: ACCESS },
        schema: {
          tags: TAGS,
          summary: 'Add a SIP endpoint to a supplier trunk',
          description: `The host must pass the outbound guard. 409 when the trunk has one at the same host, port and transport. ${GATE}`,
          params: Id,
          body: Type.Object({ host: Host, ...optional(EndpointFieldsIn) }, { additionalProperties: false }),
          response: { 201: Ok(Endpoint) },
        },
      },
      async (req, reply) => {
        await subscriptions.require(req.principal!);
        const p = req.principal!;
        reply.code(201);
        return wire(await endpoints.add(p.accountId, actorOf(p), req.params.id, req.body as never));
      },
    );

    app.patch(
      '/switch/suppliers/:id/endpoints/:endpointId',
      {
        config: { access: ACCESS },
        schema: {
          tags: TAGS,
          summary: 'Edit a SIP endpoint',
          description: GATE,
          params: EndpointId,
          body: Type.Object(
            { host: Type.Optional(Host), ...optional(EndpointFieldsIn) },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Endpoint) },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        const p = req.principal!;
        return wire(
          await endpoints.update(p.accountId, actorOf(p), req.params.id, req.params.endpointId, req.body as never),
        );
      },
    );

    app.delete(
      '/switch/suppliers/:id/endpoints/:endpointId',
      {
        config: { access: ACCESS },
        schema: {
          tags: TAGS,
          summary: 'Remove a SIP endpoint',
          description: `The last endpoint of a trunk cannot be removed (409 CONFLICT). ${GATE}`,
          params: EndpointId,
          response: { 200: Ok(Type.Object({ deleted: Type.Literal(true) })) },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        const p = req.principal!;
        return wire(await endpoints.remove(p.accountId, actorOf(p), req.params.id, req.params.endpointId));
      },
    );

    app.post(
      '/switch/suppliers/:id/reachability',
      {
        config: { access: ACCESS, rateLimit: { points: 10, seconds: 60 } },
        schema: {
          tags: TAGS,
          summary: "Probe a supplier trunk's enabled endpoints with SIP OPTIONS",
          description:
            "One real OPTIONS to each enabled endpoint through the outbound guard (kept in the account's reachability " +
            "tests); sets each endpoint's result and the trunk's `reachable` (any enabled endpoint answered 2xx) and " +
            `\`reachCheckedAt\`. A test key gets 403 \`TEST_KEY_NOT_ALLOWED\`: the result is Switch data. 10 per minute. ${GATE}`,
          params: Id,
          response: {
            200: Ok(
              Type.Object({
                reachable: Type.Boolean(),
                reachCheckedAt: DateTime(),
                endpoints: Type.Array(
                  Type.Object({
                    id: Uuid(),
                    reachable: Type.Boolean(),
                    status: Nullable(Type.Integer()),
                    rttMs: Nullable(Type.Number()),
                  }),
                ),
              }),
            ),
          },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        return wire(await delivery.checkReachability(req.principal!.accountId, req.params.id));
      },
    );

    app.post(
      '/switch/suppliers/:id/test-sms',
      {
        config: { access: { ...ACCESS, testKeys: 'allow' }, rateLimit: { points: TEST_SMS_PER_MINUTE, seconds: 60 } },
        schema: {
          tags: TAGS,
          summary: "Check a saved trunk's SMS delivery details",
          description:
            'SMPP: one real bind with the stored credentials, then unbind; nothing is sent. HTTP: the stored URL is checked ' +
            `only for a well-formed https URL. ${TEST_SMS_PER_MINUTE} per minute per credential; test keys may use it. ${GATE}`,
          params: Id,
          response: { 200: Ok(SmsDeliveryTest) },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        return wire(await delivery.testSms(req.principal!.accountId, req.params.id));
      },
    );

    app.post(
      '/switch/suppliers/:id/portal-invite',
      {
        config: { access: ACCESS, rateLimit: { points: 10, seconds: 60 } },
        schema: {
          tags: TAGS,
          summary: "E-mail a supplier portal sign-in link to the trunk's portal address",
          description:
            "To the trunk's `portalEmail`, else its provider's; 400 `VALIDATION_ERROR` when neither is set. The link " +
            `is valid for 7 days. ${GATE}`,
          params: Id,
          response: { 200: Ok(Type.Object({ sent: Type.Literal(true), to: Type.String() })) },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        return wire(await delivery.portalInvite(req.principal!.accountId, req.params.id));
      },
    );

    app.get(
      '/switch/suppliers/:id/rates',
      {
        config: { access: ACCESS },
        schema: {
          tags: TAGS,
          summary: "A supplier trunk's cost deck: the rows in force",
          description: `Per prefix and origin, the newest row whose effective time has come; scheduled and archived rows are left out. ${GATE}`,
          params: Id,
          querystring: Type.Object({
            search: Type.Optional(
              Type.String({ pattern: '^[0-9]{1,16}$', description: 'digits; matches the start of the prefix' }),
            ),
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
            offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000_000, default: 0 })),
          }),
          response: { 200: OffsetPage(DeckRow) },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        const q = req.query;
        return wire(
          await rates.active(req.principal!.accountId, req.params.id, {
            ...(q.search ? { search: q.search } : {}),
            limit: q.limit ?? 100,
            offset: q.offset ?? 0,
          }),
        );
      },
    );

    app.post(
      '/switch/suppliers/:id/rates',
      {
        config: { access: ACCESS, rateLimit: { points: 10, seconds: 60 } },
        schema: {
          tags: TAGS,
          summary: 'Upload cost-deck rows (JSON rows or CSV text)',
          description:
            'Either `rows[] { prefix, originPrefix, ratePerUnit, destinationName, billingIncrement, effectiveFrom }` or ' +
            '`csv`: a header naming `prefix` and `rate` (and optionally `effective_date`, `destination`, `origin_prefix`, ' +
            '`billing_increment`), one row per line. A row effective now or earlier replaces (archives) the row of its ' +
            `prefix and origin in force; a later one is scheduled. Up to ${MAX_UPLOAD_ROWS} rows; every bad cell is named ` +
            `in \`details\` and nothing is stored. ${GATE}`,
          params: Id,
          body: Type.Object(
            {
              rows: Type.Optional(
                Type.Array(
                  Type.Object(
                    {
                      prefix: Type.String({ maxLength: 16 }),
                      originPrefix: Type.Optional(Type.String({ maxLength: 16 })),
                      ratePerUnit: MoneyInput('cost per minute'),
                      destinationName: Type.Optional(Nullable(Type.String({ maxLength: 120 }))),
                      billingIncrement: Type.Optional(Nullable(Type.String({ maxLength: 9 }))),
                      effectiveFrom: Type.Optional(Type.String({ maxLength: 40 })),
                    },
                    { additionalProperties: false },
                  ),
                  { maxItems: MAX_UPLOAD_ROWS },
                ),
              ),
              csv: Type.Optional(Type.String({ maxLength: 2_000_000 })),
            },
            { additionalProperties: false },
          ),
          response: {
            200: Ok(
              Type.Object({
                added: Type.Integer(),
                active: Type.Integer(),
                scheduled: Type.Integer(),
                archived: Type.Integer(),
              }),
            ),
          },
        },
      },
      async (req) => {
        await subscriptions.require(req.principal!);
        const { rows, csv } = req.body;
        if ((rows === undefined) === (csv === undefined))
          throw validationError([{ path: '/rows', message: 'send either rows or csv' }]);
        const p = req.principal!;
        return wire(await rates.upload(p.accountId, actorOf(p), req.params.id, rows ?? (await parseDeckCsv(csv!))));
      },
    );
  };
}
