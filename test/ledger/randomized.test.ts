import t from 'tap';
import { createTestDatabase } from '../helpers/db.js';
import { checkInvariants, ledgerFor, makeAccounts, pgCode } from './helpers.js';

// A seeded generator so a failing run can be repeated (seed printed in the test name).
function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let x = Math.imul(s ^ (s >>> 15), 1 | s);
    x ^= x + Math.imul(x ^ (x >>> 7), 61 | x);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const seed = Number(process.env['LEDGER_SEED'] ?? Date.now() % 100000);

t.test(`thousands of random mixed operations keep the invariants (seed ${seed})`, async (t) => {
  const { sql } = await createTestDatabase(t);
  const ledger = ledgerFor(sql);
  const rand = rng(seed);
  const ops = await makeAccounts(sql, 4);
  const subs = (await Promise.all(ops.map((o) => makeAccounts(sql, 2, o)))).flat();
  const sellers = await makeAccounts(sql, 3);
  const everyone = [...ops, ...subs];
  const parentOf = new Map(subs.map((s, i) => [s, ops[Math.floor(i / 2)]!]));
  const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)]!;
  const cents = (max: number) => (Math.floor(rand() * max * 100) / 100 + 0.01).toFixed(2);
  const openHolds: string[] = [];
  const charges: string[] = [];
  let n = 0;
  const done: string[] = [];
  const counts = { ok: 0, refused: 0 };

  /** One random operation; true when it posted under its own key. */
  const one = async (): Promise<boolean> => {
    const k = `op-${n++}`;
    const r = rand();
    if (r < 0.12) {
      await ledger.topup({
        accountId: pick(everyone),
        amount: cents(50) + '0',
        source: pick(['card', 'crypto'] as const),
        postingKey: k,
      });
      return true;
    }
    if (r < 0.45) {
      const c = await ledger.charge({
        postingKey: k,
        accountId: pick(everyone),
        sellerId: rand() < 0.8 ? pick(sellers) : null,
        amount: cents(3),
        fee: '0.010000',
      });
      charges.push(c.postingId);
      return true;
    }
    if (r < 0.6) {
      const h = await ledger.hold({
        postingKey: k,
        accountId: pick(everyone),
        amount: cents(5),
        ttlSeconds: rand() < 0.1 ? 1 : 600,
      });
      openHolds.push(h.holdId);
      return true;
    }
    if (r < 0.75 && openHolds.length) {
      const holdId = openHolds.splice(Math.floor(rand() * openHolds.length), 1)[0]!;
      if (rand() < 0.7)
        await ledger.settle({ postingKey: k, holdId, sellerId: pick(sellers), amount: cents(2), fee: '0.005000' });
      else await ledger.release({ postingKey: k, holdId });
      return true;
    }
    if (r < 0.82) {
      const sub = pick(subs);
      await ledger.transfer({ postingKey: k, fromAccountId: parentOf.get(sub)!, toAccountId: sub, amount: cents(5) });
      return true;
    }
    if (r < 0.86 && charges.length) {
      await ledger.refund({
        postingKey: k,
        chargePostingId: charges.splice(Math.floor(rand() * charges.length), 1)[0]!,
      });
      return true;
    }
    if (r < 0.9) {
      await ledger.payout({ postingKey: k, sellerId: pick(sellers), amount: cents(2) });
      return true;
    }
    if (r < 0.93) {
      await ledger.grantTestCredit({ postingKey: k, accountId: pick(everyone), amount: '1.000000' });
      return true;
    }
    if (r < 0.96) {
      await ledger.chargeTest({ postingKey: k, accountId: pick(everyone), amount: cents(1) });
      return true;
    }
    if (r < 0.98) {
      await ledger.chargeback({ postingKey: k, accountId: pick(everyone), amount: cents(5) });
      return true;
    }
    // A replay of a completed operation's key, whatever its kind: returns that result, posts nothing.
    // (Only completed ones: a key still in flight would be taken by whichever call reaches SQL first.)
    if (done.length) {
      const key = done[Math.floor(rand() * done.length)]!;
      const r2 = await ledger.charge({ postingKey: key, accountId: pick(everyone), amount: '1.000000' });
      if (!r2.replayed) throw new Error(`key ${key} posted twice`);
    }
    return false;
  };
  const run = async () => {
    const k = `op-${n}`;
    if (await one()) done.push(k);
  };

  for (let batch = 0; batch < 8; batch++) {
    const results = await Promise.allSettled(Array.from({ length: 250 }, () => run()));
    for (const r of results) {
      if (r.status === 'fulfilled') counts.ok++;
      else if (['SVC01', 'SVC02'].includes(pgCode(r.reason) ?? '')) counts.refused++;
      else t.fail(`unexpected error: ${(r.reason as Error).message}`);
    }
    if (batch === 5) await ledger.sweepExpiredHolds();
    await checkInvariants(t, sql, `batch ${batch}:`);
  }
  t.equal(counts.ok + counts.refused, 2000, 'every operation accounted for');
  t.ok(counts.ok > 1000, `most operations posted (${counts.ok})`);
});
