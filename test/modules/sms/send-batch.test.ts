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
  // The first five accepted submits are answered together, so their settlements meet in the
  // batcher however slowly a loaded machine runs the SMSC (each answer alone could settle alone).
  w.smsc.send('gather 5');
  await w.smsc.waitFor(/^GATHER 5$/);
  const results = await Promise.allSettled(
    Array.from({ length: 16 }, (_, i) =>
      h.services.sms.send(sender, { to: `+1202555${String(1000 + i)}`, from: 'MyShop', message: `m${i}` }),
    ),
  );
  const sent = results.filter((r) => r.status === 'fulfilled' && r.value.status === 'sent');
  const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  t.equal(sent.length, 10, 'ten sent');
  t.equal(refused.length, 6, 'six refused');
  t.ok(
    refused.every(
      (r) =>
        (r.reason as { code?: string }).code === 'SVC01' && /^Insufficient balance/.test((r.reason as Error).message),
    ),
    'each refusal is the single-item SVC01 "Insufficient balance"',
  );
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

t.test(
  "a reseller's sub-account: each message pays the markup to its operator, the markups of a batch together",
  async (t) => {
    const w = await createSmsWorld(t);
    const { h, buyer } = w;
    const sub = await h.services.application.create(buyer.accountId, { label: 'retail', markupPct: '20' });
    await h.services.application.credit(buyer.accountId, sub.id, { amount: '1.000000' }, `fund-${sub.id}`);
    const sender = { accountId: sub.id, parentId: buyer.accountId, mode: 'live' as const };
    w.smsc.send('gather 4');
    await w.smsc.waitFor(/^GATHER 4$/);
    // 0.010000 + 0.000500 a segment, plus 20%: 0.002100 to the operator, 0.012600 in all.
    const sent = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        h.services.sms.send(sender, { to: `+1202555${String(2000 + i)}`, from: 'MyShop', message: `r${i}` }),
      ),
    );
    t.ok(
      sent.every((s) => s.status === 'sent' && s.cost === '0.012600'),
      JSON.stringify(sent[0]),
    );
    const b = await w.balance(sub.id);
    t.same([b.balance, b.held], ['0.899200', '0.000000'], 'price and markup for each message, nothing left held');
    const op = await h.services.ledger.balanceOf(buyer.accountId);
    t.equal(op.payable, '0.016800', 'the operator earned 8 markups');
    const [m] = await h.sql<
      { n: number }[]
    >`select count(*)::int as n from messages where account_id = ${sub.id} and markup_posting_id is not null`;
    t.equal(m!.n, 8, 'each message names its markup posting');
    const [shared] = await h.sql<{ n: number }[]>`
    select count(*)::int as n from (
      select p.created_at from postings p join messages x on x.markup_posting_id = p.id where x.account_id = ${sub.id}
      group by p.created_at having count(*) > 1) y`;
    t.ok(shared!.n > 0, 'some markups went in one batch');
    await checkInvariants(t, h.sql);
  },
);
