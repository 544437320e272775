import type { Sql } from '../../../db/connection.js';
import { AppError, conflict, notFound, ruleError, SqlState } from '../../../http/errors.js';
import type { Clock } from '../../../platform/clock.js';
import { newId } from '../../../platform/ids.js';
import type { Actor, SwitchAudit } from './audit.js';
import {
  moneyIn,
  selectEndpoints,
  selectProviders,
  selectTrunks,
  type ProviderStatus,
  type TrunkView,
} from './views.js';

/**
 * Provider status moves (docs/switch.md "Providers and supplier trunks"): `terminated` is final;
 * only `active` is routable. Moving to the same status is refused, so every move is a real change.
 */
export const PROVIDER_MOVES: Readonly<Record<ProviderStatus, readonly ProviderStatus[]>> = {
  draft: ['pending_approval', 'testing', 'terminated'],
  pending_approval: ['draft', 'testing', 'active', 'terminated'],
  testing: ['active', 'suspended', 'terminated'],
  active: ['suspended', 'terminated'],
  suspended: ['active', 'testing', 'terminated'],
  terminated: [],
};

/** The provider fields a create or PATCH body may carry (status only on create). */
export interface ProviderFields {
  name?: string;
  accountCode?: string | null;
  legalName?: string | null;
  tradingName?: string | null;
  providerType?: string;
  registrationNumber?: string | null;
  taxId?: string | null;
  vatId?: string | null;
  address?: string | null;
  country?: string | null;
  accountManager?: string | null;
  tags?: string[];
  services?: string[];
  portalEmail?: string | null;
  notes?: string | null;
  currency?: string;
  contractStart?: string | null;
  contractEnd?: string | null;
  autoRenew?: boolean;
  rateNoticeDays?: number;
  disputeDays?: number;
  billingMode?: string;
  creditLimit?: number | string;
  paymentTermsDays?: number;
  invoiceCycle?: string;
  billingTimezone?: string;
}

const staleWrite = () =>
  new AppError('STALE_WRITE', 'The record changed since it was read; read it again and retry with its version');

/** A unique index by name: which field clashed (the name or the account code). */
function duplicate(err: unknown): never {
  const e = err as { code?: string; constraint_name?: string };
  if (e.code === SqlState.UNIQUE_VIOLATION) {
    throw conflict(
      e.constraint_name === 'switch_providers_code'
        ? 'A provider with this accountCode already exists'
        : 'A provider with this name already exists',
    );
  }
  throw err;
}

function columns(f: ProviderFields): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(f)) {
    if (v === undefined) continue;
    out[k] = k === 'creditLimit' ? moneyIn('/creditLimit', v as number | string, { min: '0' }) : v;
  }
  if (typeof f.accountCode === 'string' && f.accountCode.trim() === '') out['accountCode'] = null;
  return out;
}

