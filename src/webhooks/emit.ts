import type { Db } from '../db/connection.js';
import { newId } from '../platform/ids.js';
import { isEventName, type EventName } from './events.js';

export interface EmitInput {
  /** The account whose endpoints receive the event. */
  accountId: string;
  event: EventName;
  /** JSON object; it becomes `data` of the delivered body as is. */
  data: Record<string, unknown>;
  /** When the event happened; defaults to the database's transaction time. */
  at?: Date;
}

/** A programming error: emit was called with a name outside the spec's list. */
export class UnknownEventError extends Error {
  override name = 'UnknownEventError';
}

/**
 * Writes an event to the outbox inside the caller's transaction and fans it out at once to a
 * delivery per active endpoint of the account subscribed to it. A change that rolls back
 * therefore emits nothing, and a committed change never loses its event. The worker
 * (`createDeliveryWorker`) sends the deliveries after commit. One statement.
 * A first attempt is due at '-infinity' (always due, before any retry) rather than at a time,
 * so it does not depend on the database clock agreeing with the worker's (injected) clock.
 *
 * Pass the transaction (`sql.begin(async (tx) => emit(tx, …))`); passing the pool commits the
 * event on its own. An event that does not depend on the answer of the change it reports goes with
 * that change's statement, pipelined on the transaction's connection: `await Promise.all([write,
 * emit(tx, …)])` is one round trip where two awaits in a row are two. Await both before the
 * transaction's callback returns: postgres.js sends COMMIT without reading its reply, so a failed
 * statement still in flight at that point would roll the transaction back unnoticed.
 */
export async function emit(db: Db, input: EmitInput): Promise<{ eventId: string; deliveries: number }> {
  if (!isEventName(input.event)) throw new UnknownEventError(`unknown webhook event "${String(input.event)}"`);
  if (input.data === null || typeof input.data !== 'object' || Array.isArray(input.data)) {
    throw new TypeError('webhook event data must be a JSON object');
  }
  const eventId = newId();
  const at = input.at ?? null;
  // The fan-out is the statement itself and its count is the command tag's: a wrapping
  // `select count(*)` costs the server another CTE scan and an aggregate per emit. The endpoints
  // are found by the account parameter, not through the inserted row: joined to the CTE, a plan
  // made without table statistics scanned every endpoint of every account. (A data-modifying WITH
  // runs to completion all the same.) Every column of the delivery is given, in table order and of
  // its column's type (the state's domain, migration 334, included), so the select is the insert's
  // input as is, with no Subquery Scan to start and project through per emit; a column added to
  // the table belongs here too. A delivery's id is the event id's time prefix and random bits
  // (webhook_delivery_id, migration 333).
  const fanned = await db`
    with ev as (
      insert into events (id, account_id, event, data, created_at)
      values (${eventId}, ${input.accountId}, ${input.event}, ${db.json(input.data as never)}, coalesce(${at}::timestamptz, now()))
    )
    insert into webhook_deliveries (id, event_id, endpoint_id, account_id, event, state, attempts, due_at,
                                    lease_token, last_status, last_error, resent_from, created_at, completed_at)
    select webhook_delivery_id(${eventId}::uuid), ${eventId}::uuid, e.id, ${input.accountId}::uuid, ${input.event}::text, 'pending'::webhook_delivery_state, 0,
           '-infinity'::timestamptz, null::uuid, null::integer, null::text, null::uuid,
           coalesce(${at}::timestamptz, now()), null::timestamptz
    from webhook_endpoints e
    where e.account_id = ${input.accountId} and e.status = 'active' and e.deleted_at is null
      and (${input.event} = any (e.events) or '*' = any (e.events))`;
  return { eventId, deliveries: fanned.count };
}

/**
 * `emit` of many events in one statement (a batch of sends that commit together): the same rows,
 * fanned out the same way, one executor start and round trip for the lot.
 */
export async function emitMany(db: Db, inputs: EmitInput[]): Promise<void> {
  if (inputs.length === 0) return;
  for (const input of inputs) {
    if (!isEventName(input.event)) throw new UnknownEventError(`unknown webhook event "${String(input.event)}"`);
    if (input.data === null || typeof input.data !== 'object' || Array.isArray(input.data)) {
      throw new TypeError('webhook event data must be a JSON object');
    }
  }
  const rows = inputs.map((i) => ({
    id: newId(),
    account_id: i.accountId,
    event: i.event,
    data: i.data,
    created_at: i.at?.toISOString() ?? null,
  }));
  // The batch's accounts bound the endpoints read: joined to the CTE alone, the plan hashed every
  // endpoint of every account.
  const accounts = [...new Set(inputs.map((i) => i.accountId))];
  await db`
    with ev as (
      insert into events (id, account_id, event, data, created_at)
      select x.id, x.account_id, x.event, x.data, coalesce(x.created_at, now())
      from jsonb_to_recordset(${db.json(rows as never)}) as x(id uuid, account_id uuid, event text, data jsonb, created_at timestamptz)
      returning id, account_id, event, created_at
    )
    insert into webhook_deliveries (id, event_id, endpoint_id, account_id, event, state, due_at, created_at)
    select webhook_delivery_id(ev.id), ev.id, e.id, ev.account_id, ev.event, 'pending', '-infinity', ev.created_at
    from ev join webhook_endpoints e
      on e.account_id = ev.account_id and e.status = 'active' and e.deleted_at is null
     and (ev.event = any (e.events) or '*' = any (e.events))
    where e.account_id = any (${accounts}::uuid[])`;
}

/**
 * Queues one delivery of an event to one endpoint, whatever its filter: the `ping` of
 * `POST /account/webhooks/{id}/test`, and resends (a new delivery of the same event).
 */
export async function enqueueForEndpoint(
  db: Db,
  input:
    | { accountId: string; endpointId: string; event: EventName | 'ping'; data: Record<string, unknown>; at: Date }
    | {
        accountId: string;
        endpointId: string;
        resendOf: string;
        at: Date;
      },
): Promise<string> {
  if ('resendOf' in input) {
    const [row] = await db<{ id: string }[]>`
      insert into webhook_deliveries (id, event_id, endpoint_id, account_id, event, state, due_at, created_at, resent_from)
      select webhook_new_id(), d.event_id, d.endpoint_id, d.account_id, d.event, 'pending', '-infinity', ${input.at}, d.id
      from webhook_deliveries d where d.id = ${input.resendOf} and d.account_id = ${input.accountId}
      returning id`;
    if (!row) throw new Error('delivery to resend not found');
    return row.id;
  }
  const eventId = newId();
  const [row] = await db<{ id: string }[]>`
    with ev as (
      insert into events (id, account_id, event, data, created_at)
      values (${eventId}, ${input.accountId}, ${input.event}, ${db.json(input.data as never)}, ${input.at})
      returning id
    )
    insert into webhook_deliveries (id, event_id, endpoint_id, account_id, event, state, due_at, created_at)
    select webhook_new_id(), ev.id, ${input.endpointId}, ${input.accountId}, ${input.event}, 'pending', '-infinity', ${input.at}
    from ev
    returning id`;
  return row!.id;
}
