import t from 'tap';
import { createSmsWorld, eventually } from '../sms/world.js';

/** An SMS campaign through a Net::SMPP supplier: each message submitted once, DNC never messaged, money exact. */
t.test('an SMS campaign sends through the supplier bind', async (t) => {
  const w = await createSmsWorld(t);
  const { h, smsc, buyer } = w;
  const runner = h.services.dialer.runner;
  runner.start();
  t.teardown(() => runner.stop());
  const api = (method: string, url: string, body?: unknown) => w.api(method, url, buyer.session, body);

  const tpl = await api('POST', '/dialer/templates', { name: 'Greeting', body: 'Hi {{name}}, your parcel is here' });
  t.equal(tpl.status, 201);
  t.equal(tpl.body.data.body, 'Hi {{name}}, your parcel is here', 'placeholders stored as written');
  const created = await api('POST', '/dialer/campaigns', {
    name: 'Parcels',
    routeId: w.routeId,
    kind: 'sms',
    concurrency: 2,
    messageBody: tpl.body.data.body,
    senderId: 'MyShop',
  });
  t.equal(created.status, 201, JSON.stringify(created.body));
  const id = created.body.data.id as string;
  const numbers = ['+12025550101', '+12025550102', '+12025550103', '+12025550104', '+12025550105'];
  const list = await api('POST', '/dialer/contact-lists', { name: 'Customers', numbers });
  t.equal(list.status, 201);
  t.equal(list.body.data.count, 5);
  const added = await api('POST', `/dialer/campaigns/${id}/numbers`, { contactListId: list.body.data.id });
  t.match(added.body.data, { added: 5, totalNumbers: 5 });
  t.equal((await api('POST', '/dnc', { numbers: ['+12025550103'] })).status, 200);

  const start = await api('POST', `/dialer/campaigns/${id}/control`, { action: 'start' });
  t.equal(start.body.data.status, 'running', JSON.stringify(start.body));
  const done = await eventually(async () => {
    const r = await api('GET', `/dialer/campaigns/${id}`);
    return r.body.data.status === 'completed' ? r.body.data : null;
  }, 30_000);
  t.match(done, { numbersDialed: 4, numbersAnswered: 4, numbersFailed: 1, spent: '0.042000' });
  for (const n of ['12025550101', '12025550102', '12025550104', '12025550105']) {
    await smsc.waitFor(new RegExp(`^SUBMIT ${n}`));
  }
  t.equal(smsc.lines.filter((l) => l.startsWith('SUBMIT ')).length, 4, 'four messages submitted, once each');
  t.notOk(
    smsc.lines.some((l) => l.startsWith('SUBMIT 12025550103')),
    'the listed number was never messaged',
  );
  const b = await w.balance(buyer.accountId);
  t.equal(b.balance, '9.958000', '10 − 4 × 0.0105');
  const results = await api('GET', `/dialer/campaigns/${id}/results`);
  t.same(
    results.body.data.map((r: { status: string; cost: string }) => [r.status, r.cost]),
    Array(4).fill(['sent', '0.010500']),
  );
});
