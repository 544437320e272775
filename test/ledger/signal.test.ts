import t from 'tap';
import type { Sql } from '../../src/db/connection.js';
import { createLedger, type Ledger } from '../../src/ledger/ledger.js';
import { emit } from '../../src/webhooks/emit.js';
import type { EventName } from '../../src/webhooks/events.js';
import { createTestDatabase } from '../helpers/db.js';
import { checkInvariants, makeAccounts, silent } from './helpers.js';

// A debit's balance events are decided in the posting's own statement (migration 283); on the
// pool a posting with events goes again in a transaction, so it and its outbox rows commit together.

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

const outbox = (sql: Sql) =>
  sql<{ accountId: string; event: string; data: Record<string, unknown> }[]>`
    select account_id, event, data from events where event in ('balance.low', 'sub_account.balance_low') order by created_at, id`;

const postings = async (sql: Sql, key: string) =>
  Number((await sql<{ n: string }[]>`select count(*)::text as n from postings where posting_key = ${key}`)[0]!.n);

t.test('a charge on the pool: one posting, its low-balance event only when it crosses the line', async (t) => {
  const { sql } = await createTestDatabase(t);
  const ledger = daemonLedger(sql);
  const [buyer, seller] = await makeAccounts(sql, 2);
  await ledger.topup({ accountId: buyer!, amount: '6.000000', source: 'card', postingKey: 'top' });

  const first = await ledger.charge({ postingKey: 'c1', accountId: buyer!, sellerId: seller!, amount: '0.500000' });
  t.equal(first.balanceAfter, '5.500000');
  t.same(await outbox(sql), [], 'above the line: no event');

  const second = await ledger.charge({
    postingKey: 'c2',
    accountId: buyer!,
    sellerId: seller!,
    amount: '0.900000',
    fee: '0.100000',
  });
  t.equal(second.balanceAfter, '4.500000');
  t.equal(await postings(sql, 'c2'), 1, 'the posting refused on the pool and sent again is posted once');
  t.same(await outbox(sql), [
    { accountId: buyer!, event: 'balance.low', data: { accountId: buyer!, balance: '4.500000' } },
  ]);

  const replay = await ledger.charge({ postingKey: 'c2', accountId: buyer!, sellerId: seller!, amount: '0.900000' });
  t.equal(replay.replayed, true);
  await ledger.charge({ postingKey: 'c3', accountId: buyer!, sellerId: seller!, amount: '0.500000' });
  t.equal((await outbox(sql)).length, 1, 'a replay and a debit below the line emit nothing more');
  await checkInvariants(t, sql);
});

t.test("inside the caller's transaction the event joins it, and leaves with it on rollback", async (t) => {
  const { sql } = await createTestDatabase(t);
  const ledger = daemonLedger(sql);
  const [operator] = await makeAccounts(sql, 1);
  const [sub] = await makeAccounts(sql, 1, operator!);
  await ledger.topup({ accountId: sub!, amount: '6.000000', source: 'card', postingKey: 'top' });

  await t.rejects(
    sql.begin(async (tx) => {
      await ledger.charge({ postingKey: 'rolled', accountId: sub!, amount: '2.000000' }, tx);
      t.equal((await tx`select 1 from events where event = 'sub_account.balance_low'`).length, 1, 'emitted in tx');
      throw new Error('caller fails');
    }),
    /caller fails/,
  );
  t.equal(await postings(sql, 'rolled'), 0);
  t.same(await outbox(sql), [], 'no event without its posting');

  await sql.begin((tx) => ledger.charge({ postingKey: 'kept', accountId: sub!, amount: '2.000000' }, tx));
  t.same(await outbox(sql), [
    {
      accountId: operator!,
      event: 'sub_account.balance_low',
      data: { subAccountId: sub!, accountId: sub!, balance: '4.000000' },
    },
  ]);
  await checkInvariants(t, sql);
});

t.test('a settle on the pool crossing the line emits once with its posting', async (t) => {
  const { sql } = await createTestDatabase(t);
  const ledger = daemonLedger(sql);
  const [buyer] = await makeAccounts(sql, 1);
  await ledger.topup({ accountId: buyer!, amount: '6.000000', source: 'card', postingKey: 'top' });
  const hold = await ledger.hold({ postingKey: 'h', accountId: buyer!, amount: '3.000000', ttlSeconds: 60 });
  const s = await ledger.settle({ postingKey: 's', holdId: hold.holdId, amount: '1.500000', fee: '0.500000' });
  t.equal(s.balanceAfter, '4.000000');
  t.equal(await postings(sql, 's'), 1);
  t.same(await outbox(sql), [
    { accountId: buyer!, event: 'balance.low', data: { accountId: buyer!, balance: '4.000000' } },
  ]);
  await checkInvariants(t, sql);
});

