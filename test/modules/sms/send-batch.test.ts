import t from 'tap';
import { checkInvariants } from '../../ledger/helpers.js';
import { createSmsWorld } from './world.js';

/**
 * Concurrent sends share batches whose holds and settlements go through ledger_hold_many and
 * ledger_settle_many (016): a send the balance cannot pay is refused alone with "Insufficient
 * balance" and the others are sent, charged once each.
 */
t.test('concurrent sends beyond the balance: the affordable ones are sent, the rest refused alone', async (t) => {
  // 0.010000 a segment plus the platform's 0.000500: 0.105 pays exactly ten.
  const w = await createSmsWorld(t, { fund: '0' });
  const { h, buyer } = w;
  await h.services.ledger.topup({ accountId: buyer.accountId, amount: '0.105000', source: 'x402', postingKey: 'fund' });
  const sender = { accountId: buyer.accountId, parentId: null, mode: 'live' as const };
  const results = await Promise.allSettled(
    Array.from({ length: 16 }, (_, i) => h.services.sms.send(sender, { to: `+1202555${String(1000 + i)}`, from: 'MyShop', message: `m${i}` })),
  );
  const sent = results.filter((r) => r.status === 'fulfilled' && r.value.status === 'sent');
  const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  t.equal(sent.length, 10, 'ten sent');
  t.equal(refused.length, 6, 'six refused');
  t.ok(refused.every((r) => (r.reason as { code?: string }).code === 'SVC01' && /^Insufficient balance/.test((r.reason as Error).message)),
    'each refusal is the single-item SVC01 "Insufficient balance"');
  const b = await w.balance(buyer.accountId);
  t.same([b.balance, b.held], ['0.000000', '0.000000'], 'ten charged once each, no hold left open');
  const [m] = await h.sql<{ sent: number; all: number }[]>`
    select count(*) filter (where status in ('sent', 'delivered'))::int as sent, count(*)::int as all from messages where account_id = ${buyer.accountId}`;
  t.same([m!.sent, m!.all], [10, 10], 'no message row for a refused send');
  const [batched] = await h.sql<{ n: number }[]>`
    select count(*)::int as n from (select created_at from postings where type = 'settle' group by created_at having count(*) > 1) x`;
  t.ok(batched!.n > 0, 'some settlements shared a batch');
  await checkInvariants(t, h.sql);
});
