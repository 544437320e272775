import t from 'tap';
import type postgres from 'postgres';
import { connect } from '../../src/db/connection.js';
import { createTestDatabase } from '../helpers/db.js';
import { checkInvariants, ledgerFor, makeAccounts, silent } from './helpers.js';

/**
 * Platform account shards (migration 268): each backend posts to a shard no other backend holds,
 * for the life of its session, so two postings to the platform fee from two connections never wait
 * on one shard row; the platform's balance is still the sum of its shards.
 */
t.test('each backend owns its platform shard for its session', async (t) => {
  const { url } = await createTestDatabase(t);
  const wide = connect({ url, max: 17, log: silent });
  t.teardown(() => wide.end({ timeout: 2 }));
  const conns: postgres.ReservedSql[] = [];
  for (let i = 0; i < 17; i++) conns.push(await wide.reserve());
  t.teardown(() => conns.forEach((c) => c.release()));
  const shardOf = async (c: postgres.ReservedSql) => (await c<{ s: number }[]>`select ledger_shard() as s`)[0]!.s;
  const pids = await Promise.all(
    conns.map(async (c) => (await c<{ p: number }[]>`select pg_backend_pid() as p`)[0]!.p),
  );

  // 17 backends: two of them share a remainder of their pid by 16 (the old rule's shard).
  const a = pids.findIndex((p, i) => pids.some((q, j) => j > i && q % 16 === p % 16));
  const b = pids.findIndex((q, j) => j > a && q % 16 === pids[a]! % 16);
  const sa = await shardOf(conns[a]!);
  const sb = await shardOf(conns[b]!);
  t.not(sa, sb, `pids ${pids[a]} and ${pids[b]} (same remainder) post to different shards`);
  const others = [];
  for (let i = 0; i < 17; i++) if (i !== a && i !== b) others.push(await shardOf(conns[i]!));
  const all = [sa, sb, ...others];
  t.equal(new Set(all.slice(0, 16)).size, 16, 'the first 16 sessions take the 16 shards');
  t.ok(
    all.every((s) => s >= 0 && s < 16),
    'every shard is one of the 16 rows',
  );
  t.same(await Promise.all([conns[a]!, conns[b]!].map(shardOf)), [sa, sb], 'asked again, each keeps its shard');

  // A transaction that rolls back undoes the session setting, not the claim: the same shard comes back.
  const c = conns[a]!;
  await c`begin`;
  const inTx = await shardOf(c);
  await c`rollback`;
  t.equal(inTx, sa, 'the shard inside a transaction is the session one');
  t.equal(await shardOf(c), sa, 'after a rollback, still the same shard');
  const [held] = await c<{ n: number }[]>`
    select count(distinct objid)::int as n from pg_locks
    where locktype = 'advisory' and pid = pg_backend_pid() and classid = 7261905 and objsubid = 2`;
  t.equal(held!.n, 1, 'one shard claimed by the session, not one per rollback');
});

t.test('more backends than shards share the leftover ones, and postings stay exact', async (t) => {
  const { url, sql } = await createTestDatabase(t);
  const wide = connect({ url, max: 20, log: silent });
  t.teardown(() => wide.end({ timeout: 2 }));
  const conns: postgres.ReservedSql[] = [];
  for (let i = 0; i < 20; i++) conns.push(await wide.reserve());
  t.teardown(() => conns.forEach((c) => c.release()));
  const shards = await Promise.all(
    conns.map(async (c) => (await c<{ s: number }[]>`select ledger_shard() as s`)[0]!.s),
  );
  t.equal(new Set(shards).size, 16, 'the first 16 sessions take the 16 shards, the other 4 share');

  // Charges with a platform fee from every connection at once: each lands on its connection's shard.
  const buyers = await makeAccounts(sql, 20);
  const ledger = ledgerFor(sql);
  for (const b of buyers)
    await ledger.topup({ accountId: b, amount: '100.000000', source: 'wire', postingKey: `top-${b}` });
  await Promise.all(
    conns.map(async (c, i) => {
      for (let k = 0; k < 10; k++)
        await ledger.charge(
          { postingKey: `c-${i}-${k}`, accountId: buyers[i]!, amount: '0.010000', fee: '0.000500' },
          c,
        );
    }),
  );
  const rows = await sql<{ shard: number; balance: string }[]>`
    select sh.shard, sh.balance::text from ledger_account_shards sh join ledger_accounts a on a.id = sh.account_id
    where a.kind = 'platform_fee' and sh.balance <> 0 order by sh.shard`;
  t.same(
    rows.map((r) => r.shard),
    [...new Set(shards)].sort((a, b) => a - b),
    'the fee went to the shards the sessions hold',
  );
  const [fee] = await sql<
    { b: string }[]
  >`select balance::text as b from ledger_account_balances where kind = 'platform_fee'`;
  t.equal(fee!.b, '0.100000', '200 fees of 0.0005 on the platform fee account');
  await checkInvariants(t, sql, 'after charges from 20 sessions:');
});
