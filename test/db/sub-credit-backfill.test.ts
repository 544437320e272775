import t from 'tap';
import { migrate, readMigrations } from '../../src/db/migrate.js';
import { createTestDatabase } from '../helpers/db.js';
import { ledgerFor, makeAccounts, silent } from '../ledger/helpers.js';

t.test('credit limits given before 113 are held on the operator as far as it can, and lowered to that', async (t) => {
  const { sql } = await createTestDatabase(t, { migrate: false });
  const all = readMigrations();
  await migrate(
    sql,
    silent,
    all.filter((m) => m.version <= 112),
  );
  const ledger = ledgerFor(sql);
  const [op, poor] = await makeAccounts(sql, 2);
  const [unused, indebted] = await makeAccounts(sql, 2, op!);
  const [broke] = await makeAccounts(sql, 1, poor!);
  await sql`insert into sub_accounts (account_id, parent_id, credit_limit) values
            (${unused!}, ${op!}, 20), (${indebted!}, ${op!}, 20), (${broke!}, ${poor!}, 100)`;
  await ledger.topup({ accountId: op!, amount: '30.000000', source: 'card', postingKey: 'op' });
  // The limits as the old ledger_set_limits gave them: nothing held anywhere.
  for (const [id, limit] of [
    [unused!, '20'],
    [indebted!, '20'],
    [broke!, '100'],
  ] as const) {
    await sql`select ledger_set_limits(${id}::uuid, ${limit}::numeric, null, now())`;
  }
  await ledger.charge({ postingKey: 'debt', accountId: indebted!, sellerId: poor!, amount: '15.000000' });

  await migrate(sql, silent, all);

  const rows = await sql<{ ownerId: string; creditLimit: string; backed: string; listed: string }[]>`
    select l.owner_id, l.credit_limit::text, coalesce(h.amount, 0)::numeric(20, 6)::text as backed, s.credit_limit::text as listed
    from ledger_accounts l join sub_accounts s on s.account_id = l.owner_id
    left join holds h on h.status = 'open' and h.related_entity_type = 'sub_account_credit_limit' and h.related_entity_id = l.owner_id::text
    where l.kind = 'customer'`;
  const by = new Map(rows.map((r) => [r.ownerId, r]));
  t.match(
    by.get(unused!),
    { creditLimit: '20.000000', backed: '20.000000', listed: '20.000000' },
    'oldest first, fully held',
  );
  t.match(
    by.get(indebted!),
    { creditLimit: '15.000000', backed: '10.000000', listed: '15.000000' },
    'held as far as the operator can; the limit stops at the debt already made',
  );
  t.match(
    by.get(broke!),
    { creditLimit: '0.000000', backed: '0.000000', listed: '0.000000' },
    'an operator with nothing backs nothing',
  );
  t.match(await ledger.balanceOf(op!), { balance: '30.000000', held: '30.000000', available: '0.000000' });

  await t.rejects(
    ledger.charge({ postingKey: 'more', accountId: indebted!, amount: '0.000001' }),
    { code: 'SVC01' },
    'nothing more on credit',
  );
  await ledger.setLimits(indebted!, { creditLimit: '15.000000', dailySpendCap: '5.000000' });
  t.match(
    await ledger.balanceOf(op!),
    { held: '30.000000' },
    'an unchanged limit (a new daily cap) asks for no new backing',
  );
  await t.rejects(
    ledger.setLimits(indebted!, { creditLimit: '16.000000', dailySpendCap: null }),
    { code: 'SVC01' },
    'a raise is held in full',
  );
  await ledger.topup({ accountId: op!, amount: '16.000000', source: 'card', postingKey: 'op-more' });
  await ledger.setLimits(indebted!, { creditLimit: '16.000000', dailySpendCap: null });
  t.match(await ledger.balanceOf(op!), { balance: '46.000000', held: '36.000000' }, 'and then held in full');
});
