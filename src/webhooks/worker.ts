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
  /** Deliveries leased per claim statement; default 4 × concurrency. */
  claimBatch?: number;
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

  /** Leases up to `limit` due deliveries to this worker and opens an attempt row for each (one statement). */
  async function claim(limit: number): Promise<ClaimedDelivery[]> {
    if (limit <= 0) return [];
    const now = clock.now();
    const leaseEnd = new Date(now.getTime() + deps.leaseMs);
    const rows = await sql<ClaimedDelivery[]>`
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
      ), opened as (
        insert into webhook_attempts (delivery_id, attempt, started_at)
        select l.id, l.attempts, ${now} from leased l
      )
      select l.id, l.attempts as attempt, l.lease_token, l.event, ev.data, ev.created_at as event_at,
             l.endpoint_id, l.account_id, e.url, e.secret,
             (e.status = 'active' and e.deleted_at is null) as endpoint_active
      from leased l join events ev on ev.id = l.event_id join webhook_endpoints e on e.id = l.endpoint_id
      order by l.id`;
    return rows.map((r) => ({ ...r, startedAt: now }));
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

  type Result = Pick<AttemptResult, 'statusCode' | 'error' | 'responseExcerpt' | 'durationMs'> & {
    outcome: AttemptOutcome | 'endpoint_inactive';
  };
  interface Pending {
    d: ClaimedDelivery;
    r: Result;
    done: (recorded: boolean) => void;
    fail: (err: unknown) => void;
  }
  const pending: Pending[] = [];
  let flushing = false;

  /**
   * Writes an attempt's result; only the current lease holder changes the delivery. Results that
   * arrive while a write runs are written together by the next one (group commit): one
   * transaction and a few set-based statements for many deliveries, each result still recorded
   * before its delivery counts as done. Resolves false when the lease had ended first.
   */
  function finish(d: ClaimedDelivery, r: Result): Promise<boolean> {
    return new Promise<boolean>((done, fail) => {
      pending.push({ d, r, done, fail });
      if (!flushing) void flush();
    });
  }

  async function flush(): Promise<void> {
    flushing = true;
    try {
      while (pending.length > 0) {
        const batch = pending.splice(0, 500);
        try {
          const recorded = await finishMany(batch);
          for (const p of batch) p.done(recorded.has(p.d.id));
        } catch (err) {
          for (const p of batch) p.fail(err);
        }
      }
    } finally {
      flushing = false;
    }
  }

  /** The ids of the deliveries whose result was recorded under their lease. */
  async function finishMany(batch: Pending[]): Promise<Set<string>> {
    const now = clock.now();
    return sql.begin(async (tx) => {
      const attempts = batch.map(({ d, r }) => ({
        id: d.id,
        attempt: d.attempt,
        outcome: r.outcome,
        status: r.statusCode,
        error: r.error,
        excerpt: r.responseExcerpt,
        ms: r.durationMs,
      }));
      const opened = await tx<{ deliveryId: string }[]>`
        update webhook_attempts a set finished_at = ${now}, outcome = x.outcome, status_code = x.status,
               error = x.error, response_excerpt = x.excerpt, duration_ms = x.ms
        from jsonb_to_recordset(${tx.json(attempts as never)})
          as x(id uuid, attempt integer, outcome text, status integer, error text, excerpt text, ms integer)
        where a.delivery_id = x.id and a.attempt = x.attempt and a.finished_at is null
        returning a.delivery_id`;
      const open = new Set(opened.map((o) => o.deliveryId));
      const recorded = new Set<string>();
      const live = batch.filter((p) => open.has(p.d.id));
      const ended = live.filter((p) => p.r.outcome === 'ok' || p.r.outcome === 'endpoint_inactive');
      if (ended.length > 0) {
        const rows = ended.map(({ d, r }) => ({
          id: d.id,
          token: d.leaseToken,
          ok: r.outcome === 'ok',
          status: r.statusCode,
          error: r.outcome === 'ok' ? null : r.error,
        }));
        // Acknowledged: succeeded. Endpoint inactive: nothing was sent (the endpoint was disabled or
        // deleted after the event), so the delivery ends failed without counting against the endpoint.
        const closed = await tx<{ id: string; endpointId: string; ok: boolean }[]>`
          update webhook_deliveries d
          set state = case when x.ok then 'succeeded' else 'failed' end, due_at = null, lease_token = null,
              last_status = case when x.ok then x.status else d.last_status end, last_error = x.error, completed_at = ${now}
          from jsonb_to_recordset(${tx.json(rows as never)}) as x(id uuid, token uuid, ok boolean, status integer, error text)
          where d.id = x.id and d.state = 'in_flight' and d.lease_token = x.token
          returning d.id, d.endpoint_id, x.ok`;
        for (const c of closed) recorded.add(c.id);
        const acked = [...new Set(closed.filter((c) => c.ok).map((c) => c.endpointId))].sort();
        if (acked.length > 0)
          await tx`update webhook_endpoints set consecutive_failures = 0 where id = any(${acked}::uuid[]) and consecutive_failures <> 0`;
      }
      // Failures one by one (rare, and each may disable its endpoint), in endpoint order so two
      // workers' batches lock endpoints in the same order.
      const failed = live
        .filter((p) => p.r.outcome !== 'ok' && p.r.outcome !== 'endpoint_inactive')
        .sort((a, b) => (a.d.endpointId < b.d.endpointId ? -1 : a.d.endpointId > b.d.endpointId ? 1 : 0));
      for (const { d, r } of failed) {
        if (await settleFailure(tx, d, r.error ?? r.outcome, r.statusCode, d.leaseToken)) recorded.add(d.id);
      }
      return recorded;
    });
  }

  /**
   * Sends one claimed delivery and records the result. `sent` is called once the attempt is over
   * (before its result is written), so the caller may start the next send meanwhile: a result not
   * yet written when the process dies is an attempt whose lease ends, retried (at least once).
   */
  async function deliver(d: ClaimedDelivery, sent?: () => void): Promise<void> {
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
      sent?.();
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
    } finally {
      sent?.();
    }
  }

  /**
   * Delivers everything due now, `concurrency` at a time; resolves with the number of attempts made.
   * Claims run ahead of the sends in batches of `claimBatch` (one statement each), so a claim is
   * not a transaction per delivery. A claimed delivery waits at most `claimBatch / concurrency`
   * attempt times before it is sent; with the default 4 × concurrency and the lease of timeout +
   * 60 s, the lease outlives that wait.
   */
  async function drainOnce(): Promise<number> {
    await reapLost();
    if (deps.concurrency <= 0) return 0;
    const claimBatch = deps.claimBatch ?? Math.max(1, deps.concurrency * 4);
    let attempts = 0;
    let more = true;
    const ready: ClaimedDelivery[] = [];
    // Sends in progress (at most `concurrency`) and attempts whose result is still being written.
    const active = new Set<Promise<void>>();
    const recording = new Set<Promise<void>>();
    const launch = (d: ClaimedDelivery) => {
      let release!: () => void;
      const sending = new Promise<void>((resolve) => (release = resolve));
      active.add(sending);
      const whole: Promise<void> = deliver(d, () => {
        active.delete(sending);
        release();
      }).finally(() => recording.delete(whole));
      recording.add(whole);
      attempts++;
    };
    for (;;) {
      // Once stopping, claim nothing more but send what this pass already holds.
      if (stopping) more = false;
      while (ready.length > 0 && active.size < deps.concurrency) launch(ready.shift()!);
      if (more && ready.length < deps.concurrency) {
        const want = claimBatch - ready.length;
        const claimed = await claim(want);
        if (claimed.length < want) more = false;
        ready.push(...claimed);
        continue;
      }
      if (active.size === 0) {
        if (ready.length === 0) break;
        continue;
      }
      await Promise.race(active);
    }
    await Promise.all(recording);
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
