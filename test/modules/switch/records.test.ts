import { Decimal } from 'decimal.js';
import t from 'tap';
import { newId } from '../../../src/platform/ids.js';
import { requireIncrement } from '../../../src/rating/index.js';
import {
  buildCdr,
  chargeLeg,
  voiceBilled,
  type CdrInsert,
  type SettleCharge,
} from '../../../src/modules/cdrs/index.js';
import { bearer, buildTestApp, type TestApp } from '../../helpers/app.js';

/**
 * Switch call records and analytics: records of an operator's sub-accounts written through the
 * real settlement path (holds, settle, markup postings, CDR rows in one transaction), a few rows
 * inserted for the arithmetic the planes do not produce, and the money checked to the 6th decimal.
 */

interface World {
  h: TestApp;
  op: { accountId: string; session: string };
  subA: string;
  subB: string;
  r1: string;
  r2: string;
  at: Date;
}

async function world(t: { teardown(fn: () => unknown): void }): Promise<World> {
  const h = await buildTestApp(t);
  const op = await h.signUp();
  const other = await h.signUp();
  const seller = await h.signUp();
  const subA = newId();
  const subB = newId();
  await h.sql`insert into accounts (id, parent_id, label, external_ref) values
    (${subA}, ${op.accountId}, 'Acme', 'ext-1'), (${subB}, ${op.accountId}, 'Beta', null)`;
  await h.sql`insert into sub_accounts (account_id, parent_id) values (${subA}, ${op.accountId}), (${subB}, ${op.accountId})`;
  const r1 = newId();
  const r2 = newId();
  await h.sql`insert into routes (id, seller_id, type, name, country) values
    (${r1}, ${seller.accountId}, 'voice', 'UK Mobile', 'GB'), (${r2}, ${op.accountId}, 'voice', 'FR Fixed', 'FR')`;
  const { ledger, cdrs } = h.services;
  for (const a of [subA, subB])
    await ledger.topup({ accountId: a, amount: '10.000000', source: 'card', postingKey: `top-${a}` });
  const at = new Date(Date.now() - 3_600_000);

  /** One call or message settled as the planes settle it, its CDRs written in the same transaction. */
  async function settled(
    payer: string,
    sellerId: string,
    charge: SettleCharge,
    rows: CdrInsert[],
    context: { relatedEntityType: string; relatedEntityId: string; callId?: string },
  ) {
    const hold = await ledger.hold({
      postingKey: `h-${newId()}`,
      accountId: payer,
      amount: '1.000000',
      ttlSeconds: 60,
    });
    await h.sql.begin(async (tx) => {
      await cdrs.settle(tx, {
        key: `test:${context.relatedEntityId}`,
        holdId: hold.holdId,
        payer,
        operatorId: op.accountId,
        sellerId,
        charge,
        context: { reference: 'test', ...context },
      });
      await cdrs.insertCdrs(tx, rows);
    });
  }
  const leg = (o: Partial<Parameters<typeof buildCdr>[0]>) =>
    buildCdr({
      accountId: subA,
      operatorId: op.accountId,
      sellerId: seller.accountId,
      callUuid: null,
      callGroupId: null,
      kind: 'voice',
      source: 'trunk',
      routeId: r1,
      fromNumber: '+447700900111',
      toNumber: '+447700900222',
      cli: '+447700900111',
      status: 'completed',
      sipCode: 200,
      hangupCause: 'caller-bye',
      durationSeconds: 61,
      segments: null,
      pddMs: 1200,
      mediaMode: 'proxy',
      billed: null,
      answeredAt: at,
      endedAt: at,
      createdAt: at,
      ...o,
    });

  // 1. Sub A: a call that failed over from the operator's own route (503) to the seller's, answered
  // for 61 s at 0.012/min (seller 0.010), 60/60, 10 % markup: base 0.024, markup 0.0024.
  const c1 = newId();
  const ch1 = chargeLeg(
    { price: new Decimal('0.012'), sellerRate: new Decimal('0.010'), increment: requireIncrement('60/60') },
    61,
    new Decimal(10),
  );
  await settled(
    subA,
    seller.accountId,
    ch1,
    [
      leg({
        callGroupId: c1,
        callUuid: c1,
        routeId: r2,
        sellerId: op.accountId,
        status: 'failed',
        sipCode: 503,
        hangupCause: 'failed',
        durationSeconds: 0,
        answeredAt: null,
        createdAt: new Date(at.getTime() - 5000),
      }),
      leg({ callGroupId: c1, callUuid: c1, billed: voiceBilled(ch1) }),
    ],
    { relatedEntityType: 'sip_call', relatedEntityId: c1, callId: c1 },
  );
  // 2. Sub B on the operator's own route: 30 s at 0.05 (seller 0.04), 1/1, 7.5 %: base 0.025,
  // markup 0.001875; the operator is credited the seller's 0.02 too, which is not margin.
  const c2 = newId();
  const ch2 = chargeLeg(
    { price: new Decimal('0.05'), sellerRate: new Decimal('0.04'), increment: requireIncrement('1/1') },
    30,
    new Decimal('7.5'),
  );
  await settled(
    subB,
    op.accountId,
    ch2,
    [
      leg({
        accountId: subB,
        callGroupId: c2,
        callUuid: c2,
        routeId: r2,
        sellerId: op.accountId,
        toNumber: '+33140000000',
        hangupCause: 'callee-bye',
        sipCode: 200,
        pddMs: 3000,
        durationSeconds: 30,
        billed: voiceBilled(ch2),
      }),
    ],
    { relatedEntityType: 'sip_call', relatedEntityId: c2, callId: c2 },
  );
  // 3. Sub A: one SMS on the seller's route, 0.01 plus a 10 % markup (0.001).
  const msg = newId();
  await h.sql`insert into messages (id, account_id, operator_id, source, to_number, from_sender, text_sha256, text_units,
      encoding, data_coding, segments, route_id, seller_id, status, queued_at, sent_at)
    values (${msg}, ${subA}, ${op.accountId}, 'api', '+447700900333', 'Acme', 'x', 5, 'gsm7', 0, 1, ${r1},
      ${seller.accountId}, 'sent', ${at}, ${at})`;
  await settled(
    subA,
    seller.accountId,
    { total: '0.011000', seller: '0.008000', fee: '0.002000', markup: '0.001000' },
    [
      buildCdr({
        accountId: subA,
        operatorId: op.accountId,
        sellerId: seller.accountId,
        callUuid: null,
        callGroupId: null,
        kind: 'sms',
        source: 'api',
        routeId: r1,
        fromNumber: 'Acme',
        toNumber: '+447700900333',
        cli: null,
        status: 'sent',
        sipCode: null,
        hangupCause: null,
        durationSeconds: null,
        segments: 1,
        pddMs: null,
        mediaMode: null,
        billed: { total: '0.011000', seller: '0.008000', ratePerUnit: '0.011000', billableSeconds: null },
        answeredAt: null,
        endedAt: at,
        createdAt: at,
      }),
    ],
    { relatedEntityType: 'api_sms', relatedEntityId: msg },
  );
  // Inserted rows the arithmetic needs: a billed call with no rate (unrated), one on the own route
  // whose seller credit exceeds what the markup brought (negative margin), a probe, test-key
  // traffic, another operator's customer and the operator's own call: only the first two count.
  const extra = (o: Partial<CdrInsert>): CdrInsert => ({
    ...leg({ callGroupId: newId(), billed: null }),
    ...o,
  });
  const unratedGroup = newId();
  await h.services.cdrs.insertCdrs(h.sql, [
    extra({
      callGroupId: unratedGroup,
      billedSeconds: 60,
      buyerCost: '0.500000',
      ratePerUnit: null,
      toNumber: '+447700900444',
    }),
    extra({
      accountId: subB,
      routeId: r2,
      sellerId: op.accountId,
      billedSeconds: 30,
      durationSeconds: 30,
      buyerCost: '0.008000',
      sellerCredit: '0.010000',
      ratePerUnit: '0.016000',
      sipCode: 200,
      hangupCause: 'callee-bye',
    }),
    { ...extra({ billedSeconds: 60, buyerCost: '0.100000', ratePerUnit: '0.1' }), isProbe: true },
    { ...extra({ billedSeconds: 60, buyerCost: '0.100000', ratePerUnit: '0.1' }), simulated: true },
    extra({ operatorId: other.accountId, billedSeconds: 60, buyerCost: '0.100000', ratePerUnit: '0.1' }),
    extra({ accountId: op.accountId, operatorId: null, billedSeconds: 60, buyerCost: '0.100000', ratePerUnit: '0.1' }),
  ]);
  await h.services.switchSubscriptions.grant(op.accountId, 'plan', null);
  return { h, op, subA, subB, r1, r2, at };
}

