import type { Logger } from 'pino';
import type { Sql, TransactionSql } from '../db/connection.js';
import type { Clock } from '../platform/clock.js';
import { newId } from '../platform/ids.js';
import type { AttemptOutcome, AttemptResult, WebhookSender } from './sender.js';
import { signPayload } from './signer.js';

/** Attempts per delivery in all (spec "Events", "Limits"). */
export const MAX_ATTEMPTS = 5;

/** Wait after failed attempt `n` (1-based): n² minutes, so attempts run at 0, 1, 5, 14 and 30 minutes. */
export const backoffMs = (attempt: number): number => attempt * attempt * 60_000;

export interface ClaimedDelivery {
  id: string;
  attempt: number;
  leaseToken: string;
  startedAt: Date;
  event: string;
  data: unknown;
  eventAt: Date;
  endpointId: string;
  accountId: string;
  url: string;
  secret: string;
  endpointActive: boolean;
}

export interface DeliveryWorkerDeps {
  sql: Sql;
  clock: Clock;
  log: Logger;
  sender: WebhookSender;
  /** Concurrent deliveries in this process. */
  concurrency: number;
  /** How long a claim lasts; a worker that dies releases its deliveries when it ends. */
  leaseMs: number;
  /** Consecutive deliveries failed for good before the endpoint is disabled. */
  disableAfterFailures: number;
  pollMs?: number;
}

/** The exact body sent; `id` repeats X-Webhook-Id so the de-duplication key is signed. */
export function deliveryBody(d: { id: string; event: string; data: unknown; eventAt: Date }): string {
  return JSON.stringify({ id: d.id, event: d.event, data: d.data, timestamp: d.eventAt.toISOString() });
}

/**
 * The delivery worker over `webhook_deliveries` as a durable queue. Several daemons may run it:
 * a delivery is claimed with `FOR UPDATE SKIP LOCKED` and leased to one worker (state
 * `in_flight`, `lease_token`, `due_at` = lease end); its result is written only by the holder
 * of that lease, so a delivery is never counted successful twice. A claim whose worker died is
 * found when its lease ends, recorded as a `worker_lost` attempt, and retried at once.
 */
