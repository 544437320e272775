import type { Db, Sql } from '../../../db/connection.js';
import { AppError, conflict, notFound, ruleError, SqlState, validationError } from '../../../http/errors.js';
import type { Clock } from '../../../platform/clock.js';
import { newId } from '../../../platform/ids.js';
import { REFUSED_MESSAGE, TargetRefusedError, type TargetGuard } from '../../../platform/outbound-guard.js';
import type { Actor, SwitchAudit } from './audit.js';
import type { SecretSealer } from './secrets.js';
import { configSnapshot, moneyIn, selectEndpoints, selectTrunks, type TrunkStatus, type TrunkView } from './views.js';

/**
 * Supplier trunk status moves (docs/switch.md "Providers and supplier trunks"). Every move into
 * `active` runs the readiness checks first and is refused with TRUNK_NOT_READY while blocking is on.
 */
export const TRUNK_MOVES: Readonly<Record<TrunkStatus, readonly TrunkStatus[]>> = {
  draft: ['testing', 'active', 'disabled'],
  testing: ['active', 'draft', 'disabled'],
  active: ['draining', 'fault', 'testing', 'disabled'],
  draining: ['active', 'disabled'],
  fault: ['active', 'testing', 'disabled'],
  disabled: ['draft', 'testing', 'active'],
};

/** The trunk fields a create or PATCH body may carry; passwords are write-only. */
export interface TrunkFields {
  supplierId?: string | null;
  label?: string;
  sipHost?: string | null;
  sipPort?: number;
  transport?: string;
  techPrefix?: string | null;
  sipAuthUsername?: string | null;
  sipAuthPassword?: string | null;
  mediaMode?: string;
  defaultRatePerUnit?: number | string;
  billingIncrement?: string;
  currency?: string;
  capacity?: number;
  maxCps?: number;
  settlementMode?: string;
  smsDeliveryMethod?: 'http' | 'smpp' | null;
  smsDeliveryUrl?: string | null;
  smppHost?: string | null;
  smppPort?: number | null;
  smppSystemId?: string | null;
  smppPassword?: string | null;
  smppBindType?: string | null;
  smppSystemType?: string | null;
  smppTps?: number | null;
  portalEmail?: string | null;
  readinessExempt?: boolean;
  exemptReason?: string | null;
}

const SECRET_FIELDS = { sipAuthPassword: 'sipAuthPasswordSealed', smppPassword: 'smppPasswordSealed' } as const;

export const staleWrite = () =>
  new AppError('STALE_WRITE', 'The record changed since it was read; read it again and retry with its version');

function duplicate(err: unknown): never {
  if ((err as { code?: string }).code === SqlState.UNIQUE_VIOLATION)
    throw conflict('A supplier trunk with this label already exists');
  throw err;
}

function parseUrl(text: string): URL | null {
  try {
    return new URL(text);
  } catch {
    return null;
  }
}

/** A host the outbound guard refuses is refused on save, before it can be probed or bound to. */
export async function refuseHost(guard: TargetGuard, host: string, port: number, path: string): Promise<void> {
  try {
    await guard.resolve(host, port);
  } catch (err) {
    // A name that does not resolve now is left to the probe or bind that uses it.
    if (err instanceof TargetRefusedError)
      throw validationError([{ path, message: REFUSED_MESSAGE }], 'The address is not allowed');
  }
}

