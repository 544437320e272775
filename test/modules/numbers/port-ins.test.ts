import t from 'tap';
import { NotificationKinds } from '../../../src/modules/notifications/kinds.js';
import { startTestDaemon } from '../../helpers/daemon.js';
import { account, api } from './world.js';

const order = (numbers: string[], extra: Record<string, unknown> = {}) => ({
  numbers,
  losingCarrier: 'Old Telco Ltd',
  carrierAccountNumber: 'ACC-99812',
  carrierPin: '4321',
  authorizedName: 'Ada Lovelace',
  documentsRef: 'loa-2026-11.pdf',
  desiredDate: '2026-12-15',
  ...extra,
});

t.test('port-in orders: submitted → in_review → approved → completed, cancel, refusals, events', async (t) => {
  const d = await startTestDaemon(t);
  const buyer = await account(d, 'porter@example.com');
  const other = await account(d, 'other-porter@example.com');
  const op = await account(d, 'port-operator@example.com', { operator: true });

  const created = await api(d, 'POST', '/dids/port-ins', buyer.key, order(['+442071230001', '442071230002']));
  t.equal(created.status, 201, JSON.stringify(created.json));
  const o = created.json.data;
  t.match(o, {
    status: 'submitted',
    numbers: ['442071230001', '442071230002'],
    losingCarrier: 'Old Telco Ltd',
    pinProvided: true,
    desiredDate: '2026-12-15',
    reviewedAt: null,
  });
  t.notOk('carrierPin' in o, 'the PIN is never shown back to the buyer');

  await t.test('refusals on create', async (t) => {
    const again = await api(d, 'POST', '/dids/port-ins', other.key, order(['442071230002']));
    t.equal(again.status, 409, 'a number in an open order');
    t.equal(again.json.error.code, 'CONFLICT');
    const twice = await api(d, 'POST', '/dids/port-ins', buyer.key, order(['442071230009', '+442071230009']));
    t.equal(twice.status, 400, 'a number listed twice');
    const bad = await api(d, 'POST', '/dids/port-ins', buyer.key, order(['12ab']));
    t.equal(bad.status, 400, 'not E.164');
  });

  await t.test('reads: own orders only', async (t) => {
    const list = await api(d, 'GET', '/dids/port-ins', buyer.key);
    t.same(
      list.json.data.map((x: { id: string }) => x.id),
      [o.id],
    );
    t.equal((await api(d, 'GET', `/dids/port-ins/${o.id as string}`, buyer.key)).json.data.id, o.id);
    t.equal((await api(d, 'GET', `/dids/port-ins/${o.id as string}`, other.key)).status, 404);
    t.equal((await api(d, 'POST', `/dids/port-ins/${o.id as string}/cancel`, other.key)).status, 404);
  });

  await t.test('the operator reviews and completes', async (t) => {
    t.equal((await api(d, 'GET', '/dids/port-ins/review-queue', buyer.key)).status, 403);
    t.equal((await api(d, 'POST', `/dids/port-ins/${o.id as string}/approve`, buyer.key, {})).status, 403);
    const queue = await api(d, 'GET', '/dids/port-ins/review-queue?status=submitted', op.key);
    t.match(queue.json.data, [{ id: o.id, accountId: buyer.id, carrierPin: '4321' }]);
    const reviewing = await api(d, 'POST', `/dids/port-ins/${o.id as string}/start-review`, op.key, {});
    t.equal(reviewing.json.data.status, 'in_review');
    const early = await api(d, 'POST', `/dids/port-ins/${o.id as string}/complete`, op.key, {});
    t.equal(early.status, 409, 'not approved yet');
    const approved = await api(d, 'POST', `/dids/port-ins/${o.id as string}/approve`, op.key, {
      note: 'FOC date agreed',
    });
    t.match(approved.json.data, { status: 'approved', reviewNote: 'FOC date agreed' });
    t.ok(approved.json.data.reviewedAt);
    t.equal((await api(d, 'POST', `/dids/port-ins/${o.id as string}/reject`, op.key, {})).status, 409);
    const done = await api(d, 'POST', `/dids/port-ins/${o.id as string}/complete`, op.key, {});
    t.equal(done.json.data.status, 'completed');
    t.ok(done.json.data.completedAt);
    t.same(await d.modules.services.numbers.portIns.ported(buyer.id), ['442071230001', '442071230002']);
    t.equal((await api(d, 'POST', `/dids/port-ins/${o.id as string}/cancel`, buyer.key)).status, 409, 'too late');
    const ported = await api(d, 'POST', '/dids/port-ins', other.key, order(['442071230001']));
    t.equal(ported.status, 409, 'a ported number is on the exchange');
  });

  await t.test('cancel and reject free the numbers', async (t) => {
    const second = await api(d, 'POST', '/dids/port-ins', buyer.key, order(['442071230005'], { carrierPin: null }));
    t.equal(second.json.data.pinProvided, false);
    const cancelled = await api(d, 'POST', `/dids/port-ins/${second.json.data.id as string}/cancel`, buyer.key);
    t.match(cancelled.json.data, { status: 'cancelled' });
    t.ok(cancelled.json.data.cancelledAt);
    const third = await api(d, 'POST', '/dids/port-ins', other.key, order(['442071230005']));
    t.equal(third.status, 201, 'the cancelled order no longer holds the number');
    const rejected = await api(d, 'POST', `/dids/port-ins/${third.json.data.id as string}/reject`, op.key, {
      note: 'Name does not match the carrier account',
    });
    t.match(rejected.json.data, { status: 'rejected', reviewNote: 'Name does not match the carrier account' });
    t.equal((await api(d, 'POST', '/dids/port-ins', buyer.key, order(['442071230005']))).status, 201);
  });

  const events = await d.sql<{ status: string; previous: string | null }[]>`
    select data->>'status' as status, data->>'previousStatus' as previous from events
    where account_id = ${buyer.id} and event = 'number.port_in.updated' and data->>'portInId' = ${o.id as string}
    order by id`;
  t.same(
    events.map((e) => [e.previous, e.status]),
    [
      [null, 'submitted'],
      ['submitted', 'in_review'],
      ['in_review', 'approved'],
      ['approved', 'completed'],
    ],
    'one event per step, in the transaction of the step',
  );
  // The in-app feed renders the step (the SQL list of feed events agrees: test/modules/notifications/kinds.test.ts).
  t.same(
    NotificationKinds['number.port_in.updated']!.render({ status: 'in_review', numbers: ['1', '2'], note: null }),
    {
      title: 'Port-in order in review',
      body: 'Your order to bring 2 number(s) in is now in review.',
    },
  );
});
