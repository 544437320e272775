import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { DateTime, Nullable, Ok, Uuid, ok } from '../../http/envelope.js';
import type { Catalog } from './catalog.js';
import type { ListingRequests } from './listing.js';
import { CatalogPage, CatalogQuery, Disabled, READ, TAGS, WRITE } from './schemas.js';

export interface StoreSwitch {
  enabled: boolean;
  message: string;
}

// Per field order of the spec: company, contact name, email, phone, -, -, countries, types, volume, price, notes.
const ListingBody = Type.Object(
  {
    companyName: Type.Optional(Nullable(Type.String({ maxLength: 255 }))),
    contactName: Type.String({ minLength: 1, maxLength: 255 }),
    contactEmail: Type.Optional(Nullable(Type.String({ maxLength: 255, format: 'email' }))),
    contactPhone: Type.Optional(Nullable(Type.String({ maxLength: 40 }))),
    selectedDidIds: Type.Optional(Type.Array(Uuid(), { maxItems: 1000 })),
    didCount: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 10000000 }))),
    countries: Type.Optional(Nullable(Type.String({ maxLength: 255 }))),
    numberTypes: Type.Optional(Nullable(Type.String({ maxLength: 255 }))),
    monthlyVolume: Type.Optional(Nullable(Type.String({ maxLength: 255 }))),
    targetPrice: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
    notes: Type.Optional(Nullable(Type.String({ maxLength: 4000 }))),
  },
  { additionalProperties: false },
);

const FIELD_ORDER = Object.keys(ListingBody.properties);

interface AjvLike {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
}

/** The first bad field in the spec's field order (the listing request answers `error.field`, not `details`). */
export function firstBadField(errors: readonly AjvLike[]): { field: string; message: string } {
  const named = errors.map((e) => {
    const top = e.instancePath.split('/')[1];
    const field = top ?? String(e.params['missingProperty'] ?? e.params['additionalProperty'] ?? 'body');
    return { field, message: e.params['additionalProperty'] ? 'unknown field' : (e.message ?? 'is invalid') };
  });
  const rank = (f: string) => {
    const i = FIELD_ORDER.indexOf(f);
    return i === -1 ? FIELD_ORDER.length : i;
  };
  named.sort((a, b) => rank(a.field) - rank(b.field));
  return named[0] ?? { field: 'body', message: 'is invalid' };
}

// Any 400 of the route goes through this schema: open, so other errors keep their `details`.
const ListingRefusal = Type.Object(
  {
    success: Type.Literal(false),
    error: Type.Object(
      { code: Type.String(), message: Type.String(), field: Type.Optional(Type.String()) },
      { additionalProperties: true },
    ),
  },
  { additionalProperties: true },
);

const ListingRequestView = Type.Object({
  id: Uuid(),
  status: Type.Union([Type.Literal('pending'), Type.Literal('approved'), Type.Literal('rejected')]),
  selectedDids: Type.Array(Uuid()),
  didCount: Nullable(Type.Integer()),
  submittedAt: DateTime(),
  reviewedAt: Nullable(DateTime()),
});

const SummaryView = Type.Object({
  ready: Type.Boolean({ description: 'false until the first computation after a restart' }),
  refreshedAt: Nullable(DateTime()),
  countries: Type.Integer(),
  groups: Type.Integer(),
  numbers: Type.Integer(),
  cheapestMonthlyByType: Type.Array(
    Type.Object({ typeId: Type.String(), typeName: Type.String(), monthlyPrice: Type.Number() }),
  ),
  cheapestMonthlyByCountry: Type.Array(
    Type.Object({ countryId: Type.String(), country: Type.String(), monthlyPrice: Type.Number() }),
  ),
});

const SearchHit = Type.Object({
  id: Uuid(),
  number: Type.String(),
  groupId: Uuid(),
  country: Type.String(),
  countryId: Type.String(),
  countryCode: Type.String(),
  countryPrefix: Type.String(),
  city: Nullable(Type.String()),
  areaPrefix: Nullable(Type.String()),
  typeId: Type.String(),
  typeName: Type.String(),
  dialingPrefix: Type.String(),
  vanity: Type.Boolean(),
});
const SearchData = Type.Object({
  hits: Type.Array(SearchHit),
  scannedPages: Type.Integer(),
  truncated: Type.Boolean(),
});

