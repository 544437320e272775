import t from 'tap';
import { emit, emitMany, UnknownEventError } from '../../src/webhooks/emit.js';
import type { EventName } from '../../src/webhooks/events.js';
import { newId } from '../../src/platform/ids.js';
import type { Sql } from '../../src/db/connection.js';
import { createTestDatabase } from '../helpers/db.js';

async function account(sql: Sql) {
  const id = newId();
  await sql`insert into accounts (id, email) values (${id}, ${id + '@example.test'})`;
  return id;
}

async function endpoint(sql: Sql, accountId: string, events: string[], status = 'active') {
  const id = newId();
  await sql`
    insert into webhook_endpoints (id, account_id, url, events, secret, status, created_at, updated_at)
    values (${id}, ${accountId}, 'https://hooks.example.test/x', ${events}, 'whsec_test', ${status}, now(), now())`;
  return id;
}

t.test('emit writes the event and fans out to subscribed active endpoints in the caller transaction', async (t) => {
  const { sql } = await createTestDatabase(t);
  const acc = await account(sql);
  const other = await account(sql);
  const all = await endpoint(sql, acc, ['*']);
  const topups = await endpoint(sql, acc, ['topup.confirmed']);
  await endpoint(sql, acc, ['balance.low']);
  await endpoint(sql, acc, ['*'], 'disabled');
  await endpoint(sql, other, ['*']);

  const res = await sql.begin((tx) =>
    emit(tx, { accountId: acc, event: 'topup.confirmed', data: { amount: '10.000000' } }),
  );
  t.equal(res.deliveries, 2);
  const rows = await sql<{ endpointId: string; state: string; eventId: string }[]>`
    select endpoint_id, state, event_id from webhook_deliveries order by endpoint_id`;
  t.same(rows.map((r) => r.endpointId).sort(), [all, topups].sort());
  t.ok(rows.every((r) => r.state === 'pending' && r.eventId === res.eventId));
  const [ev] = await sql<{ data: unknown; event: string }[]>`select data, event from events where id = ${res.eventId}`;
  t.same(ev, { data: { amount: '10.000000' }, event: 'topup.confirmed' });
});

t.test('a transaction that rolls back emits nothing', async (t) => {
  const { sql } = await createTestDatabase(t);
  const acc = await account(sql);
  await endpoint(sql, acc, ['*']);
  await t.rejects(
    sql.begin(async (tx) => {
      await emit(tx, { accountId: acc, event: 'balance.low', data: { balance: '1.000000' } });
      throw new Error('business rule failed after emit');
    }),
    /business rule failed/,
  );
  const [c] = await sql<{ events: string; deliveries: string }[]>`
    select (select count(*) from events) as events, (select count(*) from webhook_deliveries) as deliveries`;
  t.same(c, { events: '0', deliveries: '0' });
});

t.test("a delivery's state stays one of the four (the domain of migration 334)", async (t) => {
  const { sql } = await createTestDatabase(t);
  const acc = await account(sql);
  await endpoint(sql, acc, ['*']);
  await sql.begin((tx) => emit(tx, { accountId: acc, event: 'balance.low', data: { balance: '1.000000' } }));
  for (const state of ['in_flight', 'succeeded', 'failed', 'pending'])
    await sql`update webhook_deliveries set state = ${state}`;
  await t.rejects(sql`update webhook_deliveries set state = 'delivered'`, { code: '23514' }, 'an unknown state');
  const [row] = await sql<{ state: string }[]>`select state from webhook_deliveries`;
  t.equal(row!.state, 'pending', 'the refused update changed nothing');
});

