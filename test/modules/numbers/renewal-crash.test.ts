import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import t from 'tap';
import { createManualClock } from '../../../src/platform/clock.js';
import { startTestDaemon } from '../../helpers/daemon.js';
import { account, api, numbers } from './world.js';
import { nodeScriptArgs } from '../../helpers/node-script.js';

const CHILD = nodeScriptArgs(import.meta.url, 'renewal-child');
const COUNT = 300;

t.test('a renewal run killed mid-way: every number charged for its month exactly once', async (t) => {
  const clock = createManualClock(new Date('2026-03-01T08:00:00Z'));
  const d = await startTestDaemon(t, { numbers: { renewal_interval_seconds: 86400 } }, { clock });
  const seller = await account(d, 'seller@example.com');
  const buyer = await account(d, 'buyer@example.com');
  const { numbers: svc, ledger } = d.modules.services;
  const stock = await svc.inventory.importItems(seller.id, true, numbers(COUNT), (i) => `items[${i}]`);
  const cat = await api(d, 'GET', '/dids/catalog', buyer.key);
  const g = cat.json.data.groups.find((x: { groupId: string }) => x.groupId === stock.groups[0]!.groupId);
  await ledger.topup({ accountId: buyer.id, amount: '5000', source: 'card', postingKey: 'c' });
  for (let i = 0; i < COUNT; i++) await svc.orders.buy(buyer.id, { groupId: g.groupId, skuId: g.skus[0].skuId });
  await svc.orders.settled();
  t.equal((await ledger.balanceOf(buyer.id)).balance, '3875.000000', `5000 - ${COUNT} x 3.75`);

  const due = '2026-04-01T08:00:00.000Z';
  const child = spawn(process.execPath, [...CHILD, d.config.database.url, due], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const lines = createInterface({ input: child.stdout! });
  await new Promise<void>((resolve) => lines.once('line', () => resolve()));
  // Kill it once some renewals have committed and before all have.
  for (;;) {
    const [row] = await d.sql<{ n: number }[]>`select count(*)::int as n from did_events where kind = 'renewed'`;
    if ((row?.n ?? 0) >= 20) break;
    await new Promise((r) => setImmediate(r));
  }
  child.kill('SIGKILL');
  await exited;
  const [atKill] = await d.sql<{ n: number }[]>`select count(*)::int as n from did_events where kind = 'renewed'`;
  t.ok(atKill!.n < COUNT, `killed mid-run (${atKill!.n} of ${COUNT} renewed)`);

  // The next run (this daemon, at the same time) finishes the rest.
  clock.set(new Date(due));
  const rest = await svc.renewals.run();
  t.equal(rest.renewed, COUNT - atKill!.n, 'the rest renewed');
  t.same(await svc.renewals.run(), { renewed: 0, suspended: 0, reactivated: 0, released: 0 });

  const [periods] = await d.sql<{ n: number; keys: number }[]>`
    select count(*)::int as n, count(distinct posting_key)::int as keys from postings where posting_key like 'did:%:period:2'`;
  t.same(periods, { n: COUNT, keys: COUNT }, 'one posting per number for month 2');
  const [paid] = await d.sql<
    { n: number }[]
  >`select count(*)::int as n from dids where periods_paid = 2 and status = 'active'`;
  t.equal(paid?.n, COUNT);
  t.equal((await ledger.balanceOf(buyer.id)).balance, '3200.000000', `3875 - ${COUNT} x 2.25`);
  t.equal((await ledger.balanceOf(seller.id)).payable, '1620.000000', `${COUNT} x (3.375 + 2.025)`);
});
