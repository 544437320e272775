import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import type { Principal } from '../../http/access.js';
import { CursorPage, DateTime, Nullable, Ok, Uuid, ok } from '../../http/envelope.js';
import { forbidden } from '../../http/errors.js';
import { cursorPage, CursorQuery } from '../../http/pagination.js';
import { CSV_COLUMNS, MAX_IMPORT_ROWS, parseInventoryCsv, type Inventory } from './inventory.js';
import type { ListingRequests } from './listing.js';
import { READ, TAGS, WRITE } from './schemas.js';

const isOperator = (p: Principal) => p.role === 'admin';
const requireOperator = (p: Principal) => {
  if (!isOperator(p)) throw forbidden('Only the platform operator reviews listing requests');
};

const Amount = Type.String({ pattern: '^\\d{1,14}(\\.\\d{1,6})?$', description: 'USD, up to 6 decimals' });

const Item = Type.Object(
  {
    number: Type.String({ minLength: 1, maxLength: 16, description: 'E.164, with or without +' }),
    countryCode: Type.String({ minLength: 2, maxLength: 2 }),
    country: Type.String({ minLength: 1, maxLength: 120 }),
    countryPrefix: Type.String({ minLength: 1, maxLength: 4 }),
    typeId: Type.String({ minLength: 1, maxLength: 40 }),
    city: Type.Optional(Nullable(Type.String({ maxLength: 120 }))),
    areaPrefix: Type.Optional(Nullable(Type.String({ maxLength: 16 }))),
    channels: Type.Integer({ minimum: 1, maximum: 1000 }),
    setupPrice: Amount,
    monthlyPrice: Amount,
  },
  { additionalProperties: false },
);

const ImportResult = Type.Object({
  imported: Type.Integer(),
  groups: Type.Array(
    Type.Object({
      groupId: Uuid(),
      countryId: Type.String(),
      typeId: Type.String(),
      city: Nullable(Type.String()),
      areaPrefix: Nullable(Type.String()),
      numbers: Type.Integer(),
    }),
  ),
});

const Review = Type.Object({
  id: Uuid(),
  status: Type.String(),
  selectedDids: Type.Array(Uuid()),
  didCount: Nullable(Type.Integer()),
  submittedAt: DateTime(),
  reviewedAt: Nullable(DateTime()),
  accountId: Uuid(),
  companyName: Nullable(Type.String()),
  contactName: Type.String(),
  contactEmail: Nullable(Type.String()),
  contactPhone: Nullable(Type.String()),
  countries: Nullable(Type.String()),
  numberTypes: Nullable(Type.String()),
  monthlyVolume: Nullable(Type.String()),
  targetPrice: Nullable(Type.String()),
  notes: Nullable(Type.String()),
  reviewNote: Nullable(Type.String()),
});

