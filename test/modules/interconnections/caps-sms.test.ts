import { randomUUID } from 'node:crypto';
import { parse } from 'csv-parse/sync';
import t from 'tap';
import { NotificationKinds } from '../../../src/modules/notifications/kinds.js';
import { bearer, buildTestApp, type TestApp } from '../../helpers/app.js';
import { checkInvariants } from '../../ledger/helpers.js';
import { createSmsWorld, eventually } from '../sms/world.js';

/**
 * Interconnection terms beyond the flat discount, on real SMS to a Net::SMPP SMSC through two
 * daemons' modules on one database (each with its own pool and its terms cache listening; the
 * message that crosses the cap is sent on the second): an agreed rate per
 * destination prefix, a messages cap past which the buyer's traffic goes at list price on both
 * daemons, an amount cap that refuses the seller's route, settlement statements (provisional, then
 * final by the job at period end; JSON and CSV, both parties), and the sweep that expires an
 * unanswered proposal, driven by an injected clock.
 *
 * Money (SMS fee 0.000500 a segment): seller 1's deck has prefix 1 at 0.010000. Agreed: 1202555 at
 * 0.007123 (0.007623 with the fee), elsewhere 20% off (0.008000, 0.008500). Seller 2's deck 0.004000,
 * 10% off: 0.003600 (0.004100).
 */
