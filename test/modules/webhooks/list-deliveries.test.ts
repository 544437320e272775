import t from 'tap';
import type { Sql } from '../../../src/db/connection.js';
import { createWebhooksRepo } from '../../../src/modules/webhooks/repo.js';
import { newId } from '../../../src/platform/ids.js';
import { emit, enqueueForEndpoint } from '../../../src/webhooks/emit.js';
import { createTestDatabase } from '../../helpers/db.js';
import { createAccount } from '../../webhooks/setup.js';

// The account's delivery list walks each of its endpoints' deliveries (migration 323 dropped the
// (account_id, id) index): its pages must be exactly the account's deliveries newest first,
// deleted endpoints' included, under every filter and cursor.

async function endpoint(sql: Sql, accountId: string, events: string[]) {
  const id = newId();
  await sql`
    insert into webhook_endpoints (id, account_id, url, events, secret, created_at, updated_at)
    values (${id}, ${accountId}, ${'https://127.0.0.1:1/' + id}, ${events}, 'whsec_test', now(), now())`;
  return id;
}

t.test('an account’s delivery pages across its endpoints equal a scan of its deliveries', async (t) => {
  const { sql } = await createTestDatabase(t);
  const repo = createWebhooksRepo();
  const acc = await createAccount(sql);
  const other = await createAccount(sql);
  const all = await endpoint(sql, acc, ['*']);
  const sms = await endpoint(sql, acc, ['sms.sent']);
  const gone = await endpoint(sql, acc, ['balance.low']);
  const foreign = await endpoint(sql, other, ['*']);
  const events = ['sms.sent', 'balance.low', 'call.completed'] as const;
  for (let i = 0; i < 30; i++) {
    await emit(sql, { accountId: acc, event: events[i % 3]!, data: { i } });
    await emit(sql, { accountId: other, event: events[i % 3]!, data: { i } });
  }
  await enqueueForEndpoint(sql, { accountId: acc, endpointId: sms, event: 'ping', data: {}, at: new Date() });
  // The endpoint is deleted after its deliveries were made; they stay in the account's list.
  await sql`update webhook_endpoints set deleted_at = now(), status = 'disabled' where id = ${gone}`;
  await sql`update webhook_deliveries set state = 'succeeded' where endpoint_id in (${all}, ${foreign}) and event = 'sms.sent'`;

  const counts = await sql<{ endpointId: string; n: number }[]>`
    select endpoint_id, count(*)::int as n from webhook_deliveries group by endpoint_id`;
  const n = Object.fromEntries(counts.map((c) => [c.endpointId, c.n]));
  t.same([n[all], n[sms], n[gone], n[foreign]], [30, 11, 10, 30], 'deliveries on every endpoint');

  const cases: { state?: string; event?: string }[] = [
    {},
    { state: 'pending' },
    { state: 'succeeded' },
    { event: 'balance.low' },
    { event: 'sms.sent', state: 'pending' },
  ];
  for (const f of cases) {
    const expected = (
      await sql<{ id: string }[]>`
        select id from webhook_deliveries where account_id = ${acc}
          ${f.state ? sql`and state = ${f.state}` : sql``} ${f.event ? sql`and event = ${f.event}` : sql``}
        order by id desc`
    ).map((r) => r.id);
    t.ok(expected.length > 0, `${JSON.stringify(f)}: the account has such deliveries`);
    for (const limit of [1, 7, 100]) {
      const got: string[] = [];
      let cursor: string | undefined;
      for (;;) {
        const rows = await repo.listDeliveries(sql, { accountId: acc, limit, ...f, ...(cursor ? { cursor } : {}) });
        const page = rows.slice(0, limit);
        got.push(...page.map((r) => r.id));
        if (rows.length <= limit) break;
        cursor = page[page.length - 1]!.id;
      }
      t.same(got, expected, `${JSON.stringify(f)} in pages of ${limit}`);
    }
  }
  const mine = await repo.listDeliveries(sql, { accountId: acc, endpointId: gone, limit: 100 });
  t.equal(mine.length, 10, 'one endpoint’s list, a deleted one');
  t.ok(
    mine.every((r) => r.endpointId === gone && r.event === 'balance.low'),
    'only that endpoint’s deliveries',
  );
  t.same(
    await repo.listDeliveries(sql, { accountId: other, endpointId: sms, limit: 100 }),
    [],
    'not another account’s',
  );
});