/** Sellers load and manage their number inventory; the operator reviews listing requests. */
export function inventoryRoutes(deps: { inventory: Inventory; listing: ListingRequests }) {
  const { inventory, listing } = deps;
  return (app: App) => {
    app.post(
      '/dids/inventory/numbers',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'List numbers for sale (approved sellers and the operator)',
          description:
            `Up to ${MAX_IMPORT_ROWS} numbers. Groups (country, type, city, area prefix) and SKUs (channels with ` +
            'setup and monthly price) are made or updated from the items. All or nothing: any bad item refuses the ' +
            'import with one `details` entry per bad field, path `items[<index>].<field>`.',
          body: Type.Object(
            { items: Type.Array(Item, { minItems: 1, maxItems: MAX_IMPORT_ROWS }) },
            { additionalProperties: false },
          ),
          response: { 201: Ok(ImportResult) },
        },
      },
      async (req, reply) => {
        const p = req.principal!;
        const r = await inventory.importItems(p.accountId, isOperator(p), req.body.items, (i) => `items[${i}]`);
        return reply.code(201).send(ok(r));
      },
    );

    app.post(
      '/dids/inventory/upload',
      {
        bodyLimit: 16 * 1024 * 1024,
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'List numbers for sale from a CSV file',
          description:
            `Header row with the columns ${CSV_COLUMNS.join(', ')} (city and area_prefix may be empty). ` +
            'All or nothing: every bad row is named in `details` as `lines[<line number>].<field>`.',
          body: Type.Object({ csv: Type.String({ minLength: 1 }) }, { additionalProperties: false }),
          response: { 201: Ok(ImportResult) },
        },
      },
      async (req, reply) => {
        const p = req.principal!;
        await inventory.requireSeller(p.accountId, isOperator(p));
        const { items, lines } = parseInventoryCsv(req.body.csv);
        const r = await inventory.importItems(p.accountId, isOperator(p), items, (i) => `lines[${lines[i]!}]`);
        return reply.code(201).send(ok(r));
      },
    );

    app.get(
      '/dids/inventory/groups',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "The seller's catalogue groups with available and rented counts",
          response: {
            200: Ok(
              Type.Array(
                Type.Object({
                  groupId: Uuid(),
                  countryId: Type.String(),
                  country: Type.String(),
                  countryCode: Type.String(),
                  city: Nullable(Type.String()),
                  areaPrefix: Nullable(Type.String()),
                  typeId: Type.String(),
                  typeName: Type.String(),
                  requiresKyc: Type.Boolean(),
                  graceDays: Type.Integer(),
                  inboundRate: Nullable(Type.String()),
                  inboundSmsRate: Nullable(Type.String({ description: 'price of one received SMS; null: free' })),
                  status: Type.String(),
                  available: Type.Integer(),
                  assigned: Type.Integer(),
                  createdAt: DateTime(),
                }),
              ),
            ),
          },
        },
      },
      async (req) =>
        ok(
          (await inventory.groups(req.principal!.accountId)).map((g) => ({
            ...g,
            createdAt: g.createdAt.toISOString(),
          })),
        ),
    );

    app.patch(
      '/dids/inventory/groups/:id',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Change a group: identity required, grace days, inbound call and SMS rates, shown or hidden',
          params: Type.Object({ id: Uuid() }),
          body: Type.Object(
            {
              requiresKyc: Type.Optional(Type.Boolean()),
              graceDays: Type.Optional(Type.Integer({ minimum: 0, maximum: 90 })),
              inboundRate: Type.Optional(Nullable(Amount)),
              inboundSmsRate: Type.Optional(Nullable(Amount)),
              status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('hidden')])),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Type.Object({ groupId: Uuid() })) },
        },
      },
      async (req) => {
        await inventory.updateGroup(req.principal!.accountId, req.params.id, req.body);
        return ok({ groupId: req.params.id });
      },
    );

    app.put(
      '/dids/inventory/groups/:id/skus',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: "Set a group's SKU for a channel count (made, or its prices replaced for new orders)",
          params: Type.Object({ id: Uuid() }),
          body: Type.Object(
            { channels: Type.Integer({ minimum: 1, maximum: 1000 }), setupPrice: Amount, monthlyPrice: Amount },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Type.Object({ skuId: Uuid() })) },
        },
      },
      async (req) => ok({ skuId: await inventory.setSku(req.principal!.accountId, req.params.id, req.body) }),
    );

    app.delete(
      '/dids/inventory/skus/:id',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Retire a SKU (numbers rented on it keep their price)',
          params: Type.Object({ id: Uuid() }),
          response: { 200: Ok(Type.Object({ skuId: Uuid(), status: Type.Literal('retired') })) },
        },
      },
      async (req) => {
        await inventory.retireSku(req.principal!.accountId, req.params.id);
        return ok({ skuId: req.params.id, status: 'retired' as const });
      },
    );

    app.get(
      '/dids/inventory/numbers',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "The seller's numbers, newest first",
          querystring: Type.Object({
            ...CursorQuery(),
            groupId: Type.Optional(Uuid()),
            state: Type.Optional(
              Type.Union([Type.Literal('available'), Type.Literal('assigned'), Type.Literal('withdrawn')]),
            ),
          }),
          response: {
            200: CursorPage(
              Type.Object({
                id: Uuid(),
                number: Type.String(),
                groupId: Uuid(),
                state: Type.String(),
                vanity: Type.Boolean(),
                createdAt: DateTime(),
              }),
            ),
          },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 25;
        const rows = await inventory.numbers(req.principal!.accountId, { ...req.query, limit });
        return cursorPage(
          rows.map((r) => ({ ...r, createdAt: r.createdAt.toISOString() })),
          limit,
        );
      },
    );

    app.delete(
      '/dids/inventory/numbers/:id',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Withdraw an available number from sale',
          params: Type.Object({ id: Uuid() }),
          response: { 200: Ok(Type.Object({ id: Uuid(), state: Type.Literal('withdrawn') })) },
        },
      },
      async (req) => {
        await inventory.withdraw(req.principal!.accountId, req.params.id);
        return ok({ id: req.params.id, state: 'withdrawn' as const });
      },
    );

    app.get(
      '/dids/listing-requests',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'Listing requests to review (operator only)',
          querystring: Type.Object({
            ...CursorQuery(),
            status: Type.Optional(
              Type.Union([Type.Literal('pending'), Type.Literal('approved'), Type.Literal('rejected')]),
            ),
          }),
          response: { 200: CursorPage(Review) },
        },
      },
      async (req) => {
        requireOperator(req.principal!);
        const limit = req.query.limit ?? 25;
        return cursorPage(await listing.list({ ...req.query, limit }), limit);
      },
    );

    for (const decision of ['approve', 'reject'] as const) {
      app.post(
        `/dids/listing-requests/:id/${decision}`,
        {
          config: { access: WRITE },
          schema: {
            tags: TAGS,
            summary:
              decision === 'approve'
                ? 'Approve a listing request: the account may list numbers (operator only)'
                : 'Reject a listing request (operator only)',
            params: Type.Object({ id: Uuid() }),
            body: Type.Optional(
              Type.Object(
                { note: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))) },
                { additionalProperties: false },
              ),
            ),
            response: { 200: Ok(Review) },
          },
        },
        async (req) => {
          requireOperator(req.principal!);
          const status = decision === 'approve' ? 'approved' : 'rejected';
          return ok(await listing.review(req.principal!.accountId, req.params.id, status, req.body?.note ?? null));
        },
      );
    }
  };
}
