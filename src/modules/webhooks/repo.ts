import type { Db } from '../../db/connection.js';

export interface EndpointRow {
  id: string;
  accountId: string;
  url: string;
  description: string;
  events: string[];
  secret: string;
  status: 'active' | 'disabled';
  disabledReason: string | null;
  disabledAt: Date | null;
  consecutiveFailures: number;
  secretRotatedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface AttemptJson {
  attempt: number;
  startedAt: string;
  finishedAt: string | null;
  outcome: string | null;
  statusCode: number | null;
  error: string | null;
  responseExcerpt: string | null;
  durationMs: number | null;
}

export interface DeliveryRow {
  id: string;
  endpointId: string;
  eventId: string;
  event: string;
  state: 'pending' | 'in_flight' | 'succeeded' | 'failed';
  attempts: number;
  nextAttemptAt: Date | null;
  lastStatus: number | null;
  lastError: string | null;
  resentFrom: string | null;
  createdAt: Date;
  completedAt: Date | null;
  data: unknown;
  eventAt: Date;
  attemptLog: AttemptJson[];
}

const COLS = ['url', 'description', 'events', 'status'] as const;

export function createWebhooksRepo() {
  const deliverySelect = (db: Db) => db`
    select d.id, d.endpoint_id, d.event_id, d.event, d.state, d.attempts,
           case when d.state = 'pending' then greatest(d.due_at, d.created_at) end as next_attempt_at,
           d.last_status, d.last_error, d.resent_from, d.created_at, d.completed_at,
           ev.data, ev.created_at as event_at,
           coalesce((
             select json_agg(json_build_object(
               'attempt', a.attempt, 'startedAt', a.started_at, 'finishedAt', a.finished_at, 'outcome', a.outcome,
               'statusCode', a.status_code, 'error', a.error, 'responseExcerpt', a.response_excerpt, 'durationMs', a.duration_ms
             ) order by a.attempt)
             from webhook_attempts a where a.delivery_id = d.id
           ), '[]'::json) as attempt_log
    from webhook_deliveries d join events ev on ev.id = d.event_id`;

  return {
    async insertEndpoint(
      db: Db,
      row: Omit<EndpointRow, 'disabledReason' | 'disabledAt' | 'consecutiveFailures' | 'secretRotatedAt' | 'status'>,
    ) {
      const [r] = await db<EndpointRow[]>`
        insert into webhook_endpoints (id, account_id, url, description, events, secret, created_at, updated_at)
        values (${row.id}, ${row.accountId}, ${row.url}, ${row.description}, ${row.events}, ${row.secret}, ${row.createdAt}, ${row.updatedAt})
        returning *`;
      return r!;
    },

    async countEndpoints(db: Db, accountId: string) {
      const [r] = await db<
        { n: string }[]
      >`select count(*) as n from webhook_endpoints where account_id = ${accountId} and deleted_at is null`;
      return Number(r?.n ?? 0);
    },

    async listEndpoints(db: Db, accountId: string) {
      return db<EndpointRow[]>`
        select * from webhook_endpoints where account_id = ${accountId} and deleted_at is null order by id desc limit 500`;
    },

    async getEndpoint(db: Db, accountId: string, id: string, lock = false) {
      const [r] = await db<EndpointRow[]>`
        select * from webhook_endpoints where id = ${id} and account_id = ${accountId} and deleted_at is null
        ${lock ? db`for update` : db``}`;
      return r ?? null;
    },

    async updateEndpoint(
      db: Db,
      id: string,
      patch: Partial<Pick<EndpointRow, (typeof COLS)[number]>> & { updatedAt: Date; enable?: boolean },
    ) {
      const set: Record<string, unknown> = { updated_at: patch.updatedAt };
      for (const c of COLS) if (patch[c] !== undefined) set[c] = patch[c];
      if (patch.enable === true)
        Object.assign(set, { status: 'active', disabled_at: null, disabled_reason: null, consecutive_failures: 0 });
      if (patch.enable === false)
        Object.assign(set, {
          status: 'disabled',
          disabled_at: patch.updatedAt,
          disabled_reason: 'disabled by the owner',
        });
      const [r] = await db<EndpointRow[]>`update webhook_endpoints set ${db(set)} where id = ${id} returning *`;
      return r!;
    },

    async setSecret(db: Db, id: string, secret: string, at: Date) {
      const [r] = await db<EndpointRow[]>`
        update webhook_endpoints set secret = ${secret}, secret_rotated_at = ${at}, updated_at = ${at} where id = ${id} returning *`;
      return r!;
    },

    async softDelete(db: Db, id: string, at: Date) {
      const [r] = await db<EndpointRow[]>`
        update webhook_endpoints set deleted_at = ${at}, status = 'disabled', disabled_at = coalesce(disabled_at, ${at}),
               disabled_reason = coalesce(disabled_reason, 'deleted'), updated_at = ${at}
        where id = ${id} returning *`;
      return r!;
    },

    /**
     * One endpoint's deliveries walk webhook_deliveries_endpoint_idx. An account's walk the same index
     * once per endpoint of the account (deleted ones too: their deliveries stay listed), each walk
     * stopping at the page size, and the page is the newest of those: every delivery belongs to an
     * endpoint of its account, so this is the account's page without an (account_id, id) index,
     * whose entry every emit paid for (migration 323).
     */
    async listDeliveries(
      db: Db,
      q: { accountId: string; endpointId?: string; cursor?: string; limit: number; state?: string; event?: string },
    ) {
      const filters = (alias: string) => db`
          ${q.cursor ? db`and ${db(alias)}.id < ${q.cursor}` : db``}
          ${q.state ? db`and ${db(alias)}.state = ${q.state}` : db``}
          ${q.event ? db`and ${db(alias)}.event = ${q.event}` : db``}`;
      if (q.endpointId)
        return db<DeliveryRow[]>`
          ${deliverySelect(db)}
          where d.endpoint_id = ${q.endpointId} and d.account_id = ${q.accountId} ${filters('d')}
          order by d.id desc limit ${q.limit + 1}`;
      return db<DeliveryRow[]>`
        ${deliverySelect(db)}
        where d.id in (
          select p.id from webhook_endpoints e cross join lateral (
            select x.id from webhook_deliveries x
            where x.endpoint_id = e.id ${filters('x')}
            order by x.id desc limit ${q.limit + 1}
          ) p
          where e.account_id = ${q.accountId}
        ) and d.account_id = ${q.accountId}
        order by d.id desc limit ${q.limit + 1}`;
    },

    async getDelivery(db: Db, accountId: string, id: string) {
      const [r] = await db<DeliveryRow[]>`${deliverySelect(db)} where d.account_id = ${accountId} and d.id = ${id}`;
      return r ?? null;
    },
  };
}

export type WebhooksRepo = ReturnType<typeof createWebhooksRepo>;
