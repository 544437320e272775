import t from 'tap';
import type postgres from 'postgres';
import { connect, type Sql } from '../../src/db/connection.js';
import { createLedger, type Ledger } from '../../src/ledger/ledger.js';
import { emit } from '../../src/webhooks/emit.js';
import type { EventName } from '../../src/webhooks/events.js';
import { createTestDatabase } from '../helpers/db.js';
import { checkInvariants, makeAccounts, silent } from './helpers.js';

// ledger_charge since migration 344: the posting key's lock is taken by an assignment (a simple
// expression, no statement) and the platform shard is read from the session setting, ledger_shard()
// running only on a session's first posting. ledger.charge sends one statement per shape.

function daemonLedger(sql: Sql): Ledger {
  return createLedger({
    sql,
    clock: { now: () => new Date() },
    log: silent,
    lowBalanceThreshold: '5',
    events: {
      emit: async (db, accountId, event, data) => {
        await emit(db, { accountId, event: event as EventName, data });
      },
    },
  });
}

const shardBalances = (sql: Sql) =>
  sql<{ kind: string; shard: number; balance: string }[]>`
    select a.kind::text as kind, s.shard, s.balance::text as balance
    from ledger_account_shards s join ledger_accounts a on a.id = s.account_id
    where a.kind in ('platform_fee', 'platform_revenue') and s.balance <> 0
    order by a.kind, s.shard`;

t.test("a charge's platform fee and revenue land on the backend's own shard, from its first posting on", async (t) => {
  const { url } = await createTestDatabase(t);
  const sql = connect({ url, max: 2, log: silent });
  t.teardown(() => sql.end({ timeout: 2 }));
  const [buyer] = await makeAccounts(sql, 1);
  await createLedger({ sql, clock: { now: () => new Date() }, log: silent }).topup({
    accountId: buyer!,
    amount: '100.000000',
    source: 'wire',
    postingKey: 'top',
  });
  // A session of its own, which has posted nothing yet (the pool's did the top-up).
  const fresh = connect({ url, max: 1, log: silent });
  t.teardown(() => fresh.end({ timeout: 2 }));
  const c: postgres.ReservedSql = await fresh.reserve();
  t.teardown(() => c.release());
  const charge = (key: string, fee: string) => c`
    select ledger_charge(${key}, ${buyer!}::uuid, null, 1.000000, ${fee}::numeric, false, null, null, null, null, now())`;

  const [unset] = await c<{ v: string | null }[]>`select current_setting('ledger.shard', true) as v`;
  t.notOk(unset!.v, 'a new session has no shard yet');
  // First posting of the session, inside a transaction that rolls back: ledger_shard() claims a shard.
  await c`begin`;
  await charge('rolled-back', '0.500000');
  await c`rollback`;
  t.same(await shardBalances(sql), [], 'a rolled-back charge moved no shard');
  await charge('first', '0.500000');
  const mine = (await c<{ s: number }[]>`select ledger_shard() as s`)[0]!.s;
  t.same(
    await shardBalances(sql),
    [
      { kind: 'platform_fee', shard: mine, balance: '0.500000' },
      { kind: 'platform_revenue', shard: mine, balance: '1.000000' },
    ],
    "the first charge after a rollback: revenue and fee on the session's shard",
  );
  await charge('second', '0.250000');
  await charge('no-fee', '0');
  t.same(
    await shardBalances(sql),
    [
      { kind: 'platform_fee', shard: mine, balance: '0.750000' },
      { kind: 'platform_revenue', shard: mine, balance: '3.000000' },
    ],
    'later charges on the same shard',
  );
  await checkInvariants(t, sql);
});

