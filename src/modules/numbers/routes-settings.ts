import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { DateTime, Money, Nullable, Ok, Uuid, ok } from '../../http/envelope.js';
import type { NumberSettings } from './number-settings.js';
import type { Reservations } from './reservations.js';
import { Did, EmergencyAddress, ProvisionState, READ, TAGS, WRITE } from './schemas.js';

const IdParams = Type.Object({ id: Uuid() });
const Tags = Type.Array(Type.String({ minLength: 1, maxLength: 32 }), { maxItems: 20 });

const Reservation = Type.Object({
  id: Uuid(),
  groupId: Uuid(),
  numberId: Uuid(),
  number: Type.String({ description: 'digits' }),
  status: Type.Union([
    Type.Literal('held'),
    Type.Literal('bought'),
    Type.Literal('cancelled'),
    Type.Literal('expired'),
  ]),
  didId: Nullable(Uuid()),
  expiresAt: DateTime(),
  createdAt: DateTime(),
});

/** Holds on numbers and the owner's per-number settings (designed operations; docs/numbers.md). */
export function settingsRoutes(deps: { reservations: Reservations; settings: NumberSettings }) {
  const { reservations, settings } = deps;
  return (app: App) => {
    app.post(
      '/dids/reservations',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Hold a number for a few minutes before buying it',
          description:
            '`numberId` (a search hit) holds that number; without it any available number of the group. The number ' +
            'leaves the catalogue and search until bought (`POST /dids/reservations/{id}/buy`), cancelled or expired. ' +
            '`minutes` 1 to `[numbers] reservation_max_minutes` (default 15). 409 when the number is not available.',
          body: Type.Object(
            {
              groupId: Uuid(),
              numberId: Type.Optional(Uuid()),
              minutes: Type.Optional(Type.Integer({ minimum: 1, maximum: 1440 })),
            },
            { additionalProperties: false },
          ),
          response: { 201: Ok(Reservation) },
        },
      },
      async (req, reply) => reply.code(201).send(ok(await reservations.hold(req.principal!.accountId, req.body))),
    );

    app.get(
      '/dids/reservations',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "The caller's held numbers, newest first",
          response: { 200: Ok(Type.Array(Reservation)) },
        },
      },
      async (req) => ok(await reservations.list(req.principal!.accountId)),
    );

    app.delete(
      '/dids/reservations/:id',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Cancel a hold: the number goes back on sale',
          params: IdParams,
          response: { 200: Ok(Reservation) },
        },
      },
      async (req) => ok(await reservations.cancel(req.principal!.accountId, req.params.id)),
    );

    app.post(
      '/dids/reservations/:id/buy',
      {
        config: { access: WRITE, idempotent: true },
        schema: {
          tags: TAGS,
          summary: 'Buy the held number: setup plus the first month, as `POST /dids/buy`',
          description: '404 when the hold expired or was cancelled; other answers as `POST /dids/buy`.',
          params: IdParams,
          body: Type.Object(
            {
              skuId: Type.String({ minLength: 1, maxLength: 64 }),
              subAccountId: Type.Optional(Uuid("that sub-account's balance pays and the number is theirs")),
            },
            { additionalProperties: false },
          ),
          response: { 201: Ok(Did) },
        },
      },
      async (req, reply) =>
        reply.code(201).send(ok(await reservations.buy(req.principal!.accountId, req.params.id, req.body))),
    );

    app.put(
      '/dids/:id/tags',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: "Replace the number's tags (filter `GET /dids/mine?tag=`)",
          description: 'Up to 20 tags of letters, digits and `_ . : -` (1 to 32); repeats are kept once.',
          params: IdParams,
          body: Type.Object({ tags: Tags }, { additionalProperties: false }),
          response: { 200: Ok(Did) },
        },
      },
      async (req) => ok(await settings.setTags(req.principal!.accountId, req.params.id, req.body.tags)),
    );

    app.put(
      '/dids/:id/caller-name',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: "Set the number's caller name (CNAM) listing; null clears it",
          description: "US and Canadian numbers only (400 otherwise); up to 15 letters, digits, spaces and `.,&'-`.",
          params: IdParams,
          body: Type.Object(
            { callerName: Nullable(Type.String({ pattern: "^[A-Za-z0-9 .,&'-]{1,15}$" })) },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Did) },
        },
      },
      async (req) => ok(await settings.setCallerName(req.principal!.accountId, req.params.id, req.body.callerName)),
    );

    app.put(
      '/dids/:id/emergency-address',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Set the address given with emergency calls from the number',
          description: "`countryCode` must be the number's country.",
          params: IdParams,
          body: EmergencyAddress,
          response: { 200: Ok(Did) },
        },
      },
      async (req) => ok(await settings.setEmergencyAddress(req.principal!.accountId, req.params.id, req.body)),
    );

    app.delete(
      '/dids/:id/emergency-address',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: "Remove the number's emergency address",
          params: IdParams,
          response: { 200: Ok(Did) },
        },
      },
      async (req) => ok(await settings.setEmergencyAddress(req.principal!.accountId, req.params.id, null)),
    );

    app.post(
      '/dids/:id/scheduled-release',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Release the number at a later time',
          description:
            'The release sweep releases it at `releaseAt` (future, within a year): `number.released` with reason ' +
            '`scheduled`, no refund. A renewal due before then is still charged. Replaces an earlier schedule.',
          params: IdParams,
          body: Type.Object({ releaseAt: DateTime() }, { additionalProperties: false }),
          response: { 200: Ok(Did) },
        },
      },
      async (req) =>
        ok(await settings.scheduleRelease(req.principal!.accountId, req.params.id, new Date(req.body.releaseAt))),
    );

    app.delete(
      '/dids/:id/scheduled-release',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Cancel a scheduled release',
          description: '400 when none is scheduled.',
          params: IdParams,
          response: { 200: Ok(Did) },
        },
      },
      async (req) => ok(await settings.cancelRelease(req.principal!.accountId, req.params.id)),
    );

    app.patch(
      '/dids/bulk',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Change auto-renew, label or tags of many numbers at once',
          description:
            'All or nothing: every id must be a live number of yours (else 400 naming `didIds/<i>`). Label empty or ' +
            "null clears it; tags replace the numbers' tags.",
          body: Type.Object(
            {
              didIds: Type.Array(Uuid(), { minItems: 1, maxItems: 1000 }),
              autoRenew: Type.Optional(Type.Boolean()),
              label: Type.Optional(Nullable(Type.String({ maxLength: 60 }))),
              tags: Type.Optional(Tags),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Type.Object({ updated: Type.Integer(), didIds: Type.Array(Uuid()) })) },
        },
      },
      async (req) => ok(await settings.bulkUpdate(req.principal!.accountId, req.body)),
    );

    app.get(
      '/dids/:id/features',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'What the number can do now and what using it costs',
          params: IdParams,
          response: {
            200: Ok(
              Type.Object({
                didId: Uuid(),
                status: Type.String(),
                voice: Type.Object({
                  inbound: Type.Boolean(),
                  channels: Type.Integer(),
                  inboundRatePerMinute: Nullable(Money()),
                  pointMode: Type.String(),
                }),
                sms: Type.Object({
                  inbound: Type.Boolean(),
                  outbound: Type.Boolean(),
                  inboundPrice: Nullable(Money()),
                }),
                callerName: Type.Object({
                  supported: Type.Boolean(),
                  value: Nullable(Type.String()),
                  provisioning: Nullable(ProvisionState),
                }),
                emergency: Type.Object({ addressSet: Type.Boolean(), provisioning: Nullable(ProvisionState) }),
                aiAgent: Type.Object({ attached: Type.Boolean() }),
                callerId: Type.Object({ usable: Type.Boolean() }),
              }),
            ),
          },
        },
      },
      async (req) => ok(await settings.features(req.principal!.accountId, req.params.id)),
    );

    app.get(
      '/dids/:id/provisioning',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "Where the number's caller name and emergency address stand at the provisioning provider",
          description:
            '`not_provisioned` (no provider configured: `error` says so), `pending` (sent or retried by the job), ' +
            "`provisioned`, `failed` (the provider's error). A kind never set is null.",
          params: IdParams,
          response: {
            200: Ok(
              Type.Object({
                didId: Uuid(),
                callerName: Nullable(ProvisionState),
                emergency: Nullable(ProvisionState),
              }),
            ),
          },
        },
      },
      async (req) => ok(await settings.provisioningOf(req.principal!.accountId, req.params.id)),
    );

    app.get(
      '/dids/:id/charges',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'What the number has cost: order, renewals, reactivations, messages sent and received',
          description: 'Newest first; `from` inclusive, `to` exclusive; `total` sums the items returned.',
          params: IdParams,
          querystring: Type.Object({
            from: Type.Optional(DateTime()),
            to: Type.Optional(DateTime()),
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 100 })),
          }),
          response: {
            200: Ok(
              Type.Object({
                items: Type.Array(
                  Type.Object({
                    kind: Type.Union([
                      Type.Literal('order'),
                      Type.Literal('renewal'),
                      Type.Literal('reactivation'),
                      Type.Literal('sms_sent'),
                      Type.Literal('sms_received'),
                    ]),
                    amount: Money(),
                    transactionId: Nullable(Uuid()),
                    messageId: Nullable(Uuid()),
                    at: DateTime(),
                  }),
                ),
                total: Money(),
                truncated: Type.Boolean(),
              }),
            ),
          },
        },
      },
      async (req) =>
        ok(
          await settings.charges(req.principal!.accountId, req.params.id, {
            from: req.query.from ? new Date(req.query.from) : undefined,
            to: req.query.to ? new Date(req.query.to) : undefined,
            limit: req.query.limit ?? 100,
          }),
        ),
    );
  };
}
