import type { Sql } from '../../../db/connection.js';
import { conflict, notFound, SqlState } from '../../../http/errors.js';
import type { Clock } from '../../../platform/clock.js';
import { newId } from '../../../platform/ids.js';
import type { TargetGuard } from '../../../platform/outbound-guard.js';
import { SYSTEM_ACTOR, type Actor } from './audit.js';
import { refuseHost, type TrunkService } from './trunks.js';
import { selectEndpoints } from './views.js';

export interface EndpointFields {
  role?: 'primary' | 'backup';
  host?: string;
  port?: number;
  transport?: 'udp' | 'tcp' | 'tls';
  priority?: number;
  weightPct?: number;
  enabled?: boolean;
  optionsIntervalSeconds?: number | null;
  failureThreshold?: number | null;
  recoveryThreshold?: number | null;
  autoDisable?: boolean;
}

function duplicate(err: unknown): never {
  if ((err as { code?: string }).code === SqlState.UNIQUE_VIOLATION)
    throw conflict('The trunk already has an endpoint at this host, port and transport');
  throw err;
}

const defaultPort = (transport: string | undefined) => (transport === 'tls' ? 5061 : 5060);

/**
 * A supplier trunk's SIP endpoints. A trunk with an address and no endpoint rows has the address
 * adopted as endpoint 1 on the first read; the last endpoint cannot be removed (409).
 */
export function createEndpointService(deps: { sql: Sql; clock: Clock; guard: TargetGuard; trunks: TrunkService }) {
  const { sql, clock, guard, trunks } = deps;

  async function one(trunkId: string, endpointId: string) {
    const [row] = (await selectEndpoints(sql, [trunkId])).filter((e) => e.id === endpointId);
    if (!row) throw notFound('Endpoint');
    return row;
  }

  return {
    async list(accountId: string, trunkId: string) {
      const trunk = await trunks.one(accountId, trunkId);
      const rows = await selectEndpoints(sql, [trunkId]);
      const host = trunk['sipHost'] as string | null;
      if (rows.length > 0 || host === null) return rows;
      // Adoption: the trunk's own address becomes endpoint 1, once (the trunk row is locked, and
      // the insert re-checks that no endpoint appeared meanwhile).
      await sql.begin(async (tx) => {
        await tx`select 1 from switch_trunks where id = ${trunkId} for update`;
        const now = clock.now();
        const rows = await tx`
          insert into switch_trunk_endpoints (id, trunk_id, role, host, port, transport, priority, weight_pct, enabled, created_at, updated_at)
          select ${newId()}, ${trunkId}, 'primary', ${host}, ${trunk['sipPort'] as number}, ${trunk['transport'] as string}, 1, 100, true, ${now}, ${now}
          where not exists (select 1 from switch_trunk_endpoints where trunk_id = ${trunkId})
          returning id`;
        if (rows.count === 0) return;
        const [adopted] = await selectEndpoints(tx, [trunkId]);
        await trunks.changed(tx, SYSTEM_ACTOR, accountId, trunk, trunkId, {
          source: 'adoption',
          action: 'endpoint:adopted',
          entity: 'endpoint',
          entityId: rows[0]!['id'] as string,
          entityAfter: adopted,
        });
      });
      return selectEndpoints(sql, [trunkId]);
    },

    async add(accountId: string, actor: Actor, trunkId: string, body: EndpointFields & { host: string }) {
      const trunk = await trunks.one(accountId, trunkId);
      const port = body.port ?? defaultPort(body.transport);
      await refuseHost(guard, body.host, port, '/host');
      const now = clock.now();
      const id = newId();
      return sql
        .begin(async (tx) => {
          await tx`insert into switch_trunk_endpoints ${tx({ ...body, port, id, trunkId, createdAt: now, updatedAt: now })}`;
          const [row] = (await selectEndpoints(tx, [trunkId])).filter((e) => e.id === id);
          await trunks.changed(tx, actor, accountId, trunk, trunkId, {
            source: 'endpoints',
            action: 'endpoint:created',
            entity: 'endpoint',
            entityId: id,
            entityAfter: row,
          });
          return row!;
        })
        .catch(duplicate);
    },

    async update(accountId: string, actor: Actor, trunkId: string, endpointId: string, patch: EndpointFields) {
      const trunk = await trunks.one(accountId, trunkId);
      const before = await one(trunkId, endpointId);
      if (patch.host !== undefined || patch.port !== undefined)
        await refuseHost(
          guard,
          patch.host ?? before.host,
          patch.port ?? before.port,
          patch.host !== undefined ? '/host' : '/port',
        );
      return sql
        .begin(async (tx) => {
          const set = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
          await tx`update switch_trunk_endpoints set ${tx({ ...set, updatedAt: clock.now() })} where id = ${endpointId} and trunk_id = ${trunkId}`;
          const [row] = (await selectEndpoints(tx, [trunkId])).filter((e) => e.id === endpointId);
          await trunks.changed(tx, actor, accountId, trunk, trunkId, {
            source: 'endpoints',
            action: 'endpoint:updated',
            entity: 'endpoint',
            entityId: endpointId,
            entityBefore: before,
            entityAfter: row,
          });
          return row!;
        })
        .catch(duplicate);
    },

    async remove(accountId: string, actor: Actor, trunkId: string, endpointId: string) {
      const trunk = await trunks.one(accountId, trunkId);
      await sql.begin(async (tx) => {
        // Locking the trunk serialises two deletes that would each leave the other's endpoint last.
        await tx`select 1 from switch_trunks where id = ${trunkId} for update`;
        const rows = await selectEndpoints(tx, [trunkId]);
        const before = rows.find((e) => e.id === endpointId);
        if (!before) throw notFound('Endpoint');
        if (rows.length === 1) throw conflict('The last endpoint of a trunk cannot be removed; add another first');
        await tx`delete from switch_trunk_endpoints where id = ${endpointId}`;
        await trunks.changed(tx, actor, accountId, trunk, trunkId, {
          source: 'endpoints',
          action: 'endpoint:deleted',
          entity: 'endpoint',
          entityId: endpointId,
          entityBefore: before,
        });
      });
      return { deleted: true as const };
    },
  };
}

export type EndpointService = ReturnType<typeof createEndpointService>;
