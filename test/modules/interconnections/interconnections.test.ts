import t from 'tap';
import { checkInvariants } from '../../ledger/helpers.js';
import { createSmsWorld, eventually } from '../sms/world.js';

/**
 * Interconnections through the real app on a fresh database, with real SMS traffic to a Net::SMPP
 * supplier SMSC: propose, counter, accept, and the agreed discount pricing, holding and settling
 * the buyer's messages on the seller's route (CDR, seller credit, balance); suspend, resume,
 * terminate, and the refusals of each step.
 *
 * Money (SMS fee 0.000500 a segment): the seller's deck has prefix 1 at 0.010000. Under a 20%
 * discount the buyer pays seller 0.008000 + fee 0.000500 = 0.008500 a segment.
 */
t.test('interconnections: terms agreed between two accounts price their traffic', async (t) => {
  const w = await createSmsWorld(t);
  const { h, api, buyer, seller } = w;
  const events = async (accountId: string, event: string) =>
    h.sql<{ data: Record<string, unknown> }[]>`
      select data from events where account_id = ${accountId} and event = ${event} order by id`;
  const sendSms = async (to: string) => {
    const r = await api('POST', '/comms/sms', buyer.session, { to, from: 'MyShop', message: 'hello' });
    t.equal(r.status, 200, JSON.stringify(r.body));
    return { ...(r.body.data as { messageId: string; cost: string }), to };
  };
  // Each test message goes to its own number: its CDR is found by it.
  const cdrOf = async (to: string) => {
    const [row] = await eventually(async () => {
      const rows = await h.sql<{ buyerCost: string; sellerCredit: string }[]>`
        select buyer_cost::text, seller_credit::text from cdrs
        where account_id = ${buyer.accountId} and kind = 'sms' and to_number like ${`%${to.slice(1)}`}`;
      return rows.length > 0 ? rows : null;
    });
    return row!;
  };
  // A voice route of the seller, bought by the buyer: priced here, not called (voice.test.ts places calls).
  const voice = await api('POST', '/routes', seller.session, {
    type: 'voice',
    name: 'UK voice',
    country: 'GB',
    billingIncrement: '6/6',
    endpoints: [{ host: '127.0.0.1', port: 5099, transport: 'udp', priority: 1 }],
  });
  t.equal(voice.status, 201, JSON.stringify(voice.body));
  const voiceId = voice.body.data.id as string;
  t.equal(
    (
      await api('POST', `/routes/${voiceId}/rates`, seller.session, {
        format: 'csv',
        csv: 'prefix,destination,rate,increment\n4420,UK London,0.012345,6/6\n',
      })
    ).status,
    200,
  );
  t.equal((await api('POST', '/purchases', buyer.session, { routeId: voiceId })).status, 201);

  /** A proposal from `token` to `peerAccountId`: SMS at 5% off for the requester unless `terms` say otherwise. */
  const propose = (token: string, peerAccountId: string, terms: Record<string, unknown> = {}) =>
    api('POST', '/interconnections', token, {
      peerAccountId,
      services: ['sms'],
      requesterDiscountPct: '5',
      peerDiscountPct: '0',
      ...terms,
    });

  let id = '';
  await t.test('propose: refusals, then the peer is told', async (t) => {
    const self = await propose(buyer.session, buyer.accountId);
    t.equal(self.status, 400);
    t.equal(self.body.error.code, 'VALIDATION_ERROR');
    const unknown = await propose(buyer.session, '0190b3c4-0000-7000-8000-000000000000');
    t.equal(unknown.status, 404);
    const tooMuch = await propose(buyer.session, seller.accountId, { requesterDiscountPct: '60' });
    t.equal(tooMuch.status, 400, 'a discount above 50% is refused');

    const asked = await propose(buyer.session, seller.accountId, {
      requesterDiscountPct: '25',
      termDays: 90,
      note: 'steady A2P traffic',
    });
    t.equal(asked.status, 201, JSON.stringify(asked.body));
    id = asked.body.data.id;
    t.match(asked.body.data, {
      role: 'requester',
      counterpartyId: seller.accountId,
      status: 'pending',
      proposedBy: 'requester',
      awaiting: 'peer',
      services: ['sms'],
      requesterDiscountPct: '25.00',
      peerDiscountPct: '0.00',
      termDays: 90,
      rounds: 1,
      activatedAt: null,
    });
    const again = await propose(seller.session, buyer.accountId, {
      services: ['voice'],
      requesterDiscountPct: '1',
      peerDiscountPct: '1',
    });
    t.equal(again.status, 409, 'one live interconnection per pair, whichever side asks');
    const told = await events(seller.accountId, 'interconnection.requested');
    t.equal(told.length, 1);
    t.match(told[0]!.data, { interconnectionId: id, counterpartyId: buyer.accountId, kind: 'request' });
    const listed = await api('GET', '/interconnections?role=peer&status=pending', seller.session);
    t.same(
      listed.body.data.map((x: { id: string; role: string }) => [x.id, x.role]),
      [[id, 'peer']],
    );
    t.equal(listed.body.hasMore, false);
    t.equal((await api('GET', '/interconnections?role=peer', buyer.session)).body.data.length, 0);
    const stranger = await h.signUp();
    t.equal((await api('GET', `/interconnections/${id}`, stranger.session)).status, 404, "not a stranger's");
  });

  await t.test('counter, turn taking, accept: the discount prices real messages', async (t) => {
    t.equal((await api('POST', `/interconnections/${id}/accept`, buyer.session)).status, 409, 'not its own proposal');
    const countered = await api('POST', `/interconnections/${id}/counter`, seller.session, {
      services: ['sms', 'voice'],
      requesterDiscountPct: '20',
      peerDiscountPct: '0',
      termDays: 30,
    });
    t.equal(countered.status, 200, JSON.stringify(countered.body));
    t.match(countered.body.data, {
      role: 'peer',
      status: 'pending',
      proposedBy: 'peer',
      awaiting: 'requester',
      services: ['sms', 'voice'],
      requesterDiscountPct: '20.00',
      rounds: 2,
    });
    t.match((await events(buyer.accountId, 'interconnection.requested'))[0]!.data, { kind: 'counter' });
    t.equal((await api('POST', `/interconnections/${id}/cancel`, buyer.session)).status, 409, 'not its proposal');

    const before = await sendSms('+12025550101');
    t.equal(before.cost, '0.010500', 'deck price while pending');
    const pending = await api('GET', `/interconnections/${id}/prices?number=12025550101&type=sms`, buyer.session);
    t.match(pending.body.data, { status: 'pending', inForce: false, routes: [] });

    const accepted = await api('POST', `/interconnections/${id}/accept`, buyer.session);
    t.equal(accepted.status, 200, JSON.stringify(accepted.body));
    t.equal(accepted.body.data.status, 'active');
    const days = (Date.parse(accepted.body.data.validUntil) - Date.parse(accepted.body.data.activatedAt)) / 86_400_000;
    t.equal(days, 30);
    t.match((await events(seller.accountId, 'interconnection.accepted'))[0]!.data, { interconnectionId: id });
    t.equal((await api('POST', `/interconnections/${id}/decline`, seller.session)).status, 409, 'decided');

    const quoted = await api('GET', `/interconnections/${id}/prices?number=%2B12025550102&type=sms`, buyer.session);
    t.match(quoted.body.data, {
      inForce: true,
      discountPct: '20.00',
      routes: [{ routeId: w.routeId, matchedPrefix: '1', sellerRate: '0.008000', price: '0.008500' }],
    });
    const quotedVoice = await api('GET', `/interconnections/${id}/prices?number=442071234567`, buyer.session);
    // 0.012345 less 20% is 0.009876; plus the 0.002000 fee a minute.
    t.match(quotedVoice.body.data.routes, [{ routeId: voiceId, sellerRate: '0.009876', price: '0.011876' }]);
    const sellerSide = await api('GET', `/interconnections/${id}/prices?number=12025550102&type=sms`, seller.session);
    t.match(sellerSide.body.data, { discountPct: '0.00', routes: [] }, 'the seller bought nothing of the buyer');

    const balance = (await w.balance(buyer.accountId)).balance;
    const sent = await sendSms('+12025550103');
    t.equal(sent.cost, '0.008500', 'the agreed price');
    t.same(await cdrOf(sent.to), { buyerCost: '0.008500', sellerCredit: '0.008000' });
    const after = await eventually(async () => {
      const b = await w.balance(buyer.accountId);
      return b.held === '0.000000' ? b : null;
    });
    t.equal(after.balance, (Number(balance) - 0.0085).toFixed(6));
    t.same(await cdrOf(before.to), { buyerCost: '0.010500', sellerCredit: '0.010000' }, 'earlier at the deck');
  });

  await t.test('suspend, resume, terminate', async (t) => {
    const suspended = await api('POST', `/interconnections/${id}/suspend`, seller.session, { reason: 'audit' });
    t.equal(suspended.status, 200, JSON.stringify(suspended.body));
    t.match(suspended.body.data, { status: 'suspended', suspendedBy: 'peer' });
    t.match((await events(buyer.accountId, 'interconnection.suspended'))[0]!.data, { reason: 'audit' });
    t.equal((await sendSms('+12025550104')).cost, '0.010500', 'deck price while suspended');
    t.equal(
      (await api('POST', `/interconnections/${id}/resume`, buyer.session)).status,
      409,
      'only the side that suspended resumes',
    );
    const resumed = await api('POST', `/interconnections/${id}/resume`, seller.session);
    t.match(resumed.body.data, { status: 'active', suspendedBy: null });
    t.equal((await events(buyer.accountId, 'interconnection.resumed')).length, 1);
    t.equal((await sendSms('+12025550105')).cost, '0.008500');

    const ended = await api('POST', `/interconnections/${id}/terminate`, buyer.session, { reason: 'moving traffic' });
    t.match(ended.body.data, { status: 'terminated', endedBy: 'requester', endReason: 'moving traffic' });
    t.match((await events(seller.accountId, 'interconnection.ended'))[0]!.data, { reason: 'terminated' });
    t.equal((await sendSms('+12025550106')).cost, '0.010500', 'deck price once ended');
    t.equal((await api('POST', `/interconnections/${id}/suspend`, seller.session)).status, 409);

    // Ended, the pair may agree again; a proposal can be withdrawn or declined.
    const next = await propose(seller.session, buyer.accountId, {
      services: ['voice'],
      requesterDiscountPct: '0',
      peerDiscountPct: '10',
    });
    t.equal(next.status, 201);
    const cancelled = await api('POST', `/interconnections/${next.body.data.id}/cancel`, seller.session);
    t.match(cancelled.body.data, { status: 'cancelled', endedBy: 'requester' });
    const third = await propose(seller.session, buyer.accountId, {
      services: ['voice'],
      requesterDiscountPct: '0',
      peerDiscountPct: '10',
      expiresInHours: 1,
    });
    const declined = await api('POST', `/interconnections/${third.body.data.id}/decline`, buyer.session, {
      reason: 'not now',
    });
    t.match(declined.body.data, { status: 'declined', endedBy: 'peer', endReason: 'not now' });
    t.match((await events(seller.accountId, 'interconnection.declined'))[0]!.data, { reason: 'not now' });

    const all = await api('GET', '/interconnections?limit=2', buyer.session);
    t.equal(all.body.data.length, 2);
    t.equal(all.body.hasMore, true);
    const rest = await api('GET', `/interconnections?limit=2&cursor=${all.body.nextCursor}`, buyer.session);
    t.same(
      rest.body.data.map((x: { id: string }) => x.id),
      [id],
    );
  });

  await t.test('the ledger stays balanced', async (t) => {
    await checkInvariants(t, h.sql);
  });
});
