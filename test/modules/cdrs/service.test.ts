import t from 'tap';
import type { Sql } from '../../../src/db/connection.js';
import pino from 'pino';
import { createLedger, isRefusal } from '../../../src/ledger/ledger.js';
import { buildCdr, createCdrsService, type Settlement } from '../../../src/modules/cdrs/service.js';
import { emit } from '../../../src/webhooks/emit.js';
import type { EventName } from '../../../src/webhooks/events.js';
import { createTestDatabase } from '../../helpers/db.js';
import { checkInvariants, ledgerFor, makeAccounts } from '../../ledger/helpers.js';

/** Entries by item: a batch posts every settlement before the markups, so its order (and balanceAfter) differs. */
async function entriesOf(sql: Sql) {
  return sql<
    { kind: string; type: string; amount: string; reference: string | null; relatedEntityId: string | null }[]
  >`
    select account_kind as kind, type, amount::text, reference, related_entity_id
    from entries where type <> 'topup' order by related_entity_id, type, account_kind, amount`;
}

t.test('settleMany posts what settle posts one by one: settlements, markups and releases', async (t) => {
  // The same script in two databases: each settlement on its own in the first, all in one batch
  // in the second (the trunk finish and SMS batches take the second path).
  const run = async (many: boolean) => {
    const { sql } = await createTestDatabase(t);
    const ledger = ledgerFor(sql);
    const cdrs = createCdrsService({ sql, ledger });
    const [operator, seller] = await makeAccounts(sql, 2);
    const [sub] = await makeAccounts(sql, 1, operator!);
    const [direct] = await makeAccounts(sql, 1);
    for (const a of [sub!, direct!])
      await ledger.topup({ accountId: a, amount: '10.000000', source: 'card', postingKey: `top-${a}` });
    const items: Settlement[] = [];
    for (let i = 0; i < 6; i++) {
      const payer = i % 2 ? sub! : direct!;
      const hold = await ledger.hold({ postingKey: `h-${i}`, accountId: payer, amount: '1.000000', ttlSeconds: 60 });
      items.push({
        key: `x:${i}`,
        holdId: hold.holdId,
        payer,
        operatorId: i % 2 ? operator! : null,
        sellerId: seller!,
        // Item 4 was not billed (no answer): its hold is released among the settlements.
        charge:
          i === 4
            ? null
            : {
                total: '0.300000',
                seller: '0.200000',
                fee: '0.050000',
                markup: i % 2 ? '0.050000' : '0',
                billableSeconds: 60,
              },
        context: {
          reference: 'Voice call',
          relatedEntityType: 'sip_call',
          relatedEntityId: `c-${i}`,
          callId: `c-${i}`,
        },
      });
    }
    const results = await sql.begin(async (tx) =>
      many ? cdrs.settleMany(tx, items) : Promise.all(items.map((s) => cdrs.settle(tx, s))),
    );
    await checkInvariants(t, sql, many ? 'batch' : 'single');
    return {
      results: results.map((r) =>
        isRefusal(r)
          ? r
          : { settled: r.settled?.type ?? null, markup: r.markup?.type ?? null, capReached: r.capReached },
      ),
      entries: await entriesOf(sql),
      balances: [await ledger.balanceOf(sub!), await ledger.balanceOf(direct!), await ledger.balanceOf(operator!)],
    };
  };
  const single = await run(false);
  const batch = await run(true);
  t.same(batch.results, single.results, 'the same outcome per item, in item order');
  t.same(
    single.results.map((r) => 'settled' in r && r.markup !== null),
    [false, true, false, true, false, true],
    "a markup only on the sub-account's billed items",
  );
  t.equal(
    single.results[4] && 'settled' in single.results[4] ? single.results[4].settled : 'x',
    null,
    'the unbilled item released its hold',
  );
  t.same(batch.entries, single.entries, 'the same entries for each item');
  t.same(batch.balances, single.balances);
  t.same(
    single.balances.map((b) => b.balance),
    ['9.100000', '9.500000', '0.000000'],
    'the sub-account paid three markups, the unbilled call nothing',
  );
  t.equal(single.balances[2]!.payable, '0.150000', 'the operator is owed the three markups');
});

