import { Type, type TSchema } from 'typebox';
import type { Db } from '../../../db/connection.js';
import { DateTime, Money, Nullable, Uuid } from '../../../http/envelope.js';
import { validationError } from '../../../http/errors.js';
import { Money as Amount } from '../../../ledger/money.js';

// What the providers' and trunks' reads select, one place for each shape (spec "Switch provider
// (supplier account) and trunk"); secrets are never selected here, only whether they are set.

const Str = (max: number) => Type.String({ maxLength: max });
const NStr = (max: number) => Nullable(Str(max));
const Obj = (props: Record<string, TSchema>) => Type.Object(props);

export const ProviderStatuses = ['draft', 'pending_approval', 'testing', 'active', 'suspended', 'terminated'] as const;
export type ProviderStatus = (typeof ProviderStatuses)[number];
export const TrunkStatuses = ['active', 'disabled', 'draft', 'testing', 'draining', 'fault'] as const;
export type TrunkStatus = (typeof TrunkStatuses)[number];
export const Enum = <T extends string>(values: readonly T[], description?: string) =>
  Type.Union(
    values.map((v) => Type.Literal(v)),
    description ? { description } : {},
  );

export const Provider = Obj({
  id: Uuid(),
  name: Str(160),
  accountCode: NStr(40),
  legalName: NStr(200),
  tradingName: NStr(200),
  providerType: Type.String(),
  registrationNumber: NStr(80),
  taxId: NStr(80),
  vatId: NStr(80),
  address: NStr(600),
  country: NStr(2),
  accountManager: NStr(160),
  tags: Type.Array(Type.String()),
  services: Type.Array(Type.String()),
  portalEmail: NStr(255),
  notes: NStr(4000),
  currency: Type.String(),
  status: Enum(ProviderStatuses),
  statusNote: Nullable(Type.String()),
  statusChangedAt: DateTime(),
  routable: Type.Boolean({ description: 'admits new calls given its status: only `active`' }),
  contractStart: Nullable(Type.String({ description: 'YYYY-MM-DD' })),
  contractEnd: Nullable(Type.String()),
  autoRenew: Type.Boolean(),
  rateNoticeDays: Type.Integer(),
  disputeDays: Type.Integer(),
  billingMode: Type.String(),
  creditLimit: Type.String({ description: '2-place string' }),
  balance: Money(),
  paymentTermsDays: Type.Integer(),
  invoiceCycle: Type.String(),
  billingTimezone: Type.String(),
  version: Type.Integer({ description: 'send it back in PATCH; a stale one answers 409 STALE_WRITE' }),
  createdAt: DateTime(),
  updatedAt: DateTime(),
});

export const Trunk = Obj({
  id: Uuid(),
  supplierId: Nullable(Uuid()),
  label: Type.String(),
  source: Type.String(),
  status: Enum(TrunkStatuses),
  statusNote: Nullable(Type.String()),
  sipHost: Nullable(Type.String({ description: 'null on a marketplace trunk' })),
  sipPort: Type.Integer(),
  transport: Type.String(),
  techPrefix: Nullable(Type.String()),
  sipAuthUsername: Nullable(Type.String()),
  sipAuthPasswordSet: Type.Boolean(),
  smppPasswordSet: Type.Boolean(),
  mediaMode: Type.String(),
  defaultRatePerUnit: Money(),
  billingIncrement: Type.String(),
  currency: Type.String(),
  capacity: Type.Integer(),
  maxCps: Type.Integer(),
  settlementMode: Type.String(),
  balance: Money(),
  smsDeliveryMethod: Nullable(Type.String()),
  smsDeliveryUrl: Nullable(Type.String()),
  smppHost: Nullable(Type.String()),
  smppPort: Nullable(Type.Integer()),
  smppSystemId: Nullable(Type.String()),
  smppBindType: Nullable(Type.String()),
  smppSystemType: Nullable(Type.String()),
  smppTps: Nullable(Type.Integer()),
  portalEmail: Nullable(Type.String()),
  readinessExempt: Type.Boolean(),
  exemptReason: Nullable(Type.String()),
  reachable: Nullable(Type.Boolean()),
  reachCheckedAt: Nullable(DateTime()),
  version: Type.Integer(),
  createdAt: DateTime(),
  updatedAt: DateTime(),
  endpointCount: Type.Integer(),
  endpointsEnabled: Type.Integer(),
});

export const Endpoint = Obj({
  id: Uuid(),
  trunkId: Uuid(),
  role: Type.String(),
  host: Type.String(),
  port: Type.Integer(),
  transport: Type.String(),
  priority: Type.Integer(),
  weightPct: Type.Integer(),
  enabled: Type.Boolean(),
  optionsIntervalSeconds: Nullable(Type.Integer()),
  failureThreshold: Nullable(Type.Integer()),
  recoveryThreshold: Nullable(Type.Integer()),
  autoDisable: Type.Boolean(),
  reachable: Nullable(Type.Boolean()),
  lastStatus: Nullable(Type.Integer()),
  lastRttMs: Nullable(Type.Integer()),
  checkedAt: Nullable(DateTime()),
  createdAt: DateTime(),
  updatedAt: DateTime(),
});

export const Contact = Obj({
  id: Uuid(),
  role: Type.String(),
  name: Type.String(),
  email: Nullable(Type.String()),
  phone: Nullable(Type.String()),
  createdAt: DateTime(),
});

