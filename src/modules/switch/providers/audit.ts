import { createHash } from 'node:crypto';
import type { Db, Sql } from '../../../db/connection.js';
import type { Principal } from '../../../http/access.js';
import { notFound } from '../../../http/errors.js';
import type { Clock } from '../../../platform/clock.js';
import { newId } from '../../../platform/ids.js';

/** Who made a change: the member or account behind a session, or the API key. */
export interface Actor {
  kind: 'session' | 'key' | 'system';
  id: string | null;
  credentialId: string | null;
}

export const actorOf = (p: Principal): Actor => ({
  kind: p.kind,
  id: p.kind === 'session' ? (p.member?.id ?? p.accountId) : null,
  credentialId: p.credentialId,
});

export const SYSTEM_ACTOR: Actor = { kind: 'system', id: null, credentialId: null };

export interface AuditEntry {
  accountId: string;
  providerId: string | null;
  trunkId?: string | null;
  entity: 'provider' | 'contact' | 'dispute' | 'trunk' | 'endpoint';
  entityId: string;
  action: string;
  before: unknown;
  after: unknown;
}

type Json = Record<string, unknown>;

/** Field by field differences of two flat records: `{ field: { from, to } }`. */
export function diffOf(before: Json | null, after: Json): Record<string, { from: unknown; to: unknown }> {
  const out: Record<string, { from: unknown; to: unknown }> = {};
  for (const k of new Set([...Object.keys(before ?? {}), ...Object.keys(after)])) {
    const a = before?.[k] ?? null;
    const b = after[k] ?? null;
    if (JSON.stringify(a) !== JSON.stringify(b)) out[k] = { from: a, to: b };
  }
  return out;
}

/** JSON with keys sorted, so a snapshot's checksum does not depend on key order. */
const canonical = (v: unknown): string =>
  JSON.stringify(v, (_k, x: unknown) =>
    x && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x as Json).sort(([a], [b]) => a.localeCompare(b)))
      : x,
  );

/** The audit of providers and trunks, and each trunk's configuration versions (redacted snapshots). */
export function createSwitchAudit(deps: { sql: Sql; clock: Clock }) {
  const { sql, clock } = deps;

  return {
    async record(db: Db, actor: Actor, e: AuditEntry): Promise<void> {
      await db`
        insert into switch_provider_audit ${db({
          id: newId(),
          accountId: e.accountId,
          providerId: e.providerId,
          trunkId: e.trunkId ?? null,
          entity: e.entity,
          entityId: e.entityId,
          action: e.action,
          actorKind: actor.kind,
          actorId: actor.id,
          credentialId: actor.credentialId,
          before: (e.before ?? null) as never,
          after: (e.after ?? null) as never,
          createdAt: clock.now(),
        })}`;
    },

    /**
     * A configuration version of a trunk: its redacted snapshot after the change, the fields that
     * changed against the previous version (plus `extraChanged`, such as a password whose value
     * the snapshot never holds), and a checksum of the snapshot. Nothing is written when nothing changed.
     */
    async version(
      db: Db,
      actor: Actor,
      v: { trunkId: string; source: string; snapshot: Json; note?: string | null; extraChanged?: string[] },
    ): Promise<number | null> {
      const [prev] = await db<{ version: number; snapshot: Json }[]>`
        select version, snapshot from switch_trunk_versions where trunk_id = ${v.trunkId}
        order by version desc limit 1 for update`;
      const diff: Json = diffOf(prev?.snapshot ?? null, v.snapshot);
      for (const f of v.extraChanged ?? []) diff[f] = { from: '[redacted]', to: '[redacted]' };
      const changed = Object.keys(diff);
      if (prev && changed.length === 0) return null;
      const version = (prev?.version ?? 0) + 1;
      await db`
        insert into switch_trunk_versions ${db({
          id: newId(),
          trunkId: v.trunkId,
          version,
          source: v.source,
          changedFields: changed,
          diff: diff as never,
          note: v.note ?? null,
          checksum: createHash('sha256').update(canonical(v.snapshot)).digest('hex'),
          changeRequestId: null,
          actorUserId: actor.id,
          snapshot: v.snapshot as never,
          createdAt: clock.now(),
        })}`;
      return version;
    },

    /** The provider's audit, newest first; its trunks' and endpoints' changes included. */
    async list(accountId: string, providerId: string, limit: number) {
      const rows = await sql`
        select id, entity, entity_id, trunk_id, action, actor_kind, actor_id, credential_id, before, after, created_at
        from switch_provider_audit where account_id = ${accountId} and provider_id = ${providerId}
        order by id desc limit ${limit}`;
      return rows.map((r) => ({
        id: r['id'] as string,
        entity: r['entity'] as string,
        entityId: r['entityId'] as string,
        trunkId: (r['trunkId'] as string | null) ?? null,
        action: r['action'] as string,
        actor: {
          kind: r['actorKind'] as string,
          id: r['actorId'] as string | null,
          credentialId: r['credentialId'] as string | null,
        },
        before: r['before'] as unknown,
        after: r['after'] as unknown,
        createdAt: (r['createdAt'] as Date).toISOString(),
      }));
    },

    async history(trunkId: string, limit: number) {
      return sql<VersionRow[]>`
        select id, version, source, changed_fields, diff, note, checksum, change_request_id, actor_user_id, created_at
        from switch_trunk_versions where trunk_id = ${trunkId} order by version desc limit ${limit}`;
    },

    async historyOne(trunkId: string, versionId: string) {
      const [row] = await sql<(VersionRow & { snapshot: Json })[]>`
        select id, version, source, changed_fields, diff, note, checksum, change_request_id, actor_user_id, created_at, snapshot
        from switch_trunk_versions where trunk_id = ${trunkId} and id = ${versionId}`;
      if (!row) throw notFound('Config version');
      const [previous] = await sql<{ id: string; version: number; snapshot: Json; createdAt: Date }[]>`
        select id, version, snapshot, created_at from switch_trunk_versions
        where trunk_id = ${trunkId} and version < ${row.version} order by version desc limit 1`;
      return { ...row, previous: previous ?? null };
    },
  };
}

interface VersionRow {
  id: string;
  version: number;
  source: string;
  changedFields: string[];
  diff: Json;
  note: string | null;
  checksum: string;
  changeRequestId: string | null;
  actorUserId: string | null;
  createdAt: Date;
}

export type SwitchAudit = ReturnType<typeof createSwitchAudit>;