t.test("settleMany: a batch's markup that crosses the low-balance line is posted with its event", async (t) => {
  // The markups of a batch go in one ledger_charge_many, which refuses (SVC90) an item with balance
  // events to emit; that markup is posted again on its own and its event emitted in the same transaction.
  const { sql } = await createTestDatabase(t);
  const ledger = createLedger({
    sql,
    clock: { now: () => new Date() },
    log: pino({ level: 'silent' }),
    events: {
      emit: async (db, accountId, event, data) => {
        await emit(db, { accountId, event: event as EventName, data });
      },
    },
  });
  const cdrs = createCdrsService({ sql, ledger });
  const [operator, seller] = await makeAccounts(sql, 2);
  const [sub] = await makeAccounts(sql, 1, operator!);
  // A sub-account's line is 5.000000 (migration 011's default): the settlements leave 5.000000, the first markup crosses it.
  await ledger.topup({ accountId: sub!, amount: '5.500000', source: 'card', postingKey: `top-${sub}` });
  const items: Settlement[] = [];
  for (let i = 0; i < 2; i++) {
    const hold = await ledger.hold({ postingKey: `h-${i}`, accountId: sub!, amount: '1.000000', ttlSeconds: 60 });
    items.push({
      key: `x:${i}`,
      holdId: hold.holdId,
      payer: sub!,
      operatorId: operator!,
      sellerId: seller!,
      charge: { total: '0.300000', seller: '0.200000', fee: '0.050000', markup: '0.050000', billableSeconds: 60 },
      context: { reference: 'Voice call', relatedEntityType: 'sip_call', relatedEntityId: `c-${i}`, callId: `c-${i}` },
    });
  }
  const results = await sql.begin((tx) => cdrs.settleMany(tx, items));
  t.same(
    results.map((r) => (isRefusal(r) ? 'refused' : r.markup?.type)),
    ['charge', 'charge'],
    'both markups posted',
  );
  await checkInvariants(t, sql, 'markups with events');
  const sub1 = await ledger.balanceOf(sub!);
  t.equal(sub1.balance, '4.900000', 'two settlements and two markups paid');
  t.equal((await ledger.balanceOf(operator!)).payable, '0.100000', 'the operator is owed both markups');
  const events = await sql<{ event: string; data: { subAccountId: string; balance: string } }[]>`
    select event, data from events where account_id = ${operator!} order by created_at`;
  t.same(
    events.map((e) => [e.event, e.data.subAccountId, e.data.balance]),
    [['sub_account.balance_low', sub!, '4.950000']],
    'one low-balance event, for the markup that crossed the line',
  );
});

t.test('buildCdr: the money columns follow from what the leg billed', async (t) => {
  const at = new Date('2026-01-01T00:00:00Z');
  const leg = {
    accountId: 'a',
    operatorId: null,
    sellerId: 's',
    callUuid: 'c',
    callGroupId: 'c',
    kind: 'voice' as const,
    source: 'api',
    routeId: 'r',
    fromNumber: '1',
    toNumber: '2',
    cli: '1',
    status: 'completed',
    sipCode: 200,
    hangupCause: 'NORMAL_CLEARING',
    durationSeconds: 7,
    segments: null,
    pddMs: null,
    mediaMode: null,
    answeredAt: at,
    endedAt: at,
    createdAt: at,
  };
  const billed = { total: '0.020000', seller: '0.015000', ratePerUnit: '0.100000', billableSeconds: 12 };
  t.match(buildCdr({ ...leg, billed }), {
    direction: 'outbound',
    billedSeconds: 12,
    buyerCost: '0.020000',
    sellerCredit: '0.015000',
    ratePerUnit: '0.100000',
    simulated: false,
    isProbe: false,
  });
  t.match(
    buildCdr({ ...leg, billed, simulated: true }),
    { buyerCost: '0.020000', sellerCredit: '0.000000', simulated: true },
    'a simulated call credits no seller',
  );
  t.match(
    buildCdr({ ...leg, status: 'failed', billed: null }),
    { billedSeconds: 0, buyerCost: '0.000000', sellerCredit: '0.000000', ratePerUnit: null },
    'an unbilled voice leg',
  );
  t.match(
    buildCdr({ ...leg, kind: 'sms', durationSeconds: null, segments: 2, billed: { ...billed, billableSeconds: null } }),
    { billedSeconds: null, segments: 2 },
    'a message bills no seconds',
  );
  t.equal(buildCdr({ ...leg, sellerId: '', billed: null }).sellerId, null, 'no seller id is null, never empty');
});
