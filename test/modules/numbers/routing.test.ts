import { randomUUID } from 'node:crypto';
import t from 'tap';
import { freePort, optionsUas, sipp } from '../../telephony/sip/sipp.js';
import { expectExit } from '../sip-trunks/world.js';
import { startTestDaemon } from '../../helpers/daemon.js';
import { account, api, numbers } from './world.js';

t.test('routing, OPTIONS reachability through the outbound guard, label, agent, CLI list, release', async (t) => {
  const d = await startTestDaemon(t, { numbers: { endpoint_probe_timeout_ms: 500 } });
  const seller = await account(d, 'seller@example.com');
  const buyer = await account(d, 'buyer@example.com');
  const { numbers: svc, ledger } = d.modules.services;
  const stock = await svc.inventory.importItems(seller.id, true, numbers(2), (i) => `items[${i}]`);
  const cat = await api(d, 'GET', '/dids/catalog', buyer.key);
  const g = cat.json.data.groups.find((x: { groupId: string }) => x.groupId === stock.groups[0]!.groupId);
  await ledger.topup({ accountId: buyer.id, amount: '10', source: 'card', postingKey: 'c' });
  const did = (await api(d, 'POST', '/dids/buy', buyer.key, { groupId: g.groupId, skuId: g.skus[0].skuId })).json.data;
  await svc.orders.settled();
  const route = (body: unknown) => api(d, 'PUT', `/dids/${did.id}/routing`, buyer.key, body);

  // Targets a customer aims pass the outbound guard; forward takes E.164.
  const priv = await route({ pointMode: 'sip', pointsTo: '10.1.2.3:5060' });
  t.equal(priv.status, 400);
  t.match(priv.json.error.details, [{ path: 'pointsTo', message: /private/ }]);
  const meta = await route({ pointMode: 'sip', pointsTo: '127.0.0.1:5060', pointsToBackup: '169.254.169.254' });
  t.match(meta.json.error.details, [{ path: 'pointsToBackup' }], 'link-local metadata address refused');
  t.equal((await route({ pointMode: 'sip' })).status, 400, 'sip needs a target');
  t.equal((await route({ pointMode: 'sip', pointsTo: 'bad host:99999' })).status, 400);
  t.equal((await route({ pointMode: 'forward', pointsTo: 'call me' })).status, 400);
  t.equal((await route({ pointMode: 'unrouted', pointsTo: '+447700900123' })).status, 400);
  const fwd = await route({ pointMode: 'forward', pointsTo: '+447700900123', pointsToBackup: '447700900124' });
  t.equal(fwd.status, 200, JSON.stringify(fwd.json));
  t.match(fwd.json.data, { pointMode: 'forward', pointsTo: '447700900123', pointsToBackup: '447700900124' });
  t.equal((await api(d, 'POST', `/dids/${did.id}/check-endpoint`, buyer.key)).status, 400, 'only sip targets');

  // A real SIP endpoint answering OPTIONS, a silent one and a sick one.
  const healthy = await sipp(t, optionsUas(200), [], { calls: 1 });
  const silent = await freePort();
  const up = await route({
    pointMode: 'sip',
    pointsTo: `127.0.0.1:${silent}`,
    pointsToBackup: `127.0.0.1:${healthy.port}`,
  });
  t.equal(up.status, 200, JSON.stringify(up.json));
  t.equal(up.json.data.endpointReachable, null, 'not checked yet');
  const checked = await api(d, 'POST', `/dids/${did.id}/check-endpoint`, buyer.key);
  t.equal(checked.status, 200, JSON.stringify(checked.json));
  t.match(checked.json.data, { endpointReachable: true, endpointCause: null });
  t.ok(checked.json.data.endpointCheckedAt);
  await expectExit(t, healthy, 'the backup answered one OPTIONS');

  const sick = await sipp(t, optionsUas(503), [], { calls: 1 });
  await route({ pointMode: 'sip', pointsTo: `127.0.0.1:${sick.port}` });
  const down = await api(d, 'POST', `/dids/${did.id}/check-endpoint`, buyer.key);
  t.match(down.json.data, { endpointReachable: false, endpointCause: 'sip_503' });
  await expectExit(t, sick, 'the sick endpoint answered one OPTIONS');
  await route({ pointMode: 'sip', pointsTo: `127.0.0.1:${silent}` });
  const quiet = await api(d, 'POST', `/dids/${did.id}/check-endpoint`, buyer.key);
  t.match(quiet.json.data, { endpointReachable: false, endpointCause: 'timeout' });

  // Label, AI agent, caller-ID list.
  const labelled = await api(d, 'PUT', `/dids/${did.id}/label`, buyer.key, { label: 'Support line' });
  t.equal(labelled.json.data.label, 'Support line');
  t.equal((await api(d, 'PUT', `/dids/${did.id}/label`, buyer.key, { label: 'x'.repeat(61) })).status, 400);
  const agentId = '01a21326-0000-7000-8000-00000000a9e7';
  const agent = await api(d, 'PUT', `/dids/${did.id}/ai-agent`, buyer.key, { aiAgentId: agentId });
  t.equal(agent.json.data.aiAgentId, agentId);
  t.equal((await api(d, 'PUT', `/dids/${did.id}/ai-agent`, buyer.key, { aiAgentId: 'agent-1' })).status, 400);
  const cli = await api(d, 'GET', '/dids/cli-eligible', buyer.key);
  t.same(cli.json.data, [
    {
      id: did.id,
      cli: cli.json.data[0].number.slice(1),
      number: cli.json.data[0].number,
      country: 'United Kingdom',
      countryCode: 'GB',
      city: 'London',
      didType: 'Local',
      channels: 2,
      label: 'Support line',
    },
  ]);
  t.match(cli.json.data[0].cli, /^4420\d{7}$/);

  // Into the dialer's caller-ID sets: a new set, then the same number again into it (kept once).
  const made = await api(d, 'POST', '/dids/to-cli-set', buyer.key, { all: true, name: 'Owned numbers' });
  t.equal(made.status, 201, JSON.stringify(made.json));
  t.same(made.json.data, {
    cliSetId: made.json.data.cliSetId,
    name: 'Owned numbers',
    added: 1,
    clis: [cli.json.data[0].number],
  });
  const again = await api(d, 'POST', '/dids/to-cli-set', buyer.key, {
    didIds: [did.id],
    cliSetId: made.json.data.cliSetId,
  });
  t.equal(again.status, 201, JSON.stringify(again.json));
  t.same(again.json.data.clis, [cli.json.data[0].number], 'a caller ID is kept once');
  const sets = await api(d, 'GET', '/dialer/cli-sets', buyer.key);
  t.match(sets.json.data, [{ id: made.json.data.cliSetId, name: 'Owned numbers', clis: cli.json.data[0].number }]);
  const notMine = await api(d, 'POST', '/dids/to-cli-set', buyer.key, { didIds: [randomUUID()] });
  t.equal(notMine.status, 400);
  t.match(notMine.json.error.details, [{ path: 'didIds/0', message: 'not an active number of yours' }]);
  t.equal((await api(d, 'POST', '/dids/to-cli-set', buyer.key, { all: true, didIds: [did.id] })).status, 400);

  // Scopes: a read-only key cannot route.
  const ro = (await d.modules.services.keys.create(buyer.id, { mode: 'live', scopes: ['numbers:read'] })).secret;
  const refused = await api(d, 'PUT', `/dids/${did.id}/routing`, ro, { pointMode: 'unrouted' });
  t.equal(refused.status, 403);
  t.match(refused.json.error.message, /numbers:write/);
  t.equal((await api(d, 'GET', `/dids/${did.id}`, ro)).status, 200);

  // Release: no refund, the number back on sale, routing cleared.
  const before = (await ledger.balanceOf(buyer.id)).balance;
  const released = await api(d, 'POST', `/dids/${did.id}/release`, buyer.key);
  t.equal(released.status, 200);
  t.match(released.json.data, { status: 'released', pointMode: 'unrouted', pointsTo: null, nextRenewalAt: null });
  t.equal((await ledger.balanceOf(buyer.id)).balance, before);
  t.equal((await api(d, 'POST', `/dids/${did.id}/release`, buyer.key)).status, 400, 'already released');
  t.equal((await route({ pointMode: 'unrouted' })).status, 400);
  t.same((await api(d, 'GET', '/dids/cli-eligible', buyer.key)).json.data, []);
  const [back] = await d.sql<{ n: number }[]>`select count(*)::int as n from did_numbers where state = 'available'`;
  t.equal(back?.n, 2);
});