/** Switch providers (supplier accounts): create, read, edit, status moves and contacts, each change audited. */
export function createProviderService(deps: { sql: Sql; clock: Clock; audit: SwitchAudit }) {
  const { sql, clock, audit } = deps;

  async function one(accountId: string, id: string) {
    const [row] = await selectProviders(sql, accountId, id);
    if (!row) throw notFound('Provider');
    return row;
  }

  const withCounts = (p: Record<string, unknown>, trunks: TrunkView[]) => ({
    ...p,
    trunks,
    trunkCount: trunks.length,
    activeTrunks: trunks.filter((t) => t.status === 'active').length,
    totalCapacity: trunks.reduce((n, t) => n + t.capacity, 0),
  });

  return {
    one,
    audit: (accountId: string, id: string, limit: number) => audit.list(accountId, id, limit),

    async list(accountId: string) {
      const [providers, trunks] = await Promise.all([selectProviders(sql, accountId), selectTrunks(sql, accountId)]);
      return {
        accounts: providers.map((p) =>
          withCounts(
            p,
            trunks.filter((t) => t.supplierId === p.id),
          ),
        ),
        ungrouped: trunks.filter((t) => t.supplierId === null),
      };
    },

    async detail(accountId: string, id: string) {
      const p = await one(accountId, id);
      const trunks = await selectTrunks(sql, accountId, { supplierId: id });
      const endpoints = trunks.length
        ? await selectEndpoints(
            sql,
            trunks.map((t) => t.id),
          )
        : [];
      const contacts = await sql`
        select id, role, name, email, phone, created_at from switch_provider_contacts
        where provider_id = ${id} order by created_at`;
      return {
        ...withCounts(
          p,
          trunks.map((t) => ({ ...t, endpoints: endpoints.filter((e) => e.trunkId === t.id) })),
        ),
        contacts,
      };
    },

    async create(accountId: string, actor: Actor, body: ProviderFields & { status?: ProviderStatus }) {
      const now = clock.now();
      const id = newId();
      return sql
        .begin(async (tx) => {
          await tx`insert into switch_providers ${tx({
            ...columns(body),
            id,
            accountId,
            status: body.status ?? 'draft',
            statusChangedAt: now,
            createdAt: now,
            updatedAt: now,
          })}`;
          const [after] = await selectProviders(tx, accountId, id);
          await audit.record(tx, actor, {
            accountId,
            providerId: id,
            entity: 'provider',
            entityId: id,
            action: 'created',
            before: null,
            after,
          });
          return after!;
        })
        .catch(duplicate);
    },

    /** Only the fields given change; `version` must be the one last read (else 409 STALE_WRITE). */
    async update(accountId: string, actor: Actor, id: string, version: number, patch: ProviderFields) {
      return sql
        .begin(async (tx) => {
          const [before] = await selectProviders(tx, accountId, id);
          if (!before) throw notFound('Provider');
          const set = columns(patch);
          const rows = await tx`
            update switch_providers set ${tx({ ...set, version: version + 1, updatedAt: clock.now() })}
            where id = ${id} and account_id = ${accountId} and version = ${version}`;
          if (rows.count === 0) throw staleWrite();
          const [after] = await selectProviders(tx, accountId, id);
          await audit.record(tx, actor, {
            accountId,
            providerId: id,
            entity: 'provider',
            entityId: id,
            action: 'updated',
            before,
            after,
          });
          return after!;
        })
        .catch(duplicate);
    },

    async setStatus(accountId: string, actor: Actor, id: string, to: ProviderStatus, note: string | null) {
      return sql.begin(async (tx) => {
        const [before] = await selectProviders(tx, accountId, id);
        if (!before) throw notFound('Provider');
        if (!PROVIDER_MOVES[before.status].includes(to)) {
          const allowed = PROVIDER_MOVES[before.status];
          throw ruleError(
            `A provider cannot move from ${before.status} to ${to}` +
              (allowed.length ? ` (allowed: ${allowed.join(', ')})` : ' (terminated is final)'),
          );
        }
        const now = clock.now();
        await tx`
          update switch_providers set status = ${to}, status_note = ${note}, status_changed_at = ${now},
            version = version + 1, updated_at = ${now}
          where id = ${id}`;
        const [after] = await selectProviders(tx, accountId, id);
        await audit.record(tx, actor, {
          accountId,
          providerId: id,
          entity: 'provider',
          entityId: id,
          action: `status:${to}`,
          before,
          after,
        });
        return after!;
      });
    },

    async addContact(
      accountId: string,
      actor: Actor,
      providerId: string,
      c: { role: string; name: string; email?: string | null; phone?: string | null },
    ) {
      await one(accountId, providerId);
      return sql.begin(async (tx) => {
        const row = {
          id: newId(),
          providerId,
          role: c.role,
          name: c.name,
          email: c.email ?? null,
          phone: c.phone ?? null,
          createdAt: clock.now(),
        };
        await tx`insert into switch_provider_contacts ${tx(row)}`;
        const { providerId: _p, ...after } = row;
        await audit.record(tx, actor, {
          accountId,
          providerId,
          entity: 'contact',
          entityId: row.id,
          action: 'created',
          before: null,
          after,
        });
        return after;
      });
    },

    async removeContact(accountId: string, actor: Actor, providerId: string, contactId: string) {
      await one(accountId, providerId);
      await sql.begin(async (tx) => {
        const [before] = await tx`
          delete from switch_provider_contacts where id = ${contactId} and provider_id = ${providerId}
          returning id, role, name, email, phone, created_at`;
        if (!before) throw notFound('Contact');
        await audit.record(tx, actor, {
          accountId,
          providerId,
          entity: 'contact',
          entityId: contactId,
          action: 'deleted',
          before,
          after: null,
        });
      });
    },
  };
}

export type ProviderService = ReturnType<typeof createProviderService>;
