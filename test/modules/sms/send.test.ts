import t from 'tap';
import { checkInvariants } from '../../ledger/helpers.js';
import { createSmsWorld, eventually } from './world.js';

/**
 * POST /comms/sms end to end against a Net::SMPP supplier SMSC on 127.0.0.1: delivered, failed and
 * refunded, refused and not charged, validation, insufficient balance, the test-key simulation,
 * GET /comms/sms/{id}, the history list and bulk sends; the money after each path.
 */
t.test('SMS through the REST API to a real SMSC', async (t) => {
  const w = await createSmsWorld(t);
  const { h, api, buyer, smsc } = w;
  const keys = h.services.keys;
  const newKey = async (mode: 'live' | 'test' = 'live', scopes: string[] | null = ['sms:send']) =>
    (await keys.create(buyer.accountId, { mode, ...(scopes ? { scopes } : {}) })).secret;
  const send = async (body: Record<string, unknown>, key?: string) =>
    api('POST', '/comms/sms', key ?? (await newKey()), body);
  const status = async (id: string) => (await api('GET', `/comms/sms/${id}`, buyer.session)).body.data;
  const events = async (id: string) =>
    (
      await h.sql<
        { event: string }[]
      >`select event from events where data->>'messageId' = ${id} order by created_at, event`
    ).map((e) => e.event);

  t.test('delivered: charged once, CDR written, sms.sent then sms.delivered', async (t) => {
    const r = await send({ to: '+12025550123', from: 'MyShop', message: 'Hello {world}' });
    t.equal(r.status, 200, JSON.stringify(r.body));
    const m = r.body.data;
    t.match(m, { to: '+12025550123', from: 'MyShop', status: 'sent', segments: 1, cost: '0.010500' });
    t.ok(Date.parse(m.submittedAt) > 0);
    t.same(
      m.network,
      { mccMnc: null, name: null, networkPriceApplied: false },
      'no network data for this range: the country price',
    );
    t.notOk('simulated' in m);
    const sub = await smsc.waitFor(/^SUBMIT 12025550123/);
    t.match(sub, /dc=0 esm=0 len=15 /, 'GSM-7 with escape pairs, data_coding 0 set by us');
    const done = await eventually(async () =>
      (await status(m.messageId)).status === 'delivered' ? status(m.messageId) : null,
    );
    t.same(
      done.timeline.map((x: { status: string }) => x.status),
      ['queued', 'sent', 'delivered'],
    );
    t.equal(done.routeReturnsReceipts, true);
    t.equal(done.routeId, w.routeId);
    t.same(await events(m.messageId), ['sms.sent', 'sms.delivered']);
    const b = await w.balance(buyer.accountId);
    t.equal(b.balance, '9.989500', '10 − 0.0105');
    t.equal(b.held, '0.000000', 'the hold is gone');
    const [cdr] = await h.sql<{ kind: string; segments: number; buyerCost: string; sellerCredit: string }[]>`
      select kind, segments, buyer_cost::text, seller_credit::text from cdrs where account_id = ${buyer.accountId}`;
    t.same(cdr, { kind: 'sms', segments: 1, buyerCost: '0.010500', sellerCredit: '0.010000' });
  });

  t.test('two segments are billed twice; delivered when both parts have receipts', async (t) => {
    const before = await w.balance(buyer.accountId);
    const r = await send({ to: '+12025550124', from: '447700900999', message: 'x'.repeat(161) });
    t.match(r.body.data, { status: 'sent', segments: 2, cost: '0.021000' });
    const done = await eventually(async () =>
      (await status(r.body.data.messageId)).status === 'delivered' ? true : null,
    );
    t.ok(done);
    t.equal(smsc.lines.filter((l) => l.startsWith('SUBMIT 12025550124')).length, 2, 'two wire parts');
    const after = await w.balance(buyer.accountId);
    t.equal(after.balance, (Number(before.balance) - 0.021).toFixed(6));
    const [parts] = await h.sql<
      { n: number }[]
    >`select count(*)::int as n from message_parts where message_id = ${r.body.data.messageId} and stat = 'DELIVRD'`;
    t.equal(parts!.n, 2);
  });

  t.test('failed receipt: UNDELIVERABLE, refunded with a refund entry, sms.failed', async (t) => {
    const before = await w.balance(buyer.accountId);
    const r = await send({ to: '+14440001234', from: 'MyShop', message: 'will not arrive' });
    t.match(r.body.data, { status: 'sent', cost: '0.010500' });
    const id = r.body.data.messageId as string;
    const done = await eventually(async () => ((await status(id)).status === 'failed' ? status(id) : null));
    t.equal(done.errorCode, 'UNDELIVERABLE');
    t.match(done.timeline[2], { status: 'failed', errorCode: 'UNDELIVERABLE' });
    t.same((await events(id)).sort(), ['sms.failed', 'sms.sent']);
    const after = await w.balance(buyer.accountId);
    t.equal(after.balance, before.balance, 'the whole charge came back');
    const refunds = await h.sql<{ amount: string }[]>`
      select amount::text from entries where owner_id = ${buyer.accountId} and type = 'refund'`;
    t.same(
      refunds.map((x) => x.amount).sort(),
      ['0.000500', '0.010000'],
      'the seller part and the platform fee, each reversed',
    );
  });

  t.test('refused by the route: failed SELLER_REJECTED, not charged, hold released', async (t) => {
    const before = await w.balance(buyer.accountId);
    const r = await send({ to: '+19990001234', from: 'MyShop', message: 'refuse me' });
    t.equal(r.status, 200);
    t.match(r.body.data, { status: 'failed', cost: '0.000000', errorCode: 'SELLER_REJECTED' });
    const after = await w.balance(buyer.accountId);
    t.equal(after.balance, before.balance);
    t.equal(after.held, '0.000000');
    t.same(await events(r.body.data.messageId), ['sms.failed']);
    const s = await status(r.body.data.messageId);
    t.same(
      s.timeline.map((x: { status: string }) => x.status),
      ['queued', 'failed'],
    );
  });

  t.test('validation and balance refusals', async (t) => {
    const cases: [Record<string, unknown>, string][] = [
      [{ to: '12ab', from: 'MyShop', message: 'x' }, 'to'],
      [{ to: '+12025550123', from: 'ABCDEFGHIJKL', message: 'x' }, 'from'],
      [{ to: '+12025550123', from: '1234567890123456', message: 'x' }, 'from'],
    ];
    for (const [body, path] of cases) {
      const r = await send(body);
      t.equal(r.status, 400, path);
      t.equal(r.body.error.code, 'VALIDATION_ERROR');
      t.match(r.body.error.details, [{ path }]);
    }
    t.equal((await send({ to: '+12025550123', from: 'x', message: '' })).status, 400, 'empty message');
    t.equal(
      (await send({ to: '+12025550123', from: 'x', message: 'y'.repeat(1601) })).status,
      400,
      'over 1,600 characters',
    );
    const noRoute = await send({ to: '+33612345678', from: 'MyShop', message: 'x' });
    t.equal(noRoute.status, 400);
    t.match(noRoute.body.error.message, /route/);
    const voiceOnly = await newKey('live', ['voice:send']);
    t.equal(
      (await send({ to: '+12025550123', from: 'MyShop', message: 'x' }, voiceOnly)).status,
      403,
      'scope sms:send',
    );

    const poor = await h.signUp();
    const bought = await api('POST', '/purchases', poor.session, { routeId: w.routeId });
    t.equal(bought.status, 201);
    const key = (await keys.create(poor.accountId, { mode: 'live', scopes: ['sms:send'] })).secret;
    const r = await api('POST', '/comms/sms', key, { to: '+12025550123', from: 'MyShop', message: 'x' });
    t.equal(r.status, 400);
    t.equal(r.body.error.code, 'VALIDATION_ERROR');
    t.match(r.body.error.message, /^Insufficient balance/);
    const [n] = await h.sql<
      { n: number }[]
    >`select count(*)::int as n from messages where account_id = ${poor.accountId}`;
    t.equal(n!.n, 0, 'nothing recorded for a refused send');
  });

  t.test('a test key simulates: no traffic, test credit only, simulated: true', async (t) => {
    await h.services.ledger.grantTestCredit({
      postingKey: `tc-${buyer.accountId}`,
      accountId: buyer.accountId,
      amount: '1.000000',
    });
    const before = await w.balance(buyer.accountId);
    const key = await newKey('test', null);
    const r = await api('POST', '/comms/sms', key, { to: '+12025550177', from: 'MyShop', message: 'simulated' });
    t.equal(r.status, 200, JSON.stringify(r.body));
    t.match(r.body.data, { status: 'sent', simulated: true, cost: '0.010500', segments: 1 });
    const after = await w.balance(buyer.accountId);
    t.equal(after.balance, before.balance, 'live balance untouched');
    t.equal(after.testCredit, '0.989500');
    t.notOk(
      smsc.lines.some((l) => l.startsWith('SUBMIT 12025550177')),
      'nothing reached the SMSC',
    );
    const s = await status(r.body.data.messageId);
    t.equal(s.simulated, true);
  });

  t.test('bulk: each recipient on its own', async (t) => {
    const before = await w.balance(buyer.accountId);
    const r = await api('POST', '/comms/sms/bulk', await newKey(), {
      to: ['+12025550130', 'bad', '+19990000001', '+12025550131'],
      from: 'MyShop',
      message: 'bulk hello',
    });
    t.equal(r.status, 200, JSON.stringify(r.body));
    const d = r.body.data;
    t.match(d, { total: 4, sent: 2, failed: 2 });
    t.match(d.results, [
      { to: '+12025550130', success: true, status: 'sent', cost: '0.010500' },
      { to: 'bad', success: false, error: { code: 'VALIDATION_ERROR' } },
      { to: '+19990000001', success: false, status: 'failed', error: { code: 'SELLER_REJECTED' } },
      { to: '+12025550131', success: true, status: 'sent' },
    ]);
    const after = await w.balance(buyer.accountId);
    t.equal(after.balance, (Number(before.balance) - 0.021).toFixed(6), 'two charged, the refused one not');
    t.equal(
      (
        await api('POST', '/comms/sms/bulk', await newKey(), {
          to: Array.from({ length: 1001 }, () => '+12025550130'),
          from: 'x',
          message: 'y',
        })
      ).status,
      400,
      'over 1,000 recipients',
    );
  });

  t.test('GET /comms/sms: full-access history of message entries; others see 404', async (t) => {
    const full = await newKey('live', null);
    const page = await api('GET', '/comms/sms?limit=3', full);
    t.equal(page.status, 200, JSON.stringify(page.body));
    t.equal(page.body.data.length, 3);
    t.equal(page.body.hasMore, true);
    t.ok(page.body.data.every((e: { relatedEntityType: string }) => e.relatedEntityType === 'api_sms'));
    const next = await api('GET', `/comms/sms?limit=100&cursor=${page.body.nextCursor}`, full);
    t.ok(next.body.data.length > 0);
    t.ok(next.body.data.every((e: { id: string }) => e.id < page.body.nextCursor));
    t.equal((await api('GET', '/comms/sms', await newKey())).status, 403, 'a scoped key is not full access');
    const [one] = await h.sql<{ id: string }[]>`select id from messages where account_id = ${buyer.accountId} limit 1`;
    const stranger = await h.signUp();
    t.equal((await api('GET', `/comms/sms/${one!.id}`, stranger.session)).status, 404);
  });

  t.test('ledger invariants hold after every path', async (t) => {
    const [open] = await h.sql<{ n: number }[]>`select count(*)::int as n from holds where status = 'open'`;
    t.equal(open!.n, 0, 'no hold left open');
    await checkInvariants(t, h.sql);
  });
});
