import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import type { Principal } from '../../http/access.js';
import { CursorPage, DateTime, Money, Nullable, Ok, ok, Uuid } from '../../http/envelope.js';
import { cursorPage, CursorQuery } from '../../http/pagination.js';
import type { AccountProfile, Actor } from './service.js';

const tags = ['Account'];
const read = { access: { auth: 'required' as const, scope: 'account:read' as const } };
const write = { access: { auth: 'required' as const, scope: 'account:write' as const } };

const Profile = Type.Object({
  displayName: Nullable(Type.String()),
  timeZone: Type.String({ description: 'IANA time zone the dashboard shows times in (data stays UTC)' }),
  currencyDisplay: Type.String({ description: 'currency figures are shown converted to; money is always USD' }),
  locale: Type.String(),
  updatedAt: Nullable(DateTime()),
});

const Address = Type.Object(
  {
    line1: Type.String({ minLength: 1, maxLength: 200 }),
    line2: Type.Optional(Type.String({ maxLength: 200 })),
    city: Type.String({ minLength: 1, maxLength: 100 }),
    postalCode: Type.Optional(Type.String({ maxLength: 20 })),
    region: Type.Optional(Type.String({ maxLength: 100 })),
    country: Type.String({ pattern: '^[A-Z]{2}$' }),
  },
  { additionalProperties: false },
);

const BillingDetails = Type.Object({
  companyName: Nullable(Type.String()),
  taxId: Nullable(Type.String()),
  billingEmail: Nullable(Type.String()),
  address: Nullable(Address),
  updatedAt: Nullable(DateTime()),
});

const AuditEntry = Type.Object({
  id: Uuid(),
  actorId: Nullable(Uuid()),
  credential: Type.String(),
  action: Type.String(),
  changes: Type.Object({}, { additionalProperties: true, description: '{ field: { from, to } }' }),
  ip: Nullable(Type.String()),
  createdAt: DateTime(),
});

const actor = (p: Principal, ip: string): Actor => ({ actorId: p.accountId, credential: p.kind, ip });

export function accountProfileRoutes(profile: AccountProfile) {
  return (app: App) => {
    app.get(
      '/account/profile',
      { config: read, schema: { tags, summary: 'Profile and display preferences', response: { 200: Ok(Profile) } } },
      async (req) => ok(await profile.profile(req.principal!.accountId)),
    );

    app.patch(
      '/account/profile',
      {
        config: write,
        schema: {
          tags,
          summary: 'Change the profile: display name, time zone, currency display, locale',
          description: 'Send only the fields that change; each change is written to the audit log.',
          body: Type.Object(
            {
              displayName: Type.Optional(Nullable(Type.String({ maxLength: 120 }))),
              timeZone: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
              currencyDisplay: Type.Optional(Type.String({ pattern: '^[A-Z]{3}$' })),
              locale: Type.Optional(Type.String({ pattern: '^[a-zA-Z]{2,3}(-[a-zA-Z0-9]{2,8})*$', maxLength: 35 })),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Profile) },
        },
      },
      async (req) => ok(await profile.updateProfile(req.principal!.accountId, actor(req.principal!, req.ip), req.body)),
    );

    app.get(
      '/account/billing-details',
      {
        config: read,
        schema: {
          tags,
          summary: 'Company and billing details',
          description:
            'Frozen into the receipt and invoice of each top-up when it is credited; later changes never alter them.',
          response: { 200: Ok(BillingDetails) },
        },
      },
      async (req) => ok(await profile.billingDetails(req.principal!.accountId)),
    );

    app.put(
      '/account/billing-details',
      {
        config: write,
        schema: {
          tags,
          summary: 'Set the company and billing details (the whole record)',
          body: Type.Object(
            {
              companyName: Nullable(Type.String({ maxLength: 200 })),
              taxId: Nullable(Type.String({ maxLength: 64 })),
              billingEmail: Nullable(Type.String({ format: 'email', maxLength: 254 })),
              address: Nullable(Address),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(BillingDetails) },
        },
      },
      async (req) =>
        ok(await profile.putBillingDetails(req.principal!.accountId, actor(req.principal!, req.ip), req.body)),
    );

    const LowBalance = Type.Object({
      threshold: Nullable(Money("the account's own line; null: the default")),
      default: Money(),
      effective: Money('`balance.low` fires once when a debit takes the balance below this; 0: never'),
    });

    app.get(
      '/account/low-balance-threshold',
      {
        config: read,
        schema: { tags, summary: 'The low-balance line of `balance.low`', response: { 200: Ok(LowBalance) } },
      },
      async (req) => ok(await profile.lowBalance(req.principal!.accountId)),
    );

    app.put(
      '/account/low-balance-threshold',
      {
        config: write,
        schema: {
          tags,
          summary: 'Set the low-balance line (null: the default; 0: no alert)',
          body: Type.Object(
            { threshold: Nullable(Type.String({ pattern: '^\\d{1,9}(\\.\\d{1,6})?$' })) },
            { additionalProperties: false },
          ),
          response: { 200: Ok(LowBalance) },
        },
      },
      async (req) =>
        ok(await profile.setLowBalance(req.principal!.accountId, actor(req.principal!, req.ip), req.body.threshold)),
    );

    app.get(
      '/account/audit-log',
      {
        config: { access: { ...read.access, fullAccessOnly: true } },
        schema: {
          tags,
          summary: 'Audit log of account changes, newest first',
          description:
            'Each entry: who (account and credential kind), what (`action`, `changes { field: { from, to } }`), from where (`ip`).',
          querystring: Type.Object({ ...CursorQuery(25, 100) }),
          response: { 200: CursorPage(AuditEntry) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 25;
        return cursorPage(await profile.auditLog(req.principal!.accountId, req.query.cursor, limit + 1), limit);
      },
    );
  };
}