t.test('interconnection caps, agreed rates and statements on real SMS through two daemons', async (t) => {
  // Real time moved by an offset: the SMS path's own waits (throttle windows) still see time pass.
  let offset = 0;
  const clock = { now: () => new Date(Date.now() + offset) };
  const w = await createSmsWorld(t, { clock });
  const { h, buyer, seller } = w;
  const h2 = await buildTestApp(t, { dbUrl: h.dbUrl, clock });
  t.teardown(() => h2.services.sms.stop());
  for (const x of [h, h2]) {
    const m = x.modules.find((m) => m.name === 'interconnections')!;
    await m.start!();
    t.teardown(() => m.stop!());
  }
  const on = (x: TestApp) => async (method: string, url: string, token: string, payload?: unknown) => {
    const r = await x.app.inject({
      method: method as 'GET',
      url: `/api/v1${url}`,
      headers: { ...bearer(token), ...(method === 'POST' ? { 'x-idempotency-key': randomUUID() } : {}) },
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
    return { status: r.statusCode, body: String(r.headers['content-type']).includes('json') ? r.json() : r.body };
  };
  const [a, b] = [on(h), on(h2)];
  const send = async (via: typeof a, to: string) => {
    const r = await via('POST', '/comms/sms', buyer.session, { to, from: 'MyShop', message: 'hello' });
    t.equal(r.status, 200, JSON.stringify(r.body));
    return r.body.data.cost as string;
  };
  const cdrOf = async (to: string) => {
    const [row] = await eventually(async () => {
      const rows = await h.sql<{ buyerCost: string; interconnectionId: string | null; agreedRate: string | null }[]>`
        select buyer_cost::text, interconnection_id, agreed_rate::text from cdrs
        where account_id = ${buyer.accountId} and kind = 'sms' and to_number like ${`%${to.slice(1)}`}`;
      return rows.length > 0 ? rows : null;
    });
    return row!;
  };
  const events = (accountId: string, event: string) =>
    h.sql<{ data: Record<string, unknown> }[]>`
      select data from events where account_id = ${accountId} and event = ${event} order by id`;
  /** What a daemon's routing would charge the buyer for an SMS to `number`, route by route. */
  const quote = async (x: TestApp, number: string) =>
    (await x.services.routing.candidatesFor({ accountId: buyer.accountId, number, type: 'sms' })).map((c) => [
      c.routeId,
      c.price.toFixed(6),
      c.interconnectionId ?? null,
    ]);

  const terms = {
    peerAccountId: seller.accountId,
    services: ['sms'],
    requesterDiscountPct: '20',
    peerDiscountPct: '0',
    caps: { messages: 2 },
    rates: [{ payer: 'requester', service: 'sms', prefix: '1202555', rate: '0.007123', destination: 'US DC' }],
  };
  const wrong = await a('POST', '/interconnections', buyer.session, {
    ...terms,
    rates: [{ payer: 'requester', service: 'voice', prefix: '44', rate: '0.01' }],
  });
  t.match(wrong.body.error, { code: 'VALIDATION_ERROR', details: [{ path: '/rates/0/service' }] });
  const proposed = await a('POST', '/interconnections', buyer.session, terms);
  t.equal(proposed.status, 201, JSON.stringify(proposed.body));
  const id = proposed.body.data.id as string;
  t.match(proposed.body.data, {
    period: 'month',
    caps: { minutes: null, messages: 2, amount: null, overCap: 'list_price' },
    rates: [{ payer: 'requester', service: 'sms', prefix: '1202555', rate: '0.007123', destination: 'US DC' }],
  });
  t.equal((await b('POST', `/interconnections/${id}/accept`, seller.session)).status, 200, 'accepted on daemon 2');

  await t.test('agreed rate per destination, then the cap, on both daemons', async (t) => {
    // Daemon 2 has the terms cached before the cap is crossed: only the crossing's NOTIFY can change them.
    t.same(await quote(h2, '13105550100'), [[w.routeId, '0.008500', id]]);
    t.equal(await send(a, '+12025550111'), '0.007623', 'the agreed rate of 1202555 on daemon 1');
    t.same(await cdrOf('+12025550111'), { buyerCost: '0.007623', interconnectionId: id, agreedRate: '0.007123' });
    t.equal(await send(b, '+13105550112'), '0.008500', 'the discount elsewhere, sent on daemon 2: the second message');
    const usage = await a('GET', `/interconnections/${id}/usage`, seller.session);
    t.match(usage.body.data, {
      overCap: 'list_price',
      sides: [
        {
          payer: 'requester',
          messages: 2,
          amount: '0.015123',
          capReached: { messages: true, minutes: false, amount: false },
        },
        { payer: 'peer', messages: 0, amount: '0.000000' },
      ],
    });
    for (const x of [h, h2])
      t.same(
        await eventually(async () => {
          const q = await quote(x, '12025550100');
          return q[0]![2] === null ? q : null;
        }),
        [[w.routeId, '0.010500', null]],
        'past the cap the route is at list price',
      );
    t.equal(await send(a, '+12025550113'), '0.010500');
    t.equal(await send(a, '+13105550114'), '0.010500');
    t.same(await cdrOf('+13105550114'), { buyerCost: '0.010500', interconnectionId: null, agreedRate: null });
  });

  let id2 = '';
  const second = await w.smsRoute({
    name: 'Cheap SMSC',
    port: w.smsc.port,
    systemId: 'sup1',
    password: 'pw1',
    csv: 'prefix,destination,rate\n1,US,0.004\n',
  });
  await t.test('an amount cap that refuses the seller’s routes past it', async (t) => {
    t.equal((await a('POST', '/purchases', buyer.session, { routeId: second.routeId })).status, 201);
    const p = await a('POST', '/interconnections', buyer.session, {
      peerAccountId: second.seller.accountId,
      services: ['sms'],
      requesterDiscountPct: '10',
      peerDiscountPct: '0',
      caps: { amount: '0.003', overCap: 'refuse' },
    });
    id2 = p.body.data.id;
    t.equal((await a('POST', `/interconnections/${id2}/accept`, second.seller.session)).status, 200);
    t.equal(await send(a, '+13105550115'), '0.004100', 'the cheaper route at its agreed price');
    for (const x of [h, h2])
      t.same(
        await eventually(async () => {
          const q = await quote(x, '13105550100');
          return q.length === 1 ? q : null;
        }),
        [[w.routeId, '0.010500', null]],
        "the capped seller's route is no longer a candidate",
      );
    t.equal(await send(a, '+13105550116'), '0.010500', 'sent over the other route');
  });

  // An unanswered proposal between the two sellers, for the sweep once the clock has moved.
  const open = await a('POST', '/interconnections', seller.session, {
    peerAccountId: second.seller.accountId,
    services: ['sms'],
    requesterDiscountPct: '1',
    peerDiscountPct: '1',
    expiresInHours: 1,
  });
  t.equal(open.status, 201);

  let provisional = '';
  await t.test('a statement of the running period, read by both sides as JSON and CSV', async (t) => {
    const made = await b('POST', `/interconnections/${id}/statements`, seller.session);
    t.equal(made.status, 201, JSON.stringify(made.body));
    const s = made.body.data;
    provisional = s.id;
    t.match(s, {
      interconnectionId: id,
      final: false,
      generatedBy: 'request',
      lines: [
        { payer: 'requester', seller: 'peer', service: 'sms', routeId: w.routeId, agreedRate: '0.007123', count: 1 },
        { payer: 'requester', seller: 'peer', service: 'sms', routeId: w.routeId, agreedRate: '0.008000', count: 1 },
      ],
      requester: { accountId: buyer.accountId, sent: '0.015123', received: '0.000000', messages: 2 },
      peer: { accountId: seller.accountId, sent: '0.000000', received: '0.015123', messages: 0 },
      net: { payer: 'requester', payee: 'peer', amount: '0.015123' },
    });
    t.equal(s.lines.length, 2, 'traffic past the cap is not under the terms');
    t.same(
      s.lines.map((l: { amount: string; buyerCost: string; segments: number }) => [l.amount, l.buyerCost, l.segments]),
      [
        ['0.007123', '0.007623', 1],
        ['0.008000', '0.008500', 1],
      ],
    );
    const read = await a('GET', `/interconnections/${id}/statements/${s.id}`, buyer.session);
    t.same(read.body.data, s, 'the buyer reads the same statement');
    const csv = await a('GET', `/interconnections/${id}/statements/${s.id}?format=csv`, buyer.session);
    t.equal(csv.status, 200);
    const rows = parse(csv.body as string, { columns: true }) as Record<string, string>[];
    t.same(
      rows.map((r) => [r['row'], r['payer'], r['agreed_rate'], r['amount']]),
      [
        ['line', 'requester', '0.007123', '0.007123'],
        ['line', 'requester', '0.008000', '0.008000'],
        ['sent', 'requester', '', '0.015123'],
        ['sent', 'peer', '', '0.000000'],
        ['net', 'requester', '', '0.015123'],
      ],
    );
    const stranger = await h.signUp();
    t.equal((await a('GET', `/interconnections/${id}/statements/${s.id}`, stranger.session)).status, 404);
  });

  await t.test('period end: the job makes final statements; the sweep expires the proposal', async (t) => {
    const now = clock.now();
    const periodStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
    offset = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1, 1) - Date.now();
    const { interconnectionStatements: statements, interconnections } = h.services;
    // The daemons' own jobs may run first: whichever does, one final statement per agreement and period.
    await statements.closeDue();
    t.equal(await statements.closeDue(), 0, 'nothing left to make');
    const finals = await h.sql<{ interconnectionId: string; periodStart: Date; generatedBy: string }[]>`
      select interconnection_id, period_start, generated_by from interconnection_statements where final
      order by interconnection_id`;
    t.same(
      finals.map((f) => [f.interconnectionId, f.periodStart.toISOString(), f.generatedBy]),
      [id, id2].sort().map((x) => [x, periodStart.toISOString(), 'job']),
    );
    const ready = await events(buyer.accountId, 'interconnection.statement_ready');
    t.equal(ready.length, 2, 'the buyer is told of each');
    t.match((await events(seller.accountId, 'interconnection.statement_ready'))[0]!.data, {
      interconnectionId: id,
      counterpartyId: buyer.accountId,
      net: { payer: 'requester', amount: '0.015123' },
    });
    const again = await statements.generate(buyer.accountId, id, new Date(periodStart.getTime() + 3_600_000));
    t.equal(again.made, false, 'a closed period has one statement');
    t.match(again.statement, { final: true, requester: { sent: '0.015123' } });
    const listed = await statements.list(seller.accountId, id, { limit: 10 });
    t.same(
      listed.map((x) => [x.final, x.id === provisional]),
      [
        [true, false],
        [false, true],
      ],
    );

    await interconnections.expireDue();
    const expired = await interconnections.get(seller.accountId, open.body.data.id);
    t.equal(expired.status, 'expired');
    const told = await events(second.seller.accountId, 'interconnection.expired');
    t.equal(told.length, 1);
    t.match(told[0]!.data, { interconnectionId: open.body.data.id, kind: 'proposal', status: 'expired' });
    t.equal((await events(seller.accountId, 'interconnection.expired')).length, 1, 'both sides are told');
    t.match(NotificationKinds['interconnection.expired']!.render(told[0]!.data), {
      title: 'Interconnection proposal expired',
      body: `The interconnection proposal between you and account ${seller.accountId} expired unanswered.`,
    });
    t.equal(await interconnections.expireDue(), 0, 'once');
    const again2 = await interconnections.propose(
      { accountId: seller.accountId, parentId: null },
      second.seller.accountId,
      {
        services: ['voice'],
        requesterDiscountPct: '2',
        peerDiscountPct: '2',
      },
    );
    t.equal(again2.status, 'pending', 'the pair may propose again once the sweep expired the last proposal');
  });

  await t.test('the ledger stays balanced', async (t) => {
    await checkInvariants(t, h.sql);
  });
});