t.test("the low-balance line kept on the buyer's ledger row follows its sources (migration 335)", async (t) => {
  const { sql } = await createTestDatabase(t);
  const ledger = daemonLedger(sql);
  const [top, operator] = await makeAccounts(sql, 2);
  const [sub] = await makeAccounts(sql, 1, operator!);
  // The rule as ledger_debit_signal applied it before 335, from the three tables.
  const drift = () => sql`
    select l.owner_id from ledger_accounts l join accounts a on a.id = l.owner_id
     where l.kind = 'customer'
       and (l.owner_parent_id is distinct from a.parent_id
            or l.low_line is distinct from case when a.parent_id is null
                 then (select p.low_balance_threshold from account_profiles p where p.account_id = a.id)
                 else coalesce((select s.sub_low_balance_threshold from application_settings s
                                 where s.operator_id = a.parent_id), 5) end)`;
  const line = async (id: string) =>
    (
      await sql<
        { l: string | null }[]
      >`select low_line::text as l from ledger_accounts where owner_id = ${id} and kind = 'customer'`
    )[0]!.l;
  for (const id of [top!, operator!, sub!])
    await ledger.topup({ accountId: id, amount: '10.000000', source: 'card', postingKey: `top-${id}` });
  t.equal(await line(top!), null, "no profile line: the daemon's default");
  t.equal(await line(sub!), '5.000000', 'a sub-account without operator settings: 5');

  await sql`insert into account_profiles (account_id, updated_at, low_balance_threshold) values (${top!}, now(), 9.5)`;
  t.equal(await line(top!), '9.500000', "the account's own line once set");
  await sql`insert into application_settings (operator_id, sub_low_balance_threshold) values (${operator!}, 7)`;
  t.equal(await line(sub!), '7.000000', "the operator's sub-account line once set");
  t.same(await drift(), [], 'every customer row agrees with the rule');

  // Charges cross the lines kept on the rows: 10 → 9 crosses 9.5 (balance.low); the sub-account's
  // 10 → 6.5 crosses 7 (sub_account.balance_low to its operator).
  await ledger.charge({ postingKey: 'top-1', accountId: top!, amount: '1.000000' });
  await ledger.charge({ postingKey: 'sub-1', accountId: sub!, amount: '3.500000' });
  t.same(
    (await outbox(sql)).map((e) => [e.accountId, e.event, e.data]),
    [
      [top!, 'balance.low', { accountId: top!, balance: '9.000000' }],
      [operator!, 'sub_account.balance_low', { subAccountId: sub!, accountId: sub!, balance: '6.500000' }],
    ],
  );

  await sql`update account_profiles set low_balance_threshold = 0 where account_id = ${top!}`;
  await sql`update application_settings set sub_low_balance_threshold = 2 where operator_id = ${operator!}`;
  t.equal(await line(top!), '0.000000', 'a line of 0: no alert');
  t.equal(await line(sub!), '2.000000');
  await ledger.charge({ postingKey: 'top-2', accountId: top!, amount: '8.500000' });
  await ledger.charge({ postingKey: 'sub-2', accountId: sub!, amount: '4.000000' });
  t.equal((await outbox(sql)).length, 2, 'a line of 0 and a line not reached emit nothing');

  await sql`delete from account_profiles where account_id = ${top!}`;
  await sql`delete from application_settings where operator_id = ${operator!}`;
  t.equal(await line(top!), null, 'profile gone: the default again');
  t.equal(await line(sub!), '5.000000', 'settings gone: 5 again');
  await sql`update accounts set parent_id = null, email = ${`${sub!}@test.local`} where id = ${sub!}`;
  t.equal(await line(sub!), null, 'a sub-account made top-level takes its own (default) line');
  t.same(await drift(), [], 'every customer row still agrees with the rule');
  await checkInvariants(t, sql);
});

t.test('ledger_charge given the line returns a signal only for a posting with events (migration 340)', async (t) => {
  const { sql } = await createTestDatabase(t);
  const ledger = daemonLedger(sql);
  const [buyer, seller] = await makeAccounts(sql, 2);
  await ledger.topup({ accountId: buyer!, amount: '6.000000', source: 'card', postingKey: 'top' });
  const charge = async (key: string, amount: string) =>
    (
      await sql<{ r: Record<string, unknown> }[]>`
        select ledger_charge(${key}, ${buyer!}::uuid, ${seller!}::uuid, ${amount}::numeric, 0, false, null, null, null,
                             null, now(), 5, false) as r`
    )[0]!.r;
  const above = await charge('d1', '0.500000');
  t.equal(above['balanceAfter'], '5.500000');
  t.notOk('signal' in above, 'above the line: no signal');
  const crossing = await charge('d2', '1.000000');
  t.same(crossing['signal'], { parentId: null, crossed: true, capped: false }, 'crossing the line: its signal');
  t.notOk('signal' in (await charge('d2', '1.000000')), 'a replay: no signal');
  const viaLedger = await ledger.charge({ postingKey: 'd3', accountId: buyer!, sellerId: seller!, amount: '0.100000' });
  t.notOk('signal' in viaLedger, 'the ledger result never carries it');
  await checkInvariants(t, sql);
});
