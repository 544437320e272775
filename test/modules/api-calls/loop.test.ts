import t from 'tap';
import { createWorld, loopingSupplier } from '../sip-trunks/world.js';

/**
 * An API-placed call whose supplier sends the INVITE back to the exchange: the exchange must
 * recognise its own INVITE (the trunk B2BUA's loop marker) and answer 482, instead of routing it
 * again as a new trunk call from a whitelisted address (a second leg, held and billed, per pass).
 */
t.test('POST /comms/calls to a supplier that loops back: 482 once, not a second call', async (t) => {
  const base = 43000 + (process.pid % 300) * 20;
  const w = await createWorld(t, { rtp: { port_min: base, port_max: base + 19, bind_address: '127.0.0.1' } });
  const { d, operator } = w;
  const relay = await loopingSupplier(t, w.sipPort);
  await w.route({ port: relay.port, prefix: '4415', rate: '0.010000' });
  // The looped INVITE comes from 127.0.0.1: whitelisted, it would be billed to the operator and routed again.
  t.equal((await w.api('POST', '/sip/trunk-ips', operator.token, { ip: '127.0.0.1' })).status, 201);
  const { secret } = await d.modules.services.keys.create(operator.accountId, { mode: 'live', scopes: ['voice:send'] });

  const res = await d.https('POST', '/comms/calls', {
    token: secret,
    headers: { 'x-idempotency-key': `loop-${process.pid}` },
    body: { to: '+441500000001', from: '+15550002222', maxDuration: 30, actions: [{ hangup: true }] },
  });
  t.equal(res.status, 200, res.text);
  t.match(res.json.data, { status: 'failed', sipResponseCode: 482 }, 'the looped INVITE was answered Loop Detected');
  t.equal(relay.invites(), 1, 'exactly one INVITE reached the supplier');
  const trunkCalls = await d.sql`select id from calls where account_id = ${operator.accountId} and source = 'trunk'`;
  t.same(trunkCalls, [], 'no trunk call was planned for the looped INVITE');
});
