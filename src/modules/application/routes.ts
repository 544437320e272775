import { Decimal } from 'decimal.js';
import { Type, type TSchema } from 'typebox';
import type { App } from '../../http/app.js';
import { DateTime, Money, Nullable, Ok, Uuid, ok } from '../../http/envelope.js';
import { validationError, type ErrorDetail } from '../../http/errors.js';
import { CursorQuery } from '../../http/pagination.js';
import { newId } from '../../platform/ids.js';
import type { ApplicationService, SubAccountInput } from './service.js';

const access = { auth: 'required', scope: 'application:write' } as const;
// A sub-account's SIP password places calls on the operator's money (transfers, backed credit).
const sipAccess = { ...access, grants: ['voice:send'] } as const;
// A test key makes a test sub-account (test key, simulated traffic, limits on test credit).
const createAccess = { ...sipAccess, testKeys: 'simulate' } as const;
const tags = ['Application Manager'];

/** A decimal setting as a JSON number or a decimal string (never parsed through a float server-side). */
export const Dec = (max: number, places: number, description?: string) =>
  Type.Union(
    [Type.Number({ minimum: 0, maximum: max }), Type.String({ pattern: `^\\d{1,14}(\\.\\d{1,${places}})?$` })],
    {
      description: `0 to ${max}${description ? `; ${description}` : ''}`,
    },
  );

const LIMITS: Record<string, number> = {
  markupPct: 100000,
  dailySpendCap: 1000000,
  creditLimit: 10000000,
  defaultMarkupPct: 100000,
  subLowBalanceThreshold: 1000000,
  defaultDailySpendCap: 1000000,
};

const MIN_CAP = '0.01';

// String forms escape the schema's maximum; checked here with exact decimals.
export function checkRanges(body: Record<string, unknown>, prefix = ''): ErrorDetail[] {
  const bad: ErrorDetail[] = [];
  for (const [k, max] of Object.entries(LIMITS)) {
    const v = body[k];
    if (typeof v === 'string' && new Decimal(v).gt(max))
      bad.push({ path: prefix + k, message: `must be at most ${max}` });
  }
  // A cap of 0 means "no cap" and caps are shown with 2 places: a positive cap that would read
  // (or be stored) as 0, such as 1e-7, would silently lift the limit it was meant to set.
  for (const k of ['dailySpendCap', 'defaultDailySpendCap']) {
    const v = body[k];
    if (
      (typeof v === 'string' || typeof v === 'number') &&
      new Decimal(String(v)).gt(0) &&
      new Decimal(String(v)).lt(MIN_CAP)
    ) {
      bad.push({ path: prefix + k, message: `must be 0 (no cap) or at least ${MIN_CAP}` });
    }
  }
  return bad;
}

const SubAccountBody = Type.Object(
  {
    label: Type.String({ minLength: 1, maxLength: 255 }),
    externalRef: Type.Optional(Nullable(Type.String({ maxLength: 10000 }))),
    markupPct: Type.Optional(Nullable(Dec(100000, 3, 'null: the operator default'))),
    dailySpendCap: Type.Optional(Nullable(Dec(1000000, 6, 'null: the operator default; 0: unlimited'))),
    maxConcurrentCalls: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 100000 }))),
    creditLimit: Type.Optional(Dec(10000000, 6, '0: strict prepaid')),
    currency: Type.Optional(Type.String({ maxLength: 3 })),
  },
  { additionalProperties: false },
);

const SubAccountFields = {
  id: Uuid(),
  label: Type.String(),
  externalRef: Nullable(Type.String()),
  balance: Money(),
  status: Type.Union([
    Type.Literal('draft'),
    Type.Literal('active'),
    Type.Literal('suspended'),
    Type.Literal('closed'),
  ]),
  markupPct: Nullable(Type.String({ description: '3 decimals; null: operator default' })),
  dailySpendCap: Nullable(Type.String({ description: 'null: operator default; 0.00: unlimited' })),
  maxConcurrentCalls: Nullable(Type.Integer()),
  creditLimit: Type.String({ description: '0.00: strict prepaid' }),
  currency: Type.String(),
  portalEmail: Nullable(Type.String()),
  autoSuspended: Type.Boolean({ description: 'suspended by the daily spend cap; lifts itself at the next UTC day' }),
  sipUsername: Type.String(),
  createdAt: DateTime(),
  updatedAt: DateTime(),
};
export const SubAccount = Type.Object({ ...SubAccountFields, lowBalance: Type.Optional(Type.Boolean()) });
const CreatedSubAccount = Type.Object({
  ...SubAccountFields,
  apiKey: Type.String({ description: 'returned once' }),
  apiKeyPrefix: Type.String(),
  sipPassword: Type.String({ description: 'returned once; only its digest HA1 is kept' }),
});

const Settings = Type.Object({
  operatorId: Uuid(),
  defaultMarkupPct: Type.String(),
  defaultBillingIncrement: Type.Integer(),
  minMarginPct: Type.String(),
  subLowBalanceThreshold: Type.String({ description: '0.00 disables low-balance alerts' }),
  defaultDailySpendCap: Nullable(Type.String()),
  defaultMaxConcurrentCalls: Nullable(Type.Integer()),
  brandName: Nullable(Type.String()),
  brandColor: Nullable(Type.String()),
  brandLogoUrl: Nullable(Type.String()),
  requireTrunkApproval: Type.Boolean(),
  requireTrunkReadiness: Type.Boolean(),
});