/** Catalogue, search, the public catalogue and the listing request. */
export function storeRoutes(deps: { catalog: Catalog; listing: ListingRequests; store: StoreSwitch }) {
  const { catalog, listing, store } = deps;
  const disabled = () => ok({ disabled: true as const, comingSoon: true as const, message: store.message });

  return (app: App) => {
    app.get(
      '/dids/catalog',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'Catalogue groups with their SKUs (25 a page)',
          description:
            '`search` matches country, city, area prefix and type; digits also match the start of the dialling prefix. ' +
            'Prices are USD display numbers.',
          querystring: CatalogQuery,
          response: { 200: Ok(Type.Union([CatalogPage, Disabled])) },
        },
      },
      async (req) => {
        if (!store.enabled) return disabled();
        return ok(await catalog.catalog({ ...req.query, page: req.query.page ?? 1 } as never, { withKyc: true }));
      },
    );

    app.get(
      '/dids/catalog/countries',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'Countries with numbers in the catalogue',
          response: {
            200: Ok(
              Type.Union([
                Type.Array(
                  Type.Object({ countryId: Type.String(), country: Type.String(), countryPrefix: Type.String() }),
                ),
                Disabled,
              ]),
            ),
          },
        },
      },
      async () => (store.enabled ? ok(await catalog.countries()) : disabled()),
    );

    app.get(
      '/dids/catalog/types',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'Number types',
          response: {
            200: Ok(Type.Union([Type.Array(Type.Object({ id: Type.String(), name: Type.String() })), Disabled])),
          },
        },
      },
      async () => (store.enabled ? ok(await catalog.types()) : disabled()),
    );

    app.get(
      '/dids/search',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'Search available numbers by pattern',
          description:
            '`pattern` is matched against the digits after the dialling prefix (country + area); keypad letters are ' +
            'mapped to digits (vanity words). `vanity=true` keeps memorable numbers only. Top-level `hits`, ' +
            '`scannedPages` and `truncated` are deprecated copies of `data`.',
          querystring: Type.Object({
            pattern: Type.Optional(Type.String({ maxLength: 32 })),
            match: Type.Optional(
              Type.Union([
                Type.Literal('contains'),
                Type.Literal('starts_with'),
                Type.Literal('ends_with'),
                Type.Literal('exact'),
              ]),
            ),
            vanity: Type.Optional(Type.Boolean()),
            countryId: Type.Optional(Type.String({ maxLength: 64 })),
            typeId: Type.Optional(Type.String({ maxLength: 40 })),
            text: Type.Optional(Type.String({ maxLength: 120 })),
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50 })),
          }),
          response: {
            200: Type.Union([
              Type.Object({
                success: Type.Literal(true),
                data: SearchData,
                hits: Type.Array(SearchHit, { deprecated: true }),
                scannedPages: Type.Integer({ deprecated: true }),
                truncated: Type.Boolean({ deprecated: true }),
              }),
              Ok(Disabled),
            ]),
          },
        },
      },
      async (req) => {
        if (!store.enabled) return disabled();
        const data = await catalog.search({
          ...req.query,
          match: req.query.match as 'contains' | undefined,
          limit: req.query.limit ?? 50,
        });
        return {
          success: true as const,
          data,
          hits: data.hits,
          scannedPages: data.scannedPages,
          truncated: data.truncated,
        };
      },
    );

    app.get(
      '/public/numbers/catalog',
      {
        config: { access: { auth: 'public' }, rateLimit: { points: 30, seconds: 60 } },
        schema: {
          tags: TAGS,
          summary: 'Public catalogue: groups and prices',
          querystring: CatalogQuery,
          response: { 200: Ok(Type.Union([CatalogPage, Disabled])) },
        },
      },
      async (req) => {
        if (!store.enabled) return disabled();
        return ok(await catalog.catalog({ ...req.query, page: req.query.page ?? 1 } as never, { withKyc: false }));
      },
    );

    app.get(
      '/public/numbers/catalog/summary',
      {
        config: { access: { auth: 'public' }, rateLimit: { points: 15, seconds: 60 } },
        schema: {
          tags: TAGS,
          summary: 'Catalogue summary: counts and cheapest monthly prices by type and country',
          description: 'Recomputed about every 20 minutes; `ready` is false right after a restart until the first run.',
          response: { 200: Ok(SummaryView) },
        },
      },
      async () => ok(catalog.summary()),
    );

    app.get(
      '/dids/listing-request',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "The caller's request to list numbers (open, else the latest), with a prefill",
          response: {
            200: Ok(
              Type.Object({
                ownedActiveDids: Type.Integer(),
                request: Nullable(ListingRequestView),
                prefill: Type.Object({
                  companyName: Nullable(Type.String()),
                  contactName: Nullable(Type.String()),
                  contactEmail: Nullable(Type.String()),
                  contactPhone: Nullable(Type.String()),
                }),
              }),
            ),
          },
        },
      },
      async (req) => ok(await listing.current(req.principal!.accountId)),
    );

    app.post(
      '/dids/listing-request',
      {
        config: { access: WRITE, rateLimit: { points: 5, seconds: 600 } },
        attachValidation: true,
        schema: {
          tags: TAGS,
          summary: 'Ask to list numbers as a seller (one open request at a time)',
          description:
            'A second open request answers 409. A validation failure answers 400 VALIDATION_ERROR with `error.field` ' +
            'naming the first bad field (in body order) instead of `details`.',
          body: ListingBody,
          response: {
            201: Ok(Type.Object({ id: Uuid(), status: Type.Literal('pending'), submittedAt: DateTime() })),
            400: ListingRefusal,
          },
        },
      },
      async (req, reply) => {
        const v = (req as unknown as { validationError?: { validation?: AjvLike[] } }).validationError;
        if (v) {
          const { field, message } = firstBadField(v.validation ?? []);
          return reply.code(400).send({
            success: false,
            error: { code: 'VALIDATION_ERROR', message: `${field} ${message}`, field },
          });
        }
        const b = req.body;
        const created = await listing.submit(req.principal!.accountId, {
          companyName: b.companyName ?? null,
          contactName: b.contactName,
          contactEmail: b.contactEmail ?? null,
          contactPhone: b.contactPhone ?? null,
          selectedDidIds: b.selectedDidIds ?? [],
          didCount: b.didCount ?? null,
          countries: b.countries ?? null,
          numberTypes: b.numberTypes ?? null,
          monthlyVolume: b.monthlyVolume ?? null,
          targetPrice: b.targetPrice ?? null,
          notes: b.notes ?? null,
        });
        return reply.code(201).send(ok(created));
      },
    );
  };
}
