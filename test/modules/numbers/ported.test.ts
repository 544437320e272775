import t from 'tap';
import * as trunk from '../sip-trunks/world.js';

// Ported numbers (docs/numbers.md "Ported numbers"): a completed port-in order's numbers are DIDs
// of the buyer, routed like rented ones; calls come in over the carrier trunk the order names
// (here the world's "seller" account stands as that carrier); the platform fee is 1.500000/month.

t.test('a ported number: routable DID, a real call delivered, the monthly fee charged once, release', async (t) => {
  const w = await trunk.createWorld(t, { numbers: { ported_monthly_fee: '1.500000' } });
  const { d } = w;
  const admin = await d.modules.services.accounts.createAccount({
    email: 'port-admin@calls.test',
    password: 'correct horse battery staple 42',
    role: 'admin',
  });
  const { accessToken: opToken } = await d.modules.services.accounts.login(
    'port-admin@calls.test',
    'correct horse battery staple 42',
    {},
  );
  t.ok(admin.id);
  const number = '442071239901';
  // The catalogue knows the country the digits dial: the ported DID shows it.
  await d.sql`insert into did_countries (id, name, country_code, prefix) values ('44-gb', 'United Kingdom', 'GB', '44')
              on conflict do nothing`;
  const created = await w.api('POST', '/dids/port-ins', w.operator.token, {
    numbers: [`+${number}`],
    losingCarrier: 'Old Telco Ltd',
    carrierAccountNumber: 'ACC-1',
    authorizedName: 'Ada Lovelace',
    desiredDate: '2026-12-15',
  });
  t.equal(created.status, 201, created.text);
  const orderId = created.body.data.id as string;
  t.equal((await w.api('POST', `/dids/port-ins/${orderId}/approve`, opToken, {})).status, 200);
  const bad = await w.api('POST', `/dids/port-ins/${orderId}/complete`, opToken, {
    inboundCarrierId: '00000000-0000-4000-8000-000000000001',
  });
  t.equal(bad.status, 400, 'a carrier that is no account');
  t.equal(bad.body.error.field ?? bad.body.error.details?.[0]?.path, 'inboundCarrierId');
  const done = await w.api('POST', `/dids/port-ins/${orderId}/complete`, opToken, {
    inboundCarrierId: w.seller.accountId,
  });
  t.equal(done.status, 200, done.text);

  const mine = await w.api('GET', '/dids/mine', w.operator.token);
  const did = mine.body.data.find((x: { number: string }) => x.number === number);
  t.match(did, {
    origin: 'ported',
    portInId: orderId,
    status: 'active',
    monthlyPrice: '1.500000',
    setupPrice: '0.000000',
    countryCode: 'GB',
    pointMode: 'unrouted',
  });
  const didId = did.id as string;

  await t.test('the /dids operations that apply: label, routing, features', async (t) => {
    t.equal((await w.api('PUT', `/dids/${didId}/label`, w.operator.token, { label: 'Head office' })).status, 200);
    const f = await w.api('GET', `/dids/${didId}/features`, w.operator.token);
    t.match(f.body.data, { voice: { inbound: false, inboundRatePerMinute: null }, sms: { inbound: true } });
    const again = await w.api('POST', '/dids/port-ins', w.seller.token, {
      numbers: [number],
      losingCarrier: 'X',
      carrierAccountNumber: 'Y',
      authorizedName: 'Z',
      desiredDate: '2026-12-15',
    });
    t.equal(again.status, 409, 'a ported number cannot be ordered in again');
  });

  await t.test('a call over the carrier trunk is delivered to the number SIP target', async (t) => {
    const uas = await trunk.uasAnswer(t, number);
    const r = await w.api('PUT', `/dids/${didId}/routing`, w.operator.token, {
      pointMode: 'sip',
      pointsTo: `127.0.0.1:${uas.port}`,
    });
    t.equal(r.status, 200, r.text);
    const ip = await w.api('POST', '/sip/trunk-ips', w.seller.token, { ip: '127.0.0.1', label: 'carrier trunk' });
    t.equal(ip.status, 201, ip.text);
    const run = await trunk.uac(
      t,
      w.sipPort,
      trunk.uacScenario('uac-tail-answer.xml', { HOLD_MS: '300' }, false),
      number,
    );
    await trunk.expectExit(t, run, 'the carrier trunk completed the call');
    await trunk.expectExit(t, uas, 'the owner endpoint answered and got the BYE');
    const c = await trunk.eventually(async () => {
      const [row] = await d.sql<{ id: string; status: string; cost: string }[]>`
        select id, status, cost::text from calls where account_id = ${w.operator.accountId} and ended_at is not null`;
      return row;
    });
    t.match(c, { status: 'completed', cost: '0.000000' }, 'a ported number has free inbound minutes');
    const cdrs = await d.sql<{ direction: string; routeId: string; sellerId: string; toNumber: string }[]>`
      select direction, route_id, seller_id, to_number from cdrs where call_group_id = ${c.id}`;
    t.match(cdrs, [{ direction: 'inbound', routeId: didId, sellerId: w.seller.accountId, toNumber: number }]);
    const [ev] = await d.sql<{ data: { handledBy: string } }[]>`
      select data from events where event = 'number.call.received' and account_id = ${w.operator.accountId}`;
    t.equal(ev?.data.handledBy, 'sip');
  });

  await t.test('a call from any other trunk to the digits is an ordinary outbound call', async (t) => {
    const target = await d.modules.services.numbers.manage.get(w.operator.accountId, didId);
    t.equal(target.status, 'active');
    const { createNumberCalls } = await import('../../../src/modules/numbers/index.js');
    const ask = createNumberCalls({
      sql: d.sql,
      platformFeePercent: '10',
      agentFeePerMinute: '0',
      agentsAvailable: false,
    });
    t.equal(await ask(w.operator.accountId, number), null, 'the owner itself does not bring calls in for it');
    t.match(await ask(w.seller.accountId, number), {
      didId,
      ownerId: w.operator.accountId,
      sellerId: w.seller.accountId,
    });
  });

  await t.test('the renewal job charges the platform fee once, through the ledger', async (t) => {
    const renewals = d.modules.services.numbers.renewals;
    const before = (await d.modules.services.ledger.balanceOf(w.operator.accountId)).balance;
    await d.sql`update dids set next_renewal_at = now() - interval '1 minute' where id = ${didId}`;
    t.equal(await renewals.renewOne(didId), 'renewed');
    t.equal(await renewals.renewOne(didId), null, 'not due again');
    await d.sql`update dids set next_renewal_at = now() - interval '1 minute', periods_paid = 1 where id = ${didId}`;
    t.equal(await renewals.renewOne(didId), 'renewed', 'the same period run again');
    const after = (await d.modules.services.ledger.balanceOf(w.operator.accountId)).balance;
    t.equal((Number(before) - Number(after)).toFixed(6), '1.500000', 'charged once: the posting key holds');
    const [posting] = await d.sql<{ n: number }[]>`
      select count(*)::int as n from postings where posting_key = ${`did:${didId}:period:2`}`;
    t.equal(posting?.n, 1);
    const events = await d.sql<{ kind: string; amount: string | null }[]>`
      select kind, amount::text from did_events where did_id = ${didId} order by created_at, id`;
    t.match(events[0], { kind: 'ported_in' });
    t.ok(events.some((e) => e.kind === 'renewed' && e.amount === '1.500000'));
  });

  await t.test('unpaid: suspended, then released after the grace days; the digits may be ported again', async (t) => {
    const renewals = d.modules.services.numbers.renewals;
    const bal = (await d.modules.services.ledger.balanceOf(w.operator.accountId)).balance;
    await d.modules.services.ledger.charge({
      postingKey: `drain-${didId}`,
      accountId: w.operator.accountId,
      amount: bal,
      reference: 'test drain',
    });
    await d.sql`update dids set next_renewal_at = now() - interval '1 minute' where id = ${didId}`;
    t.equal(await renewals.renewOne(didId), 'suspended');
    await d.sql`update dids set suspended_at = now() - interval '8 days' where id = ${didId}`;
    t.equal(await renewals.renewOne(didId), 'released');
    const got = await w.api('GET', `/dids/${didId}`, w.operator.token);
    t.match(got.body.data, { status: 'released', pointMode: 'unrouted' });
    const [n] = await d.sql<{ state: string }[]>`
      select state from did_port_in_numbers where number = ${number} and port_in_id = ${orderId}`;
    t.equal(n?.state, 'dropped', 'no longer held by the buyer here');
  });
});