const Num = (d?: string): TSchema => Type.Number(d ? { description: d } : {});

export function applicationRoutes(app_: ApplicationService) {
  return (app: App) => {
    app.post(
      '/application/sub-accounts',
      {
        config: { access: createAccess },
        schema: {
          tags,
          summary: 'Create a sub-account (API key and SIP password returned once)',
          description:
            'Needs an active route purchase or own active route (voice or SMS) while `billing.require_route_for_sub_accounts` ' +
            "is on. The SIP username is `sub_…`; the digest realm is the primary SIP host. The sub-account's API key has the " +
            'mode (live or test) and scopes of the key that creates it (a session: a live full-access key). Made with a test ' +
            'key it is a test sub-account: test key, simulated traffic, no SIP calls, `creditLimit` on test credit. ' +
            "`creditLimit` is held on the operator's own balance (balance − holds; test credit for a test sub-account): " +
            'a limit the operator cannot cover is refused with 400 "Insufficient balance".',
          body: SubAccountBody,
          response: { 201: Ok(CreatedSubAccount) },
        },
      },
      async (req, reply) => {
        const bad = checkRanges(req.body as Record<string, unknown>);
        if (bad.length) throw validationError(bad);
        return reply
          .code(201)
          .send(ok(await app_.create(req.principal!.accountId, req.body as SubAccountInput, req.principal!)));
      },
    );

    app.post(
      '/application/sub-accounts/bulk',
      {
        config: { access: createAccess },
        schema: {
          tags,
          summary: 'Create up to 100 sub-accounts, each independently',
          body: Type.Object(
            { subAccounts: Type.Array(SubAccountBody, { minItems: 1, maxItems: 100 }) },
            { additionalProperties: false },
          ),
          response: {
            201: Ok(
              Type.Object({
                created: Type.Array(CreatedSubAccount),
                failed: Type.Array(Type.Object({ label: Type.String(), error: Type.String() })),
                requested: Type.Integer(),
                createdCount: Type.Integer(),
              }),
            ),
          },
        },
      },
      async (req, reply) => {
        const bad = req.body.subAccounts.flatMap((s, i) =>
          checkRanges(s as Record<string, unknown>, `subAccounts.${i}.`),
        );
        if (bad.length) throw validationError(bad);
        return reply
          .code(201)
          .send(
            ok(
              await app_.bulkCreate(
                req.principal!.accountId,
                req.body.subAccounts as SubAccountInput[],
                req.principal!,
              ),
            ),
          );
      },
    );

    app.get(
      '/application/sub-accounts',
      {
        config: { access },
        schema: {
          tags,
          summary: "List the operator's sub-accounts, newest first",
          querystring: Type.Object({
            ...CursorQuery(50, 100),
            search: Type.Optional(Type.String({ maxLength: 200, description: 'label or external reference' })),
            status: Type.Optional(
              Type.Union([
                Type.Literal('draft'),
                Type.Literal('active'),
                Type.Literal('suspended'),
                Type.Literal('closed'),
              ]),
            ),
            lowBalanceOnly: Type.Optional(
              Type.Union([Type.Literal('true'), Type.Literal('1'), Type.Literal('false'), Type.Literal('0')]),
            ),
          }),
          response: {
            200: Type.Object({
              success: Type.Literal(true),
              data: Type.Array(SubAccount),
              nextCursor: Nullable(Type.String({ format: 'uuid' })),
              hasMore: Type.Boolean(),
              total: Type.Integer(),
              lowBalanceThreshold: Money(),
            }),
          },
        },
      },
      async (req) => {
        const q = req.query;
        const r = await app_.list(req.principal!.accountId, {
          cursor: q.cursor,
          limit: q.limit,
          search: q.search,
          status: q.status,
          lowBalanceOnly: q.lowBalanceOnly === 'true' || q.lowBalanceOnly === '1',
        });
        const hasMore = r.rows.length > r.limit;
        const data = hasMore ? r.rows.slice(0, r.limit) : r.rows;
        return {
          success: true as const,
          data,
          nextCursor: hasMore ? data[data.length - 1]!.id : null,
          hasMore,
          total: r.total,
          lowBalanceThreshold: r.lowBalanceThreshold,
        };
      },
    );

    app.get(
      '/application/sub-accounts/totals',
      {
        config: { access },
        schema: {
          tags,
          summary: 'Sub-account totals',
          response: {
            200: Ok(
              Type.Object({
                subCount: Type.Integer(),
                activeSubCount: Type.Integer(),
                aggregateBalance: Num('display number'),
              }),
            ),
          },
        },
      },
      async (req) => ok(await app_.totals(req.principal!.accountId)),
    );

    app.get(
      '/application/sub-accounts/:id',
      {
        config: { access },
        schema: {
          tags,
          summary: 'One sub-account (its operator, or the sub-account itself)',
          params: Type.Object({ id: Uuid() }),
          response: { 200: Ok(SubAccount) },
        },
      },
      async (req) => ok(await app_.get(req.principal!.accountId, req.params.id)),
    );

    app.post(
      '/application/sub-accounts/:id/credit',
      {
        config: { access: { ...access, denyTestKeys: true }, idempotent: true },
        schema: {
          tags,
          summary: "Fund a sub-account from the operator's balance",
          description:
            'A ledger transfer: the operator gets a `transfer` entry, the sub-account a `credit` entry. Send `X-Idempotency-Key` to make retries safe.',
          params: Type.Object({ id: Uuid() }),
          body: Type.Object(
            {
              amount: Type.String({ pattern: '^\\d{1,14}(\\.\\d{1,6})?$', description: 'USD, up to 6 decimals' }),
              reference: Type.Optional(Type.String({ maxLength: 500 })),
            },
            { additionalProperties: false },
          ),
          response: {
            200: Ok(
              Type.Object({
                transactionId: Uuid(),
                subAccountId: Uuid(),
                amount: Money(),
                balance: Money(),
                operatorBalance: Money(),
                replayed: Type.Boolean(),
              }),
            ),
          },
        },
      },
      async (req) => {
        const key = req.headers['x-idempotency-key'];
        const postingKey = typeof key === 'string' && key !== '' ? `idem:${key}` : newId();
        return ok(await app_.credit(req.principal!.accountId, req.params.id, req.body, postingKey));
      },
    );

    app.post(
      '/application/sub-accounts/:id/sip-password',
      {
        config: { access: sipAccess },
        schema: {
          tags,
          summary: 'Rotate the SIP password (new one returned once; the old one stops at once)',
          params: Type.Object({ id: Uuid() }),
          response: { 200: Ok(Type.Object({ id: Uuid(), sipUsername: Type.String(), sipPassword: Type.String() })) },
        },
      },
      async (req) => ok(await app_.rotateSipPassword(req.principal!.accountId, req.params.id)),
    );

    app.get(
      '/application/settings',
      {
        config: { access },
        schema: {
          tags,
          summary: 'Application settings (created with defaults on first read)',
          response: { 200: Ok(Settings) },
        },
      },
      async (req) => ok(await app_.settings(req.principal!.accountId)),
    );

    app.put(
      '/application/settings',
      {
        config: { access },
        schema: {
          tags,
          summary: 'Change application settings (send only the changing fields)',
          body: Type.Object(
            {
              defaultMarkupPct: Type.Optional(Dec(100000, 3)),
              subLowBalanceThreshold: Type.Optional(Dec(1000000, 6, '0 disables alerts')),
              defaultDailySpendCap: Type.Optional(Nullable(Dec(1000000, 6))),
              defaultMaxConcurrentCalls: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 100000 }))),
              brandName: Type.Optional(Type.String({ maxLength: 120 })),
              brandColor: Type.Optional(Type.String({ maxLength: 9 })),
              brandLogoUrl: Type.Optional(Type.String({ format: 'uri', maxLength: 500 })),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Settings) },
        },
      },
      async (req) => {
        const bad = checkRanges(req.body as Record<string, unknown>);
        if (bad.length) throw validationError(bad);
        return ok(await app_.updateSettings(req.principal!.accountId, req.body));
      },
    );

    app.get(
      '/application/analytics',
      {
        config: { access },
        schema: {
          tags,
          summary: 'Reseller analytics over the last `days` UTC days (display numbers)',
          description:
            'Revenue: what the sub-accounts were charged, net of refunds. Margin: the part of those charges credited to the ' +
            'operator. Carrier cost: revenue − margin. `minutes`, `asr`, `acd` and `byRoute` need call records and are 0 / empty until they exist.',
          querystring: Type.Object({ days: Type.Optional(Type.Integer({ minimum: 1, maximum: 366, default: 30 })) }),
          response: {
            200: Ok(
              Type.Object({
                period: Type.Object({ days: Type.Integer() }),
                summary: Type.Object({
                  calls: Type.Integer(),
                  sms: Type.Integer(),
                  minutes: Num(),
                  revenue: Num(),
                  margin: Num(),
                  asr: Num(),
                  acd: Num(),
                  carrierCost: Num(),
                  activeSubs: Type.Integer(),
                }),
                timeseries: Type.Array(
                  Type.Object({
                    date: Type.String(),
                    calls: Type.Integer(),
                    sms: Type.Integer(),
                    revenue: Num(),
                    margin: Num(),
                  }),
                ),
                bySubAccount: Type.Array(
                  Type.Object({
                    subAccountId: Uuid(),
                    label: Type.String(),
                    calls: Type.Integer(),
                    sms: Type.Integer(),
                    revenue: Num(),
                    margin: Num(),
                  }),
                ),
                byRoute: Type.Array(Type.Object({ routeId: Type.String(), calls: Type.Integer(), revenue: Num() })),
              }),
            ),
          },
        },
      },
      async (req) => ok(await app_.analytics(req.principal!.accountId, req.query.days ?? 30)),
    );
  };
}
