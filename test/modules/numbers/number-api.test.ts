import t from 'tap';
import { createManualClock } from '../../../src/platform/clock.js';
import { startTestDaemon } from '../../helpers/daemon.js';
import { account, api, numbers } from './world.js';

const MIN = 60_000;

t.test('holds, per-number settings, scheduled release, bulk changes, features and charges', async (t) => {
  const clock = createManualClock(new Date('2026-03-10T12:00:00Z'));
  const d = await startTestDaemon(t, {}, { clock });
  const { ledger, numbers: svc } = d.modules.services;
  const seller = await account(d, 'seller@example.com');
  const buyer = await account(d, 'buyer@example.com');
  const other = await account(d, 'other@example.com');
  // US numbers (CNAM applies): setup 1.000000 + month 1.250000 = 2.250000 an order.
  const stock = await svc.inventory.importItems(
    seller.id,
    true,
    numbers(3, {
      countryCode: 'US',
      country: 'United States',
      countryPrefix: '1',
      areaPrefix: '212',
      city: 'New York',
      setupPrice: '1.000000',
      monthlyPrice: '1.250000',
    }),
    (i) => `items[${i}]`,
  );
  const groupId = stock.groups[0]!.groupId;
  const [sku] = await d.sql<{ id: string }[]>`select id from did_skus where group_id = ${groupId}`;
  await ledger.topup({ accountId: buyer.id, amount: '10', source: 'card', postingKey: 'b' });
  const available = async () => {
    const s = await api(d, 'GET', `/dids/search?pattern=2837&match=starts_with`, buyer.key);
    return (s.json.data.hits as { id: string }[]).map((h) => h.id);
  };
  const hits = await available();
  t.equal(hits.length, 3);

  // Hold a chosen search hit: it leaves search; another account cannot hold it.
  const held = await api(d, 'POST', '/dids/reservations', buyer.key, { groupId, numberId: hits[1], minutes: 10 });
  t.equal(held.status, 201, JSON.stringify(held.json));
  t.match(held.json.data, { groupId, numberId: hits[1], status: 'held', expiresAt: '2026-03-10T12:10:00.000Z' });
  t.notOk((await available()).includes(hits[1]!), 'out of search while held');
  t.equal((await api(d, 'POST', '/dids/reservations', other.key, { groupId, numberId: hits[1] })).status, 409);
  t.equal((await api(d, 'POST', '/dids/reservations', buyer.key, { groupId, minutes: 999 })).status, 400);
  const mine = await api(d, 'GET', '/dids/reservations', buyer.key);
  t.same(
    mine.json.data.map((r: { id: string }) => r.id),
    [held.json.data.id],
  );
  t.same((await api(d, 'GET', '/dids/reservations', other.key)).json.data, []);

  // Cancel puts it back; a second hold expires and the sweep puts that back too.
  const cancelled = await api(d, 'DELETE', `/dids/reservations/${held.json.data.id}`, buyer.key);
  t.match(cancelled.json.data, { status: 'cancelled' });
  t.equal((await api(d, 'DELETE', `/dids/reservations/${held.json.data.id}`, buyer.key)).status, 404);
  t.equal((await available()).length, 3);
  const lapsing = await api(d, 'POST', '/dids/reservations', other.key, { groupId, minutes: 1 });
  t.equal((await available()).length, 2);
  clock.advance(2 * MIN);
  await svc.sweep();
  t.equal((await available()).length, 3, 'expired hold back on sale');
  const lapsed = await api(d, 'POST', `/dids/reservations/${lapsing.json.data.id}/buy`, other.key, { skuId: sku!.id });
  t.equal(lapsed.status, 404, 'an expired hold cannot be bought');

  // Buy through a hold: that exact number, charged as a purchase (10 - 2.25).
  const hold2 = await api(d, 'POST', '/dids/reservations', buyer.key, { groupId, numberId: hits[2] });
  const bought = await api(
    d,
    'POST',
    `/dids/reservations/${hold2.json.data.id}/buy`,
    buyer.key,
    { skuId: sku!.id },
    { 'x-idempotency-key': 'hold-buy' },
  );
  t.equal(bought.status, 201, JSON.stringify(bought.json));
  await svc.orders.settled();
  const didId = bought.json.data.id as string;
  const did = await api(d, 'GET', `/dids/${didId}`, buyer.key);
  t.equal(did.json.data.number, hold2.json.data.number, 'the held number');
  t.equal((await ledger.balanceOf(buyer.id)).balance, '7.750000');
  t.equal((await ledger.balanceOf(seller.id)).payable, '2.025000', '2.25 less the 10 % fee');
  t.match((await api(d, 'GET', '/dids/reservations', buyer.key)).json.data, []);

  // Tags, filtered in mine.
  const tagged = await api(d, 'PUT', `/dids/${didId}/tags`, buyer.key, { tags: ['sales', 'nyc', 'sales'] });
  t.same(tagged.json.data.tags, ['sales', 'nyc']);
  t.equal((await api(d, 'PUT', `/dids/${didId}/tags`, buyer.key, { tags: ['bad tag'] })).status, 400);
  t.equal((await api(d, 'GET', '/dids/mine?tag=nyc', buyer.key)).json.data.length, 1);
  t.equal((await api(d, 'GET', '/dids/mine?tag=paris', buyer.key)).json.data.length, 0);
  t.equal((await api(d, 'PUT', `/dids/${didId}/tags`, other.key, { tags: [] })).status, 404, 'not theirs');

  // Caller name (US number) and emergency address in the number's country.
  const cnam = await api(d, 'PUT', `/dids/${didId}/caller-name`, buyer.key, { callerName: 'ACME Sales' });
  t.equal(cnam.json.data.callerName, 'ACME Sales');
  t.equal((await api(d, 'PUT', `/dids/${didId}/caller-name`, buyer.key, { callerName: 'x'.repeat(16) })).status, 400);
  const address = {
    name: 'ACME Inc',
    street: '1 Main St',
    street2: null,
    city: 'New York',
    region: 'NY',
    postalCode: '10001',
    countryCode: 'US',
  };
  const e911 = await api(d, 'PUT', `/dids/${didId}/emergency-address`, buyer.key, address);
  t.same(e911.json.data.emergencyAddress, address);
  const wrong = await api(d, 'PUT', `/dids/${didId}/emergency-address`, buyer.key, { ...address, countryCode: 'GB' });
  t.equal(wrong.status, 400);
  t.match(wrong.json.error, { details: [{ path: /countryCode/ }] }, JSON.stringify(wrong.json));
  const features = await api(d, 'GET', `/dids/${didId}/features`, buyer.key);
  t.match(features.json.data, {
    status: 'active',
    voice: { inbound: false, channels: 2, inboundRatePerMinute: null, pointMode: 'unrouted' },
    sms: { inbound: true, outbound: true, inboundPrice: null },
    callerName: { supported: true, value: 'ACME Sales' },
    emergency: { addressSet: true },
    callerId: { usable: true },
  });
  const cleared = await api(d, 'DELETE', `/dids/${didId}/emergency-address`, buyer.key);
  t.equal(cleared.json.data.emergencyAddress, null);

  // Bulk: all or nothing over the caller's live numbers.
  const second = await api(d, 'POST', '/dids/buy', buyer.key, { groupId, skuId: sku!.id });
  await svc.orders.settled();
  const ids = [didId, second.json.data.id as string];
  const refused = await api(d, 'PATCH', '/dids/bulk', buyer.key, { didIds: [...ids, hits[0]], autoRenew: false });
  t.equal(refused.status, 400);
  t.match(refused.json.error, { details: [{ path: /didIds\/2/ }] }, JSON.stringify(refused.json));
  t.equal((await api(d, 'GET', `/dids/${didId}`, buyer.key)).json.data.autoRenew, true, 'nothing changed');
  const bulk = await api(d, 'PATCH', '/dids/bulk', buyer.key, { didIds: ids, autoRenew: false, label: 'Desk' });
  t.same(bulk.json.data, { updated: 2, didIds: ids });
  for (const id of ids)
    t.match((await api(d, 'GET', `/dids/${id}`, buyer.key)).json.data, { autoRenew: false, label: 'Desk' });

  // Scheduled release: cancelled once, then carried out by the sweep at its time.
  const at = '2026-03-12T09:00:00.000Z';
  const sched = await api(d, 'POST', `/dids/${didId}/scheduled-release`, buyer.key, { releaseAt: at });
  t.equal(sched.json.data.releaseAt, at);
  t.equal(
    (await api(d, 'POST', `/dids/${didId}/scheduled-release`, buyer.key, { releaseAt: '2020-01-01T00:00:00Z' })).status,
    400,
    'not in the past',
  );
  t.equal((await api(d, 'DELETE', `/dids/${didId}/scheduled-release`, buyer.key)).json.data.releaseAt, null);
  t.equal((await api(d, 'DELETE', `/dids/${didId}/scheduled-release`, buyer.key)).status, 400, 'none left');
  await api(d, 'POST', `/dids/${didId}/scheduled-release`, buyer.key, { releaseAt: at });
  clock.advance(MIN);
  await svc.sweep();
  t.equal((await api(d, 'GET', `/dids/${didId}`, buyer.key)).json.data.status, 'active', 'not yet');
  clock.set(new Date('2026-03-12T09:00:01Z'));
  await svc.sweep();
  const gone = await api(d, 'GET', `/dids/${didId}`, buyer.key);
  t.match(gone.json.data, { status: 'released', releasedAt: '2026-03-12T09:00:01.000Z' });
  const history = await api(d, 'GET', `/dids/${didId}/history`, buyer.key);
  const kinds = history.json.data.map((h: { kind: string }) => h.kind);
  t.match(kinds, ['released', 'release_scheduled', 'release_cancelled', 'release_scheduled']);
  t.match(history.json.data[0].data, { reason: 'scheduled' });
  const [evt] = await d.sql<{ data: { didId: string; reason: string } }[]>`
    select data from events where event = 'number.released'`;
  t.same(evt?.data, { didId, number: gone.json.data.number, reason: 'scheduled' }, 'number.released for the owner');

  // Charges: the order through the hold, to the sixth decimal.
  const charges = await api(d, 'GET', `/dids/${didId}/charges`, buyer.key);
  t.equal(charges.status, 200, JSON.stringify(charges.json));
  t.match(charges.json.data, { items: [{ kind: 'order', amount: '2.250000' }], total: '2.250000', truncated: false });
  t.ok(charges.json.data.items[0].transactionId, 'the ledger posting');
  const none = await api(d, 'GET', `/dids/${didId}/charges?to=2026-03-01T00:00:00Z`, buyer.key);
  t.same(none.json.data, { items: [], total: '0.000000', truncated: false });
});
