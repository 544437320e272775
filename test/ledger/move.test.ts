import t from 'tap';
import { createTestDatabase } from '../helpers/db.js';
import { checkInvariants, ledgerFor, makeAccounts, pgCode } from './helpers.js';

// The two-entry postings share ledger_move (migration 255): each keeps its own balance check,
// replay and result.
t.test('postings on ledger_move: checks, replays and results of each caller', async (t) => {
  const { sql } = await createTestDatabase(t);
  const ledger = ledgerFor(sql);
  const [op, other, seller] = await makeAccounts(sql, 3);
  const [sub] = await makeAccounts(sql, 1, op!);
  await ledger.topup({ accountId: op!, amount: '100.000000', source: 'wire', postingKey: 't' });

  const tr = await ledger.transfer({ postingKey: 'tr', fromAccountId: op!, toAccountId: sub!, amount: '30.000000' });
  t.match(tr, { type: 'transfer', balanceAfter: '70.000000', toBalanceAfter: '30.000000', replayed: false });
  const again = await ledger.transfer({ postingKey: 'tr', fromAccountId: op!, toAccountId: sub!, amount: '30.000000' });
  t.match(again, { postingId: tr.postingId, balanceAfter: '70.000000', replayed: true }, 'a replay posts nothing');
  t.equal((await ledger.balanceOf(op!)).balance, '70.000000');
  await t.rejects(
    ledger.transfer({ postingKey: 'tr-x', fromAccountId: other!, toAccountId: sub!, amount: '1.000000' }),
    { code: 'SVC03' },
    'only to its own sub-account',
  );
  await t.rejects(
    ledger.transfer({ postingKey: 'tr-big', fromAccountId: op!, toAccountId: sub!, amount: '70.000001' }),
    { code: 'SVC01' },
  );
  await t.rejects(ledger.transfer({ postingKey: 'tr-0', fromAccountId: op!, toAccountId: sub!, amount: '0' }), {
    code: 'SVC02',
  });

  // Transfer back moves only the sub-account's own money, never its credit limit.
  await ledger.setLimits(sub!, { creditLimit: '20.000000', dailySpendCap: null });
  const refused = await ledger
    .transferBack({ postingKey: 'tb-big', subAccountId: sub!, operatorId: op!, amount: '30.000001' })
    .catch((e: unknown) => e);
  t.equal(pgCode(refused), 'SVC01', 'the credit limit is not the sub-account’s money');
  const tb = await ledger.transferBack({ postingKey: 'tb', subAccountId: sub!, operatorId: op!, amount: '30.000000' });
  t.match(tb, { accountId: sub, toAccountId: op, balanceAfter: '0.000000', toBalanceAfter: '100.000000' });
  await t.rejects(
    ledger.transferBack({ postingKey: 'tb-x', subAccountId: sub!, operatorId: other!, amount: '1.000000' }),
    { code: 'SVC03' },
  );
  const entries = await sql<{ type: string; rel: string; amount: string }[]>`
    select type, related_entity_type as rel, amount::text from entries where posting_id = ${tb.postingId} order by seq`;
  t.same(
    entries.map((e) => [e.type, e.rel, e.amount]),
    [
      ['transfer', 'account', '-30.000000'],
      ['credit', 'sub_account', '30.000000'],
    ],
  );

  const tc = await ledger.grantTestCredit({ postingKey: 'tc', accountId: other!, amount: '2.000000' });
  t.match(tc, { type: 'test_credit', balanceAfter: '2.000000' });
  t.equal((await ledger.balanceOf(other!)).testCredit, '2.000000');

  const cb = await ledger.chargeback({ postingKey: 'cb', accountId: op!, amount: '5.000000' });
  t.match(cb, { type: 'chargeback', balanceAfter: '95.000000' });
  const [won] = await sql<{ r: { balanceAfter: string; replayed: boolean } }[]>`
    select ledger_card_chargeback_won('won', ${op!}::uuid, 5, 'dispute won', now()) as r`;
  t.match(won!.r, { balanceAfter: '100.000000', replayed: false }, 'a won dispute gives the money back');

  await ledger.charge({ postingKey: 'ch', accountId: op!, sellerId: seller!, amount: '4.000000' });
  await t.rejects(ledger.payout({ postingKey: 'po-big', sellerId: seller!, amount: '4.000001' }), { code: 'SVC01' });
  t.match(await ledger.payout({ postingKey: 'po', sellerId: seller!, amount: '4.000000' }), {
    balanceAfter: '0.000000',
  });
  await checkInvariants(t, sql);
});