t.test('Switch call records and analytics', async (t) => {
  const w = await world(t);
  const { h, op } = w;
  const get = async (url: string, token = op.session) => {
    const r = await h.app.inject({ method: 'GET', url: `/api/v1${url}`, headers: bearer(token) });
    const json = (r.headers['content-type'] ?? '').toString().startsWith('application/json');
    return { status: r.statusCode, body: json ? r.json() : null, text: r.body };
  };

  t.test('no plan: 402 on every operation', async (t) => {
    const none = await h.signUp();
    for (const url of [
      '/switch/cdrs',
      '/switch/analytics/totals',
      '/switch/analytics/daily',
      '/switch/analytics/breakdown',
      '/switch/cdrs/exports',
      `/switch/customers/${w.subA}/usage`,
    ]) {
      const r = await get(url, none.session);
      t.equal(r.status, 402, url);
      t.equal(r.body.error.code, 'SWITCH_SUBSCRIPTION_REQUIRED');
    }
  });

  t.test('totals: revenue, cost and margin to the 6th decimal, quality and rating', async (t) => {
    const r = await get('/switch/analytics/totals');
    t.equal(r.status, 200, r.text);
    t.match(r.body.data, {
      // 0.0264 + 0.026875 + 0.011 + 0.5 + 0.008
      revenue: '0.572275',
      // 0.0024 + 0.001875 + 0.001 + 0 - 0.010
      margin: '-0.004725',
      cost: '0.577000',
      marginPct: -0.83,
      calls: 4,
      answered: 4,
      messages: 1,
      minutes: 4,
      asr: 100,
      window: { label: 'Last 30 days' },
      rating: { unratedBilled: 1, billedCalls: 5, unratedPct: 20, unratedRevenue: '0.500000', unratedMinutes: 1 },
    });
    t.ok(r.body.data.freshness.latestRecordAt, 'the newest record time');
    const empty = await get(
      `/switch/analytics/totals?to=${encodeURIComponent(new Date(w.at.getTime() - 86_400_000).toISOString())}`,
    );
    t.match(empty.body.data, { revenue: '0.000000', margin: '0.000000', marginPct: null, asr: null, calls: 0 });
    const bad = await get('/switch/analytics/totals?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z');
    t.equal(bad.status, 400);
    t.equal(bad.body.error.code, 'VALIDATION_ERROR');
  });

  t.test('daily and breakdown', async (t) => {
    const d = await get('/switch/analytics/daily');
    t.equal(d.body.data.length, 1);
    t.match(d.body.data[0], { day: w.at.toISOString().slice(0, 10), revenue: '0.572275', margin: '-0.004725' });
    const byCustomer = await get('/switch/analytics/breakdown');
    t.match(byCustomer.body.data.items, [
      { key: w.subA, label: 'Acme', external: 'ext-1', revenue: '0.537400', margin: '0.003400', cost: '0.534000' },
      { key: w.subB, label: 'Beta', external: null, revenue: '0.034875', margin: '-0.008125', cost: '0.043000' },
    ]);
    const bySupplier = await get('/switch/analytics/breakdown?by=supplier');
    t.match(bySupplier.body.data.items, [
      { key: w.r1, label: 'UK Mobile', revenue: '0.537400', margin: '0.003400', calls: 2, messages: 1 },
      { key: w.r2, label: 'FR Fixed', revenue: '0.034875', margin: '-0.008125', calls: 3, answered: 2 },
    ]);
    const byDest = await get('/switch/analytics/breakdown?by=destination');
    t.same(
      byDest.body.data.items.map((i: { key: string; revenue: string }) => [i.key, i.revenue]),
      [
        ['GB', '0.537400'],
        ['FR', '0.034875'],
      ],
    );
    t.equal((await get('/switch/analytics/breakdown?by=route')).status, 400);
  });

  t.test('records: rows, money per record, filters and masking', async (t) => {
    const all = await get('/switch/cdrs?limit=500');
    t.equal(all.status, 200, all.text);
    t.equal(all.body.data.total, 7, "seven customer records: probes and other accounts' records hidden");
    t.equal(
      all.body.data.rows.filter((r: { simulated: boolean }) => r.simulated).length,
      1,
      'test-key traffic flagged',
    );
    t.equal(all.body.data.numbersMasked, false, 'a session sees numbers');
    const answered = all.body.data.rows.find((r: { callId: string; sipCode: number }) => r.sipCode === 200 && r.callId);
    t.ok(answered.from.startsWith('+44'));
    const sms = all.body.data.rows.find((r: { kind: string }) => r.kind === 'sms');
    t.match(sms, { revenue: '0.011000', margin: '0.001000', cost: '0.010000', rated: true });

    const probes = await get('/switch/cdrs?includeProbes=true');
    t.equal(probes.body.data.total, 8, 'the probe is listed on request');

    const unrated = await get('/switch/cdrs?ratingState=unrated');
    t.same(
      unrated.body.data.rows.map((r: { revenue: string; rated: boolean }) => [r.revenue, r.rated]),
      [['0.500000', false]],
    );
    const negative = await get('/switch/cdrs?negativeMarginOnly=true');
    t.same(
      negative.body.data.rows.map((r: { margin: string; cost: string }) => [r.margin, r.cost]),
      [['-0.010000', '0.018000']],
    );
    t.equal(negative.body.data.total, 1);

    const ownSelected = await get(`/switch/cdrs?vendorTrunkId=${w.r2}`);
    t.equal(ownSelected.body.data.total, 3, 'legs that went out on the own route');
    const ownAttempted = await get(`/switch/cdrs?vendorTrunkId=${w.r2}&supplierTrunkMatch=attempted`);
    t.equal(ownAttempted.body.data.total, 4, "and the failed-over call's other leg");

    const b = await get(`/switch/cdrs?subAccountId=${w.subB}&sortBy=revenue&sortDir=asc`);
    t.same(
      b.body.data.rows.map((r: { revenue: string }) => r.revenue),
      ['0.008000', '0.026875'],
    );
    t.equal((await get(`/switch/cdrs?customerTrunkId=${w.subB}`)).body.data.total, 2);
    t.equal((await get('/switch/cdrs?sipCodes=503,486')).body.data.total, 1);
    t.equal((await get('/switch/cdrs?releaseParty=callee')).body.data.total, 2);
    t.equal((await get('/switch/cdrs?countryPrefix=33')).body.data.total, 1);
    t.equal((await get('/switch/cdrs?destinationName=uk%20mob')).body.data.total, 4);
    t.equal((await get('/switch/cdrs?kind=sms')).body.data.total, 1);
    t.equal((await get('/switch/cdrs?answeredState=unanswered&kind=voice')).body.data.total, 1);
    t.equal((await get('/switch/cdrs?pddMinMs=2000')).body.data.total, 1);
    t.equal((await get('/switch/cdrs?search=900333;900444')).body.data.total, 2, 'any of two values');
    t.equal((await get('/switch/cdrs?search=900333;900444&searchMatch=all')).body.data.total, 0);
    t.equal((await get('/switch/cdrs?attestation=A')).body.data.total, 0, 'no record keeps an attestation');
    t.equal((await get('/switch/cdrs?limit=2&offset=6')).body.data.rows.length, 1);

    const many = Array.from({ length: 21 }, (_, i) => 400 + i).join(',');
    const bad = await get(
      `/switch/cdrs?sipCodes=${many}&durationMin=10&durationMax=5&from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z`,
    );
    t.equal(bad.status, 400);
    t.same(
      bad.body.error.details.map((d: { path: string }) => d.path).sort(),
      ['durationMax', 'from', 'sipCodes'],
      'every problem at once',
    );
    t.equal((await get('/switch/cdrs?limit=501')).status, 400);
    t.equal((await get('/switch/cdrs?nope=1')).status, 400);

    const scoped = (await h.services.keys.create(op.accountId, { scopes: ['switch:manage'] })).secret;
    const masked = await get('/switch/cdrs?kind=sms', scoped);
    t.equal(masked.status, 200, masked.text);
    t.equal(masked.body.data.numbersMasked, true);
    t.equal(masked.body.data.rows[0].to, '+4477******33', 'a key without cdr:numbers sees masked numbers');
    const full = (await h.services.keys.create(op.accountId, { scopes: ['switch:manage', 'cdr:numbers'] })).secret;
    t.equal((await get('/switch/cdrs?kind=sms', full)).body.data.rows[0].to, '+447700900333');
    const testKey = (await h.services.keys.create(op.accountId, { mode: 'test' })).secret;
    t.equal((await get('/switch/cdrs', testKey)).status, 200, 'test keys read');
  });

  t.test('exports: started, limited to 3 running, CSV downloaded through the billing path', async (t) => {
    const scoped = (await h.services.keys.create(op.accountId, { scopes: ['switch:manage', 'account:read'] })).secret;
    const post = (body: object, token = scoped) =>
      h.app.inject({ method: 'POST', url: '/api/v1/switch/cdrs/exports', headers: bearer(token), payload: body });
    const started = await post({ subAccountId: w.subA, includeProbes: false });
    t.equal(started.statusCode, 202, started.body);
    const e = started.json().data;
    t.match(e, {
      phase: 'running',
      numbersMasked: true,
      addressesMasked: true,
      requestedScope: { subAccountId: w.subA },
    });
    // The switch module's stop waits for its exports in flight (no polling).
    await h.modules.find((m) => m.name === 'switch')!.stop!();
    const done = await get(`/switch/cdrs/exports/${e.id}`);
    t.match(done.body.data, { phase: 'completed', recordCount: 5, downloadUrl: `/billing/exports/${e.id}/download` });
    const file = await get(`/billing/exports/${e.id}/download`, scoped);
    t.equal(file.status, 200);
    const lines = file.text.trim().split('\n');
    t.equal(lines.length, 6, "a header and sub A's five records");
    const head = lines[0]!.split(',');
    const rows = lines.slice(1).map((l) => Object.fromEntries(l.split(',').map((v, i) => [head[i], v])));
    t.same(
      rows.map((r) => [r['kind'], r['revenue'], r['cost'], r['margin']]).sort((a, b) => Number(a[1]) - Number(b[1])),
      [
        ['voice', '0.000000', '0.000000', '0.000000'],
        ['sms', '0.011000', '0.010000', '0.001000'],
        ['voice', '0.026400', '0.024000', '0.002400'],
        ['voice', '0.100000', '0.100000', '0.000000'],
        ['voice', '0.500000', '0.500000', '0.000000'],
      ],
      'money per record, to the 6th decimal',
    );
    t.equal(rows[0]!['releaseParty'], 'system', 'the failed leg, oldest first');
    t.ok(
      rows.every((r) => r['to'] === '' || /\*/.test(r['to']!)),
      'numbers masked in the file',
    );
    t.notOk(file.text.includes('+447700900333'), 'no full number in the file');

    const list = await get('/switch/cdrs/exports');
    t.same(
      list.body.data.map((x: { id: string }) => x.id),
      [e.id],
    );
    const billingList = await get('/billing/exports');
    t.same(billingList.body.data, [], 'billing lists its own exports only');

    t.equal((await get(`/switch/cdrs/exports/${newId()}`)).status, 404);
    for (let i = 0; i < 3; i++)
      await h.sql`insert into billing_exports (id, account_id, kind, params, phase, expires_at, created_at)
        values (${newId()}, ${op.accountId}, 'transactions', '{}', 'running', now() + interval '1 day', now())`;
    const refused = await post({});
    t.equal(refused.statusCode, 429);
    t.equal(refused.json().error.code, 'TOO_MANY_EXPORTS');
    const invalid = await post({ limit: 5 });
    t.equal(invalid.statusCode, 400, 'limit is not an export filter');
  });

  t.test('customer usage: window, totals, daily, live calls', async (t) => {
    const r = await get(`/switch/customers/${w.subA}/usage`);
    t.equal(r.status, 200, r.text);
    t.match(r.body.data, {
      window: { subAccountId: w.subA, clamped: false, maxWindowDays: 92 },
      customer: { label: 'Acme' },
      totals: { calls: 2, answered: 2, messages: 1, revenue: '0.537400', cost: '0.534000', rejectedAtCapacity: null },
      live: { concurrentCalls: 0 },
    });
    t.equal(r.body.data.daily.length, 1);
    t.notOk('destinations' in r.body.data);
    const until = new Date();
    const since = new Date(until.getTime() - 100 * 86_400_000);
    const long = await get(
      `/switch/customers/${w.subA}/usage?since=${since.toISOString()}&until=${until.toISOString()}&destinations=true`,
    );
    t.match(long.body.data.window, {
      clamped: true,
      since: since.toISOString(),
      until: new Date(since.getTime() + 92 * 86_400_000).toISOString(),
      nextSince: new Date(since.getTime() + 92 * 86_400_000).toISOString(),
    });
    t.equal(long.body.data.totals.calls, 0, 'the clamped window ends before the records');
    const dest = await get(`/switch/customers/${w.subA}/usage?destinations=1`);
    t.match(dest.body.data.destinations, [{ key: 'GB', revenue: '0.537400' }]);
    const stranger = await h.signUp();
    await h.services.switchSubscriptions.grant(stranger.accountId, 'plan', null);
    t.equal(
      (await get(`/switch/customers/${w.subA}/usage`, stranger.session)).status,
      404,
      "another operator's customer",
    );
    t.equal((await get(`/switch/customers/${w.subA}/usage?subAccountId=${w.subB}`)).status, 400);
  });
});
