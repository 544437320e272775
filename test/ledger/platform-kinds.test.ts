import t from 'tap';
import { createTestDatabase } from '../helpers/db.js';
import { makeAccounts } from './helpers.js';

/**
 * The ledger's owner rule (migration 280) reads the platform's kinds from `ledger_platform_kinds`:
 * a kind is ownerless exactly when it is listed there, so a later migration adds a platform kind by
 * adding a row, not by redefining the rule with a longer list.
 */
t.test('platform kinds are read from ledger_platform_kinds', async (t) => {
  const { sql } = await createTestDatabase(t);
  const kinds = (await sql<{ kind: string }[]>`select kind from ledger_platform_kinds order by kind`).map(
    (r) => r.kind,
  );
  t.same(
    kinds,
    ['chargebacks', 'platform_fee', 'platform_revenue', 'revshare_receivable', 'test_credit_pool', 'topup_clearing'],
    "018's and 227's platform kinds, seeded",
  );
  const [owner] = await makeAccounts(sql, 1);
  await t.rejects(
    sql`insert into ledger_accounts (owner_id, kind) values (${owner!}, 'platform_revenue')`,
    { code: '23514', constraint_name: 'ledger_accounts_owner_rule' },
    'a platform kind takes no owner',
  );
  await t.rejects(
    sql`insert into ledger_accounts (owner_id, kind) values (null, 'seller_payable')`,
    { code: '23514', constraint_name: 'ledger_accounts_owner_rule' },
    'any other kind needs one',
  );
  await t.resolves(
    sql`insert into ledger_accounts (owner_id, kind) values (${owner!}, 'revshare_held')`,
    'an owned account of an owned kind',
  );

  // What a later migration does to add a platform kind: extend the domain, add the row, open the account.
  await sql.begin(async (tx) => {
    // As 227 extends the kind domain.
    await tx`
      do $$
      declare v_def text;
      begin
        select pg_get_constraintdef(c.oid) into v_def from pg_constraint c join pg_type t on t.oid = c.contypid
        where t.typname = 'ledger_account_kind' and c.contype = 'c';
        execute 'alter domain ledger_account_kind drop constraint ledger_account_kind_check';
        execute format('alter domain ledger_account_kind add constraint ledger_account_kind_check check (value = any (%L::text[]))',
          '{' || (regexp_match(v_def, '''\{([^}]*)\}'''))[1] || ',future_clearing}');
      end $$`;
    await tx`insert into ledger_platform_kinds (kind) values ('future_clearing')`;
    await tx`insert into ledger_accounts (owner_id, kind) values (null, 'future_clearing')`;
  });
  const [made] = await sql<{ n: number }[]>`
    select count(*)::int as n from ledger_accounts where owner_id is null and kind = 'future_clearing'`;
  t.equal(made!.n, 1, 'the new platform account exists without its own copy of the rule');
});
