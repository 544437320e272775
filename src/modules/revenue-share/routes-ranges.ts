/** Revenue share ranges: the holders' catalogue, and the ranges the operator opens and suppliers keep. */
import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { CursorPage, Money, Ok, Uuid, ok } from '../../http/envelope.js';
import { cursorPage, CursorQuery } from '../../http/pagination.js';
import type { Principal, Ranges } from './ranges.js';
import {
  InventoryNumber,
  NumberType,
  PayoutRow,
  Range,
  RangeStatus,
  READ,
  ReleaseOn,
  SupplierRange,
  TAGS,
  WRITE,
} from './schemas.js';

const IdParams = Type.Object({ id: Uuid() });
const Ip = Type.String({ maxLength: 45, description: 'IPv4 or IPv6 signalling address of the supplier' });

const RangeFields = {
  name: Type.String({ minLength: 1, maxLength: 120 }),
  ratePerMinute: Money(),
  payouts: Type.Array(PayoutRow, { minItems: 1, maxItems: 500 }),
  billingIncrement: Type.Optional(
    Type.String({ maxLength: 9, description: '<initial>/<increment> seconds (default 1/1)' }),
  ),
  holdDays: Type.Optional(Type.Integer({ minimum: 0, maximum: 365 })),
  releaseOn: Type.Optional(ReleaseOn),
  sourceIps: Type.Array(Ip, { maxItems: 64 }),
  maxCallSeconds: Type.Optional(Type.Integer({ minimum: 10, maximum: 14400 })),
};

export const principalOf = (req: {
  principal?: { accountId: string; role: 'customer' | 'admin' } | null;
}): Principal => ({
  accountId: req.principal!.accountId,
  role: req.principal!.role,
});

export function rangeRoutes(ranges: Ranges) {
  return (app: App) => {
    app.get(
      '/revenue-share/ranges',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'The catalogue of revenue share ranges with payouts per minute by origin',
          description:
            'Active ranges, newest first, with `available` numbers, test numbers and payout rows (the longest origin prefix ' +
            'matching a caller wins; an empty origin matches every caller). `as=supplier` lists instead the ranges the caller ' +
            'supplies (every range for the operator) in any status, with the rate the supplier owes per minute, its addresses ' +
            'and counts.',
          querystring: Type.Object({
            countryCode: Type.Optional(Type.String({ minLength: 2, maxLength: 2 })),
            numberType: Type.Optional(NumberType),
            search: Type.Optional(Type.String({ maxLength: 60, description: 'name, country or dialling prefix' })),
            as: Type.Optional(Type.Union([Type.Literal('holder'), Type.Literal('supplier')], { default: 'holder' })),
            ...CursorQuery(),
          }),
          response: { 200: CursorPage(Type.Union([SupplierRange, Range])) },
        },
      },
      async (req) => {
        const q = req.query;
        const limit = q.limit ?? 25;
        const rows =
          q.as === 'supplier'
            ? await ranges.supplierRanges(principalOf(req), { limit, cursor: q.cursor })
            : await ranges.catalogue({ ...q, limit });
        return cursorPage(rows, limit);
      },
    );

    app.get(
      '/revenue-share/ranges/:id',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'One range (its supplier and the operator see the supplier fields)',
          params: IdParams,
          response: { 200: Ok(Type.Union([SupplierRange, Range])) },
        },
      },
      async (req) => ok(await ranges.get(principalOf(req), req.params.id)),
    );

    app.get(
      '/revenue-share/countries',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'Countries with active ranges: count, free numbers and the best payout per minute',
          response: {
            200: Ok(
              Type.Array(
                Type.Object({
                  countryCode: Type.String(),
                  country: Type.String(),
                  ranges: Type.Integer(),
                  available: Type.Integer(),
                  bestPayoutPerMinute: Money(),
                }),
              ),
            ),
          },
        },
      },
      async () => ok(await ranges.countries()),
    );

    app.post(
      '/revenue-share/ranges',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Open a range for a supplier (operator only)',
          description:
            '`supplierId` (default: the operator) is the carrier whose traffic the range receives and who owes `ratePerMinute` ' +
            'per answered minute; each payout row must not exceed it. INVITEs are taken only from `sourceIps` (public ' +
            'addresses; `[security] private_trunk_networks` lets private ones through). `releaseOn`: `hold_period` releases ' +
            "a call's earnings `holdDays` after it; `supplier_payment` also waits until a supplier payment covers its day. " +
            '409 when the supplier already has a range with this prefix.',
          body: Type.Object(
            {
              supplierId: Type.Optional(Uuid()),
              countryCode: Type.String({ pattern: '^[A-Za-z]{2}$' }),
              country: Type.String({ minLength: 1, maxLength: 120 }),
              prefix: Type.String({ pattern: '^[1-9][0-9]{0,14}$' }),
              numberType: NumberType,
              ...RangeFields,
            },
            { additionalProperties: false },
          ),
          response: { 201: Ok(SupplierRange) },
        },
      },
      async (req, reply) => reply.code(201).send(ok(await ranges.create(principalOf(req), req.body))),
    );

    app.patch(
      '/revenue-share/ranges/:id',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: "Change a range's rates, payouts, hold, addresses or status (its supplier or the operator)",
          description:
            'New rates and payouts apply to calls that end afterwards. `paused`: its numbers refuse calls (480) and leave the ' +
            'catalogue; `retired` is final and its numbers are no longer answered.',
          params: IdParams,
          body: Type.Object(
            {
              name: Type.Optional(RangeFields.name),
              ratePerMinute: Type.Optional(Money()),
              payouts: Type.Optional(RangeFields.payouts),
              billingIncrement: RangeFields.billingIncrement,
              holdDays: RangeFields.holdDays,
              releaseOn: RangeFields.releaseOn,
              sourceIps: Type.Optional(RangeFields.sourceIps),
              maxCallSeconds: RangeFields.maxCallSeconds,
              status: Type.Optional(RangeStatus),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(SupplierRange) },
        },
      },
      async (req) => ok(await ranges.update(principalOf(req), req.params.id, req.body)),
    );

    app.post(
      '/revenue-share/ranges/:id/numbers',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary:
            "Load numbers into a range (its supplier or the operator); `test: true` loads the range's test numbers",
          description:
            "Every number must start with the range's prefix (each bad one named in `details`); numbers already known are " +
            'skipped and listed. A test number answers anyone calling from the supplier’s addresses and earns nothing.',
          params: IdParams,
          body: Type.Object(
            {
              numbers: Type.Array(Type.String({ pattern: '^[1-9][0-9]{6,14}$' }), { minItems: 1, maxItems: 10000 }),
              test: Type.Optional(Type.Boolean({ default: false })),
            },
            { additionalProperties: false },
          ),
          response: { 201: Ok(Type.Object({ added: Type.Integer(), skipped: Type.Array(Type.String()) })) },
        },
      },
      async (req, reply) =>
        reply.code(201).send(ok(await ranges.addNumbers(principalOf(req), req.params.id, req.body))),
    );

    app.get(
      '/revenue-share/ranges/:id/numbers',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "A range's numbers with their state and holder (its supplier or the operator)",
          params: IdParams,
          querystring: Type.Object({
            state: Type.Optional(
              Type.Union([Type.Literal('available'), Type.Literal('allocated'), Type.Literal('withdrawn')]),
            ),
            ...CursorQuery(50, 100),
          }),
          response: { 200: CursorPage(InventoryNumber) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 50;
        return cursorPage(await ranges.inventory(principalOf(req), req.params.id, { ...req.query, limit }), limit);
      },
    );
  };
}