export type TrunkView = Record<string, unknown> & {
  id: string;
  supplierId: string | null;
  status: TrunkStatus;
  source: string;
  label: string;
  capacity: number;
  version: number;
};

export function selectProviders(db: Db, accountId: string, id?: string) {
  return db<(Record<string, unknown> & { id: string; status: ProviderStatus; version: number })[]>`
    select id, name, account_code, legal_name, trading_name, provider_type, registration_number, tax_id, vat_id,
      address, country, account_manager, tags, services, portal_email, notes, currency, status, status_note,
      status_changed_at, status = 'active' as routable, contract_start::text as contract_start,
      contract_end::text as contract_end, auto_renew, rate_notice_days, dispute_days, billing_mode,
      credit_limit::numeric(20, 2)::text as credit_limit, balance::text as balance, payment_terms_days,
      invoice_cycle, billing_timezone, version, created_at, updated_at
    from switch_providers
    where account_id = ${accountId} ${id ? db`and id = ${id}` : db``}
    order by lower(name)`;
}

/** Trunks of the account: one by id, those of a provider, or all (each with its endpoint counts). */
export function selectTrunks(db: Db, accountId: string, by: { id?: string; supplierId?: string } = {}) {
  return db<TrunkView[]>`
    select t.id, t.supplier_id, t.label, t.source, t.status, t.status_note,
      case when t.source = 'marketplace' then null else t.sip_host end as sip_host,
      t.sip_port, t.transport, t.tech_prefix, t.sip_auth_username,
      t.sip_auth_password_sealed is not null as sip_auth_password_set,
      t.smpp_password_sealed is not null as smpp_password_set, t.media_mode,
      t.default_rate_per_unit::text as default_rate_per_unit, t.billing_increment, t.currency, t.capacity,
      t.max_cps, t.settlement_mode, t.balance::text as balance, t.sms_delivery_method, t.sms_delivery_url,
      t.smpp_host, t.smpp_port, t.smpp_system_id, t.smpp_bind_type, t.smpp_system_type, t.smpp_tps,
      t.portal_email, t.readiness_exempt, t.exempt_reason, t.reachable, t.reach_checked_at, t.version,
      t.created_at, t.updated_at,
      (select count(*)::int from switch_trunk_endpoints e where e.trunk_id = t.id) as endpoint_count,
      (select count(*)::int from switch_trunk_endpoints e where e.trunk_id = t.id and e.enabled) as endpoints_enabled
    from switch_trunks t
    where t.account_id = ${accountId}
      ${by.id ? db`and t.id = ${by.id}` : db``}
      ${by.supplierId ? db`and t.supplier_id = ${by.supplierId}` : db``}
    order by lower(t.label)`;
}

export function selectEndpoints(db: Db, trunkIds: readonly string[]) {
  return db<
    (Record<string, unknown> & {
      id: string;
      trunkId: string;
      host: string;
      port: number;
      transport: string;
      enabled: boolean;
    })[]
  >`
    select id, trunk_id, role, host, port, transport, priority, weight_pct, enabled, options_interval_seconds,
      failure_threshold, recovery_threshold, auto_disable, reachable, last_status, last_rtt_ms, checked_at,
      created_at, updated_at
    from switch_trunk_endpoints where trunk_id = any(${trunkIds as string[]}::uuid[])
    order by priority, created_at`;
}

/** The configuration a version keeps: the trunk as read without what moves by itself, and its endpoints. */
export function configSnapshot(
  trunk: TrunkView,
  endpoints: readonly Record<string, unknown>[],
): Record<string, unknown> {
  const {
    reachable: _r,
    reachCheckedAt: _c,
    updatedAt: _u,
    createdAt: _cr,
    version: _v,
    balance: _b,
    endpointCount: _n,
    endpointsEnabled: _e,
    ...config
  } = trunk;
  return {
    ...config,
    endpoints: endpoints.map((e) => ({
      id: e['id'],
      role: e['role'],
      host: e['host'],
      port: e['port'],
      transport: e['transport'],
      priority: e['priority'],
      weightPct: e['weightPct'],
      enabled: e['enabled'],
      optionsIntervalSeconds: e['optionsIntervalSeconds'],
      failureThreshold: e['failureThreshold'],
      recoveryThreshold: e['recoveryThreshold'],
      autoDisable: e['autoDisable'],
    })),
  };
}

/** A money input given as a number or a string: the 6-place string stored, or a VALIDATION_ERROR at `path`. */
export function moneyIn(path: string, v: number | string, opts: { min?: string } = {}): string {
  const text = typeof v === 'number' ? (Number.isFinite(v) ? String(v) : '') : v;
  if (!Amount.isValid(text)) throw validationError([{ path, message: 'must be an amount with at most 6 decimals' }]);
  const m = Amount.parse(text);
  if (opts.min !== undefined && m.cmp(opts.min) < 0)
    throw validationError([{ path, message: `must be at least ${opts.min}` }]);
  return m.toString();
}

export const MoneyInput = (description: string) =>
  Type.Union([Type.Number(), Type.String({ maxLength: 24 })], { description: `${description} (number or string)` });

/**
 * The success envelope of a read whose rows come straight from SQL (timestamps as Date, which the
 * response schema's serializer writes as ISO strings): the schema, not the row type, shapes the answer.
 */
export const wire = (data: unknown) => ({ success: true as const, data }) as never;