export function createDeliveryWorker(deps: DeliveryWorkerDeps) {
  const { sql, clock, log } = deps;
  let timer: NodeJS.Timeout | undefined;
  let draining: Promise<number> | null = null;
  let stopping = false;
  let rerun = false;

  /** Ends leases of dead workers: the lost attempt counts, the delivery goes back to the queue. */
  async function reapLost(): Promise<number> {
    const now = clock.now();
    return sql.begin(async (tx) => {
      const lost = await tx<{ id: string; attempts: number; endpointId: string; accountId: string }[]>`
        select id, attempts, endpoint_id, account_id from webhook_deliveries
        where state = 'in_flight' and due_at <= ${now}
        order by due_at limit 100 for update skip locked`;
      for (const d of lost) {
        await tx`
          update webhook_attempts set finished_at = ${now}, outcome = 'worker_lost',
                 error = 'the worker ended before recording a result'
          where delivery_id = ${d.id} and attempt = ${d.attempts} and finished_at is null`;
        await settleFailure(
          tx,
          { ...d, attempt: d.attempts, startedAt: now },
          'worker lost during attempt',
          null,
          undefined,
          now,
        );
      }
      if (lost.length) log.warn({ count: lost.length }, 'webhook deliveries returned to the queue after lease end');
      return lost.length;
    });
  }

  /** Leases up to `limit` due deliveries to this worker and opens an attempt row for each. */
  async function claim(limit: number): Promise<ClaimedDelivery[]> {
    if (limit <= 0) return [];
    const now = clock.now();
    const leaseEnd = new Date(now.getTime() + deps.leaseMs);
    return sql.begin(async (tx) => {
      const rows = await tx<ClaimedDelivery[]>`
        with due as (
          select id from webhook_deliveries
          where state = 'pending' and due_at <= ${now}
          order by due_at limit ${limit}
          for update skip locked
        ), leased as (
          update webhook_deliveries d
          set state = 'in_flight', attempts = d.attempts + 1, due_at = ${leaseEnd}, lease_token = gen_random_uuid()
          from due where d.id = due.id
          returning d.id, d.attempts, d.lease_token, d.event_id, d.endpoint_id, d.account_id, d.event
        )
        select l.id, l.attempts as attempt, l.lease_token, l.event, ev.data, ev.created_at as event_at,
               l.endpoint_id, l.account_id, e.url, e.secret,
               (e.status = 'active' and e.deleted_at is null) as endpoint_active
        from leased l join events ev on ev.id = l.event_id join webhook_endpoints e on e.id = l.endpoint_id`;
      if (rows.length) {
        await tx`
          insert into webhook_attempts ${tx(rows.map((r) => ({ delivery_id: r.id, attempt: r.attempt, started_at: now })))}`;
      }
      return rows.map((r) => ({ ...r, startedAt: now }));
    });
  }

  /** A failed attempt: schedule the next one, or fail the delivery for good and count it against the endpoint. */
  async function settleFailure(
    tx: TransactionSql,
    d: { id: string; attempt: number; endpointId: string; accountId: string; startedAt: Date },
    error: string,
    statusCode: number | null,
    leaseToken?: string,
    retryAt?: Date,
  ): Promise<boolean> {
    const now = clock.now();
    const final = d.attempt >= MAX_ATTEMPTS;
    // Backoff counts from the attempt's start, so the schedule does not drift by response times.
    const next = retryAt ?? new Date(d.startedAt.getTime() + backoffMs(d.attempt));
    const updated = await tx`
      update webhook_deliveries
      set state = ${final ? 'failed' : 'pending'}, due_at = ${final ? null : next}, lease_token = null,
          last_status = ${statusCode}, last_error = ${error.slice(0, 500)}, completed_at = ${final ? now : null}
      where id = ${d.id} and state = 'in_flight' ${leaseToken ? tx`and lease_token = ${leaseToken}` : tx``}
      returning id`;
    if (updated.length === 0) return false;
    if (final) await countEndpointFailure(tx, d.endpointId, d.accountId, now);
    return true;
  }

  async function countEndpointFailure(tx: TransactionSql, endpointId: string, accountId: string, now: Date) {
    const [ep] = await tx<{ consecutiveFailures: number; status: string; url: string }[]>`
      update webhook_endpoints set consecutive_failures = consecutive_failures + 1
      where id = ${endpointId} returning consecutive_failures, status, url`;
    if (!ep || ep.status !== 'active' || ep.consecutiveFailures < deps.disableAfterFailures) return;
    await tx`
      update webhook_endpoints set status = 'disabled', disabled_at = ${now}, updated_at = ${now},
             disabled_reason = ${`${ep.consecutiveFailures} consecutive deliveries failed`}
      where id = ${endpointId}`;
    await tx`
      insert into notifications (id, account_id, kind, title, body, data, created_at)
      values (${newId()}, ${accountId}, 'webhook.endpoint_disabled', 'Webhook endpoint disabled',
              ${`Deliveries to ${ep.url} failed ${ep.consecutiveFailures} times in a row; the endpoint was disabled. Fix it, then enable it again.`},
              ${tx.json({ endpointId, url: ep.url, consecutiveFailures: ep.consecutiveFailures })}, ${now})`;
    log.warn({ endpointId, failures: ep.consecutiveFailures }, 'webhook endpoint disabled after consecutive failures');
  }

  /** Writes an attempt's result; only the current lease holder changes the delivery. */
  async function finish(
    d: ClaimedDelivery,
    r: Pick<AttemptResult, 'statusCode' | 'error' | 'responseExcerpt' | 'durationMs'> & {
      outcome: AttemptOutcome | 'endpoint_inactive';
    },
  ): Promise<boolean> {
    const now = clock.now();
    return sql.begin(async (tx) => {
      const att = await tx`
        update webhook_attempts set finished_at = ${now}, outcome = ${r.outcome}, status_code = ${r.statusCode},
               error = ${r.error}, response_excerpt = ${r.responseExcerpt}, duration_ms = ${r.durationMs}
        where delivery_id = ${d.id} and attempt = ${d.attempt} and finished_at is null
        returning 1`;
      if (att.length === 0) return false;
      if (r.outcome === 'ok') {
        const done = await tx`
          update webhook_deliveries
          set state = 'succeeded', due_at = null, lease_token = null, last_status = ${r.statusCode}, last_error = null, completed_at = ${now}
          where id = ${d.id} and state = 'in_flight' and lease_token = ${d.leaseToken}
          returning id`;
        if (done.length === 0) return false;
        await tx`update webhook_endpoints set consecutive_failures = 0 where id = ${d.endpointId} and consecutive_failures <> 0`;
        return true;
      }
      if (r.outcome === 'endpoint_inactive') {
        // Nothing was sent: the endpoint was disabled or deleted after the event; end the delivery without counting it.
        const ended = await tx`
          update webhook_deliveries set state = 'failed', due_at = null, lease_token = null, last_error = ${r.error}, completed_at = ${now}
          where id = ${d.id} and state = 'in_flight' and lease_token = ${d.leaseToken} returning id`;
        return ended.length > 0;
      }
      return settleFailure(tx, d, r.error ?? r.outcome, r.statusCode, d.leaseToken);
    });
  }

  /** Sends one claimed delivery and records the result. */
  async function deliver(d: ClaimedDelivery): Promise<void> {
    try {
      if (!d.endpointActive) {
        await finish(d, {
          outcome: 'endpoint_inactive',
          statusCode: null,
          error: 'endpoint disabled or deleted',
          responseExcerpt: null,
          durationMs: 0,
        });
        return;
      }
      const body = deliveryBody(d);
      const headers = {
        'x-webhook-event': d.event,
        'x-webhook-id': d.id,
        ...signPayload(d.secret, Math.floor(clock.now().getTime() / 1000), body),
      };
      const result = await deps.sender({ url: d.url, headers, body });
      const recorded = await finish(d, result);
      if (!recorded) log.warn({ deliveryId: d.id, attempt: d.attempt }, 'webhook result discarded: lease ended first');
      else
        log.debug(
          { deliveryId: d.id, attempt: d.attempt, outcome: result.outcome, status: result.statusCode },
          'webhook attempt',
        );
    } catch (err) {
      // The lease ends and reapLost retries it; nothing is lost.
      log.error({ err, deliveryId: d.id }, 'webhook attempt could not be recorded');
    }
  }

  /** Delivers everything due now, `concurrency` at a time; resolves with the number of attempts made. */
  async function drainOnce(): Promise<number> {
    await reapLost();
    let attempts = 0;
    const active = new Set<Promise<void>>();
    for (;;) {
      if (stopping) break;
      const free = deps.concurrency - active.size;
      const claimed = free > 0 ? await claim(free) : [];
      for (const c of claimed) {
        const p: Promise<void> = deliver(c).finally(() => active.delete(p));
        active.add(p);
        attempts++;
      }
      if (claimed.length === free && free > 0) continue;
      if (active.size === 0) break;
      await Promise.race(active);
    }
    await Promise.all(active);
    return attempts;
  }

  const worker = {
    claim,
    deliver,
    reapLost,
    /** One pass: reap dead leases, then deliver all that is due. Concurrent calls share the pass. */
    runOnce(): Promise<number> {
      if (draining) {
        // Work queued during a pass may have been missed by its last claim: run one more pass after it.
        rerun = true;
        return draining;
      }
      draining = (async () => {
        let n = 0;
        do {
          rerun = false;
          n += await drainOnce();
        } while (rerun && !stopping);
        return n;
      })().finally(() => {
        draining = null;
      });
      return draining;
    },
    /** Polls the queue; a pass still running is not started twice. */
    start() {
      if (deps.concurrency <= 0 || timer) return;
      stopping = false;
      const tick = () => void worker.runOnce().catch((err) => log.error({ err }, 'webhook worker pass failed'));
      timer = setInterval(tick, deps.pollMs ?? 1000);
      timer.unref();
      tick();
    },
    /** Stops polling and waits for attempts in flight (each bounded by the sender's timeout). */
    async stop() {
      stopping = true;
      clearInterval(timer);
      timer = undefined;
      await draining?.catch(() => undefined);
      deps.sender.close?.();
    },
  };
  return worker;
}

export type DeliveryWorker = ReturnType<typeof createDeliveryWorker>;