t.test('emit refuses names outside the spec list and non-object data', async (t) => {
  const { sql } = await createTestDatabase(t);
  const acc = await account(sql);
  await t.rejects(emit(sql, { accountId: acc, event: 'ping' as EventName, data: {} }), UnknownEventError);
  await t.rejects(
    emit(sql, { accountId: acc, event: 'nope.event' as EventName, data: {} }),
    /unknown webhook event "nope.event"/,
  );
  await t.rejects(
    emit(sql, { accountId: acc, event: 'balance.low', data: [] as unknown as Record<string, unknown> }),
    TypeError,
  );
  const [c] = await sql<{ n: string }[]>`select count(*) as n from events`;
  t.equal(c?.n, '0');
});

t.test('delivery ids made in SQL are UUIDv7 in time order', async (t) => {
  const { sql } = await createTestDatabase(t);
  const ids = await sql<{ id: string }[]>`select webhook_new_id() as id from generate_series(1, 3)`;
  for (const { id } of ids) t.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
});

t.test('the deliveries of an emit carry UUIDv7 ids with the event id as time prefix, all distinct', async (t) => {
  const { sql } = await createTestDatabase(t);
  const acc = await account(sql);
  for (let i = 0; i < 40; i++) await endpoint(sql, acc, ['*']);
  const events = [];
  for (let i = 0; i < 3; i++) {
    events.push(await sql.begin((tx) => emit(tx, { accountId: acc, event: 'balance.low', data: { i } })));
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  const rows = await sql<{ id: string; eventId: string }[]>`select id, event_id from webhook_deliveries`;
  t.equal(rows.length, 120);
  t.equal(new Set(rows.map((r) => r.id)).size, 120, 'no two alike');
  const prefix = (id: string) => id.replace(/-/g, '').slice(0, 16);
  const v7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
  t.same(
    rows.filter((r) => !v7.test(r.id) || prefix(r.id) !== prefix(r.eventId)),
    [],
    'version 7, variant 10, the event id first 8 bytes',
  );
  // Ids of emits a millisecond or more apart sort as the emits, as the newest-first delivery lists show them.
  const byId = [...rows].sort((a, b) => (a.id < b.id ? -1 : 1)).map((r) => r.eventId);
  t.same(
    [...new Set(byId)],
    events.map((e) => e.eventId),
  );
});

t.test('emitMany writes each event and fans each out like emit, in one statement', async (t) => {
  const { sql } = await createTestDatabase(t);
  const acc = await account(sql);
  const other = await account(sql);
  const all = await endpoint(sql, acc, ['*']);
  const sent = await endpoint(sql, acc, ['sms.sent']);
  const otherAll = await endpoint(sql, other, ['*']);
  const at = new Date('2026-01-02T03:04:05.000Z');
  await sql.begin((tx) =>
    emitMany(tx, [
      { accountId: acc, event: 'sms.sent', at, data: { messageId: 'a', cost: '0.010000' } },
      { accountId: acc, event: 'sms.failed', data: { messageId: 'b' } },
      { accountId: other, event: 'sms.sent', at, data: { messageId: 'c' } },
    ]),
  );
  const evs = await sql<
    { event: string; data: { messageId: string }; createdAt: Date; n: number; endpoints: string[] }[]
  >`
    select e.event, e.data, e.created_at, count(d.id)::int as n, coalesce(array_agg(d.endpoint_id::text order by d.endpoint_id) filter (where d.id is not null), '{}') as endpoints
    from events e left join webhook_deliveries d on d.event_id = e.id
    group by e.id order by e.data->>'messageId'`;
  t.same(
    evs.map((e) => [e.event, e.data.messageId, e.endpoints]),
    [
      ['sms.sent', 'a', [all, sent].sort()],
      ['sms.failed', 'b', [all]],
      ['sms.sent', 'c', [otherAll]],
    ],
  );
  t.equal(evs[0]!.createdAt.toISOString(), at.toISOString(), 'the given time is kept');
  t.same(evs[0]!.data, { messageId: 'a', cost: '0.010000' }, 'data as given');
  await t.rejects(emitMany(sql, [{ accountId: acc, event: 'sms.nope' as EventName, data: {} }]), UnknownEventError);
});