t.test('two calls of one posting key at once: the second waits for the first and replays it', async (t) => {
  const { url } = await createTestDatabase(t);
  // Two connections reserved for the calls, one left for the rest.
  const sql = connect({ url, max: 3, log: silent });
  t.teardown(() => sql.end({ timeout: 2 }));
  const [buyer, seller] = await makeAccounts(sql, 2);
  const ledger = daemonLedger(sql);
  await ledger.topup({ accountId: buyer!, amount: '100.000000', source: 'wire', postingKey: 'top' });
  const a = await sql.reserve();
  const b = await sql.reserve();
  t.teardown(() => {
    a.release();
    b.release();
  });
  const input = { postingKey: 'same', accountId: buyer!, sellerId: seller!, amount: '1.000000', fee: '0.100000' };
  await a`begin`;
  const first = await ledger.charge(input, a);
  const pid = (await b<{ pid: number }[]>`select pg_backend_pid() as pid`)[0]!.pid;
  const second = ledger.charge(input, b);
  // The second call waits on the key's advisory lock, which the first holds until it commits.
  for (let i = 0; ; i++) {
    const [w] = await sql<{ n: number }[]>`
      select count(*)::int as n from pg_locks where pid = ${pid} and locktype = 'advisory' and not granted`;
    if (w!.n === 1) break;
    if (i > 500) throw new Error('the second call never waited on the key');
    await new Promise((r) => setImmediate(r));
  }
  await a`commit`;
  const replay = await second;
  t.equal(first.replayed, false);
  t.same(replay, { ...first, replayed: true }, 'the second call returns the first result as a replay');
  const [n] = await sql<{ n: number }[]>`select count(*)::int as n from postings where posting_key = 'same'`;
  t.equal(n!.n, 1, 'one posting');
  await checkInvariants(t, sql);
});

t.test("ledger.charge's result: the function's fields, never a signal, with and without events", async (t) => {
  const { sql } = await createTestDatabase(t);
  const [buyer, seller] = await makeAccounts(sql, 2);
  const plain = createLedger({ sql, clock: { now: () => new Date() }, log: silent });
  const withEvents = daemonLedger(sql);
  await plain.topup({ accountId: buyer!, amount: '6.000000', source: 'card', postingKey: 'top' });
  const keys = [
    'type',
    'accountId',
    'mode',
    'amount',
    'fee',
    'total',
    'balanceAfter',
    'balanceBefore',
    'capReached',
    'postingId',
    'replayed',
  ].sort();
  const a = await plain.charge({ postingKey: 'p1', accountId: buyer!, sellerId: seller!, amount: '0.5', fee: '0.1' });
  t.same(Object.keys(a).sort(), keys, 'without an event sink');
  t.match(a, { type: 'charge', mode: 'live', amount: '0.500000', fee: '0.100000', total: '0.600000' });
  t.match(a, { balanceBefore: '6.000000', balanceAfter: '5.400000', capReached: false, replayed: false });
  const b = await withEvents.charge({ postingKey: 'p2', accountId: buyer!, sellerId: seller!, amount: '0.2' });
  t.same(Object.keys(b).sort(), keys, 'with an event sink, above the line');
  // Crossing the line: refused on the pool (SVC90), posted again in a transaction with its event.
  const crossing = await withEvents.charge({ postingKey: 'p3', accountId: buyer!, sellerId: seller!, amount: '1' });
  t.same(Object.keys(crossing).sort(), keys, 'crossing the line: the signal taken off');
  t.equal(crossing.balanceAfter, '4.200000');
  const [ev] = await sql<{ n: number }[]>`select count(*)::int as n from events where event = 'balance.low'`;
  t.equal(ev!.n, 1, 'its event in the outbox');
  const again = await withEvents.charge({ postingKey: 'p3', accountId: buyer!, sellerId: seller!, amount: '1' });
  t.same(again, { ...crossing, replayed: true }, 'a replay returns the first result');
  const off = await withEvents.charge({ postingKey: 'p4', accountId: buyer!, sellerId: seller!, amount: '0.1' }, sql, {
    events: false,
  });
  t.same(Object.keys(off).sort(), keys, 'events: false');
  await checkInvariants(t, sql);
});