/** Supplier trunks: create, read, edit, status (readiness-gated activation), credentials; each change versioned and audited. */
export function createTrunkService(deps: {
  sql: Sql;
  clock: Clock;
  audit: SwitchAudit;
  sealer: SecretSealer;
  guard: TargetGuard;
  /** The readiness the activation checks; the readiness service. */
  blockers(accountId: string, trunkId: string): Promise<{ blocking: boolean; blockers: unknown[] }>;
}) {
  const { sql, clock, audit, sealer, guard } = deps;

  async function one(db: Db, accountId: string, id: string): Promise<TrunkView> {
    const [row] = await selectTrunks(db, accountId, { id });
    if (!row) throw notFound('Supplier trunk');
    return row;
  }

  /** Writes the trunk's next configuration version and its audit entry, inside the caller's transaction. */
  async function changed(
    tx: Db,
    actor: Actor,
    accountId: string,
    before: TrunkView | null,
    trunkId: string,
    c: {
      source: string;
      action: string;
      note?: string | null;
      extraChanged?: string[];
      entity?: 'trunk' | 'endpoint';
      entityId?: string;
      entityBefore?: unknown;
      entityAfter?: unknown;
    },
  ): Promise<TrunkView> {
    const after = await one(tx, accountId, trunkId);
    const endpoints = await selectEndpoints(tx, [trunkId]);
    await audit.version(tx, actor, {
      trunkId,
      source: c.source,
      snapshot: configSnapshot(after, endpoints),
      note: c.note ?? null,
      extraChanged: c.extraChanged ?? [],
    });
    await audit.record(tx, actor, {
      accountId,
      providerId: after.supplierId ?? before?.supplierId ?? null,
      trunkId,
      entity: c.entity ?? 'trunk',
      entityId: c.entityId ?? trunkId,
      action: c.action,
      before: c.entity === 'endpoint' ? (c.entityBefore ?? null) : before,
      after: c.entity === 'endpoint' ? (c.entityAfter ?? null) : after,
    });
    return after;
  }

  /** Checks and converts a body into columns: hosts through the guard, money to 6 places, passwords sealed. */
  async function columns(
    accountId: string,
    f: TrunkFields,
    current: TrunkView | null,
  ): Promise<Record<string, unknown>> {
    if (f.supplierId) {
      const [p] = await sql`select 1 from switch_providers where id = ${f.supplierId} and account_id = ${accountId}`;
      if (!p) throw validationError([{ path: '/supplierId', message: 'no such provider' }]);
    }
    const sipPort = f.sipPort ?? (current?.['sipPort'] as number | undefined) ?? 5060;
    if (f.sipHost) await refuseHost(guard, f.sipHost, sipPort, '/sipHost');
    if (f.smppHost) await refuseHost(guard, f.smppHost, f.smppPort ?? 2775, '/smppHost');
    if (f.smsDeliveryUrl) {
      const u = parseUrl(f.smsDeliveryUrl);
      if (u === null || u.protocol !== 'https:')
        throw validationError([{ path: '/smsDeliveryUrl', message: 'must be an https URL' }]);
      await refuseHost(guard, u.hostname, u.port ? Number(u.port) : 443, '/smsDeliveryUrl');
    }
    if (f.readinessExempt === true && !f.exemptReason && !current?.['exemptReason'])
      throw validationError([{ path: '/exemptReason', message: 'required when readinessExempt is true' }]);
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(f)) {
      if (v === undefined) continue;
      if (k in SECRET_FIELDS) {
        out[SECRET_FIELDS[k as keyof typeof SECRET_FIELDS]] =
          v === null || v === '' ? null : await sealer.seal(v as string);
      } else if (k === 'defaultRatePerUnit')
        out[k] = moneyIn('/defaultRatePerUnit', v as number | string, { min: '0' });
      else out[k] = v;
    }
    return out;
  }

  const secretsIn = (f: TrunkFields) =>
    Object.keys(SECRET_FIELDS).filter((k) => f[k as keyof TrunkFields] !== undefined);

  return {
    one: (accountId: string, id: string) => one(sql, accountId, id),
    changed,

    async create(accountId: string, actor: Actor, body: TrunkFields & { status?: 'draft' | 'testing' | 'disabled' }) {
      const set = await columns(accountId, body, null);
      const now = clock.now();
      const id = newId();
      return sql
        .begin(async (tx) => {
          await tx`insert into switch_trunks ${tx({
            ...set,
            id,
            accountId,
            source: 'external',
            status: body.status ?? 'draft',
            createdAt: now,
            updatedAt: now,
          })}`;
          return changed(tx, actor, accountId, null, id, {
            source: 'create',
            action: 'created',
            extraChanged: secretsIn(body),
          });
        })
        .catch(duplicate);
    },

    async update(accountId: string, actor: Actor, id: string, version: number, patch: TrunkFields & { note?: string }) {
      const { note, ...fields } = patch;
      const current = await one(sql, accountId, id);
      const set = await columns(accountId, fields, current);
      return sql
        .begin(async (tx) => {
          const before = await one(tx, accountId, id);
          const rows = await tx`
            update switch_trunks set ${tx({ ...set, version: version + 1, updatedAt: clock.now() })}
            where id = ${id} and account_id = ${accountId} and version = ${version}`;
          if (rows.count === 0) throw staleWrite();
          return changed(tx, actor, accountId, before, id, {
            source: 'update',
            action: 'updated',
            note: note ?? null,
            extraChanged: secretsIn(fields),
          });
        })
        .catch(duplicate);
    },

    async setStatus(accountId: string, actor: Actor, id: string, to: TrunkStatus, note: string | null) {
      const current = await one(sql, accountId, id);
      const allowed = TRUNK_MOVES[current.status];
      if (!allowed.includes(to))
        throw ruleError(
          `A supplier trunk cannot move from ${current.status} to ${to} (allowed: ${allowed.join(', ')})`,
        );
      if (to === 'active') {
        const r = await deps.blockers(accountId, id);
        if (r.blocking && r.blockers.length > 0)
          throw new AppError('VALIDATION_ERROR', 'The supplier trunk is not ready to activate', {
            code: 'TRUNK_NOT_READY',
            blockers: r.blockers,
          });
      }
      return sql.begin(async (tx) => {
        const before = await one(tx, accountId, id);
        const rows = await tx`
          update switch_trunks set status = ${to}, status_note = ${note}, version = version + 1, updated_at = ${clock.now()}
          where id = ${id} and status = ${current.status}`;
        if (rows.count === 0) throw staleWrite();
        return changed(tx, actor, accountId, before, id, { source: 'status', action: `status:${to}`, note });
      });
    },

    /** The stored credentials in clear: the one read that shows them. */
    async credentials(accountId: string, id: string) {
      const [row] = await sql<
        {
          sipAuthUsername: string | null;
          sipAuthPasswordSealed: string | null;
          smppSystemId: string | null;
          smppPasswordSealed: string | null;
        }[]
      >`select sip_auth_username, sip_auth_password_sealed, smpp_system_id, smpp_password_sealed
        from switch_trunks where id = ${id} and account_id = ${accountId}`;
      if (!row) throw notFound('Supplier trunk');
      return {
        sipAuthUsername: row.sipAuthUsername,
        sipAuthPassword: row.sipAuthPasswordSealed ? await sealer.unseal(row.sipAuthPasswordSealed) : null,
        smppSystemId: row.smppSystemId,
        smppPassword: row.smppPasswordSealed ? await sealer.unseal(row.smppPasswordSealed) : null,
      };
    },
  };
}

export type TrunkService = ReturnType<typeof createTrunkService>;
