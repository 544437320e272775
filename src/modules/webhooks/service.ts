import type { Logger } from 'pino';
import type { Config } from '../../config/schema.js';
import type { Sql } from '../../db/connection.js';
import { notFound, ruleError, validationError, type ErrorDetail } from '../../http/errors.js';
import type { Clock } from '../../platform/clock.js';
import { newId, randomToken } from '../../platform/ids.js';
import { enqueueForEndpoint } from '../../webhooks/emit.js';
import { ALL_EVENTS, isEventName } from '../../webhooks/events.js';
import { checkEndpointUrl, TargetRefusedError } from '../../webhooks/target.js';
import { deliveryBody } from '../../webhooks/worker.js';
import { createWebhooksRepo, type DeliveryRow, type EndpointRow } from './repo.js';

const SECRET_PREFIX = 'whsec_';
const SECRET_CHARS = 40;

export interface EndpointInput {
  url: string;
  events?: string[];
  description?: string;
}

export interface EndpointPatch {
  url?: string;
  events?: string[];
  description?: string;
  enabled?: boolean;
}

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

/** Endpoint management, the deliveries log, test pings and resends (spec "Events"). */
export function createWebhooksService(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  config: Readonly<Config>;
  onQueued?: () => void;
}) {
  const { sql, clock, config } = deps;
  const repo = createWebhooksRepo();
  const wake = () => deps.onQueued?.();

  const presentEndpoint = (e: EndpointRow) => ({
    id: e.id,
    url: e.url,
    description: e.description,
    events: e.events,
    status: e.status,
    disabledReason: e.disabledReason,
    disabledAt: iso(e.disabledAt),
    consecutiveFailures: e.consecutiveFailures,
    secretLast4: e.secret.slice(-4),
    secretRotatedAt: iso(e.secretRotatedAt),
    createdAt: iso(e.createdAt)!,
    updatedAt: iso(e.updatedAt)!,
  });

  const presentDelivery = (d: DeliveryRow) => ({
    id: d.id,
    endpointId: d.endpointId,
    eventId: d.eventId,
    event: d.event,
    state: d.state,
    attempts: d.attempts,
    nextAttemptAt: iso(d.nextAttemptAt),
    lastStatus: d.lastStatus,
    lastError: d.lastError,
    resentFrom: d.resentFrom,
    createdAt: iso(d.createdAt)!,
    completedAt: iso(d.completedAt),
    attemptLog: d.attemptLog.map((a) => ({ ...a, startedAt: iso(a.startedAt)!, finishedAt: iso(a.finishedAt) })),
  });

  function checkEvents(events: string[] | undefined): string[] {
    if (events === undefined) return [ALL_EVENTS];
    const bad: ErrorDetail[] = [];
    const names: string[] = [];
    events.forEach((e, i) => {
      if (e === ALL_EVENTS || isEventName(e)) return;
      bad.push({ path: `events/${i}`, message: `unknown event "${e}"` });
      names.push(e);
    });
    if (bad.length) throw validationError(bad, `Unknown event name${bad.length > 1 ? 's' : ''}: ${names.join(', ')}`);
    const set = [...new Set(events)];
    return set.includes(ALL_EVENTS) ? [ALL_EVENTS] : set.sort();
  }

  function checkUrl(url: string): string {
    try {
      return checkEndpointUrl(url, config.webhooks.allow_private_targets).href;
    } catch (err) {
      if (err instanceof TargetRefusedError) throw validationError([{ path: 'url', message: err.message }]);
      throw err;
    }
  }

  const newSecret = () => SECRET_PREFIX + randomToken(SECRET_CHARS);

  async function owned(accountId: string, id: string) {
    const e = await repo.getEndpoint(sql, accountId, id);
    if (!e) throw notFound('Webhook endpoint');
    return e;
  }

  return {
    async createEndpoint(accountId: string, input: EndpointInput) {
      const url = checkUrl(input.url);
      const events = checkEvents(input.events);
      const now = clock.now();
      const secret = newSecret();
      const row = await sql.begin(async (tx) => {
        // Serialises concurrent creates of one account so the cap holds.
        await tx`select id from accounts where id = ${accountId} for update`;
        if ((await repo.countEndpoints(tx, accountId)) >= config.webhooks.max_endpoints_per_account) {
          throw ruleError(`At most ${config.webhooks.max_endpoints_per_account} webhook endpoints per account`);
        }
        return repo.insertEndpoint(tx, {
          id: newId(),
          accountId,
          url,
          description: input.description ?? '',
          events,
          secret,
          createdAt: now,
          updatedAt: now,
        });
      });
      return { endpoint: presentEndpoint(row), secret };
    },

    async listEndpoints(accountId: string) {
      return (await repo.listEndpoints(sql, accountId)).map(presentEndpoint);
    },

    async getEndpoint(accountId: string, id: string) {
      return presentEndpoint(await owned(accountId, id));
    },

    async updateEndpoint(accountId: string, id: string, patch: EndpointPatch) {
      const url = patch.url === undefined ? undefined : checkUrl(patch.url);
      const events = patch.events === undefined ? undefined : checkEvents(patch.events);
      return sql.begin(async (tx) => {
        const cur = await repo.getEndpoint(tx, accountId, id, true);
        if (!cur) throw notFound('Webhook endpoint');
        const enable =
          patch.enabled === undefined || patch.enabled === (cur.status === 'active') ? undefined : patch.enabled;
        const row = await repo.updateEndpoint(tx, id, {
          updatedAt: clock.now(),
          ...(url !== undefined ? { url } : {}),
          ...(events !== undefined ? { events } : {}),
          ...(patch.description !== undefined ? { description: patch.description } : {}),
          ...(enable !== undefined ? { enable } : {}),
        });
        return presentEndpoint(row);
      });
    },

    async deleteEndpoint(accountId: string, id: string) {
      await owned(accountId, id);
      return presentEndpoint(await repo.softDelete(sql, id, clock.now()));
    },

    /** The old secret stops signing at once: every attempt after this, retries included, uses the new one. */
    async rotateSecret(accountId: string, id: string) {
      await owned(accountId, id);
      const secret = newSecret();
      const row = await repo.setSecret(sql, id, secret, clock.now());
      return { endpoint: presentEndpoint(row), secret };
    },

    async sendTest(accountId: string, id: string) {
      const e = await owned(accountId, id);
      if (e.status !== 'active') throw ruleError('The endpoint is disabled; enable it before sending a test');
      const deliveryId = await enqueueForEndpoint(sql, {
        accountId,
        endpointId: id,
        event: 'ping',
        data: {},
        at: clock.now(),
      });
      wake();
      return this.getDelivery(accountId, deliveryId);
    },

    async listDeliveries(
      accountId: string,
      q: { endpointId?: string; cursor?: string; limit: number; state?: string; event?: string },
    ) {
      if (q.endpointId) await owned(accountId, q.endpointId);
      const rows = await repo.listDeliveries(sql, { accountId, ...q });
      return rows.map(presentDelivery);
    },

    async getDelivery(accountId: string, deliveryId: string) {
      const d = await repo.getDelivery(sql, accountId, deliveryId);
      if (!d) throw notFound('Webhook delivery');
      return { ...presentDelivery(d), payload: JSON.parse(deliveryBody(d)) as Record<string, unknown> };
    },

    /** A new delivery (new id) of the same event to the same endpoint, sent with the current secret. */
    async resend(accountId: string, deliveryId: string) {
      const d = await repo.getDelivery(sql, accountId, deliveryId);
      if (!d) throw notFound('Webhook delivery');
      const e = await repo.getEndpoint(sql, accountId, d.endpointId);
      if (!e) throw ruleError('The endpoint of this delivery was deleted');
      if (e.status !== 'active') throw ruleError('The endpoint is disabled; enable it before resending');
      const id = await enqueueForEndpoint(sql, {
        accountId,
        endpointId: d.endpointId,
        resendOf: d.id,
        at: clock.now(),
      });
      wake();
      return this.getDelivery(accountId, id);
    },
  };
}

export type WebhooksService = ReturnType<typeof createWebhooksService>;
