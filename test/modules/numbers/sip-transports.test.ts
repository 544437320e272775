import t from 'tap';
import { parseSipTarget } from '../../../src/modules/numbers/manage.js';
import * as trunk from '../sip-trunks/world.js';
import { rentedNumber } from './rented.js';

t.test('a sip target names its transport as a SIP URI does', async (t) => {
  t.same(parseSipTarget('pbx.example.com'), { host: 'pbx.example.com', port: 5060, transport: 'udp' });
  t.same(parseSipTarget('sip:pbx.example.com:5080;transport=tcp'), {
    host: 'pbx.example.com',
    port: 5080,
    transport: 'tcp',
  });
  t.same(parseSipTarget('pbx.example.com;transport=TLS'), { host: 'pbx.example.com', port: 5061, transport: 'tls' });
  t.same(parseSipTarget('[2001:db8::1]:5062;transport=tls'), { host: '2001:db8::1', port: 5062, transport: 'tls' });
  t.equal(parseSipTarget('pbx.example.com;transport=sctp'), null, 'only udp, tcp and tls');
  t.equal(parseSipTarget('pbx.example.com:0'), null);
});

t.test('an inbound call is delivered to a number target over TCP, billed at the inbound rate', async (t) => {
  const w = await trunk.createWorld(t);
  const did = await rentedNumber(w, t, { first: 5558001, inboundRate: '0.012000' });
  const refused = await w.api('PUT', `/dids/${did.id}/routing`, w.operator.token, {
    pointMode: 'sip',
    pointsTo: '127.0.0.1:5070;transport=sctp',
  });
  t.equal(refused.status, 400, 'an unknown transport is refused');
  t.match(refused.body.error.details, [{ path: 'pointsTo' }]);

  const uas = await trunk.uasAnswer(t, did.digits, 't1');
  const set = await w.api('PUT', `/dids/${did.id}/routing`, w.operator.token, {
    pointMode: 'sip',
    pointsTo: `sip:127.0.0.1:${uas.port};transport=tcp`,
  });
  t.equal(set.status, 200, set.text);
  t.equal(set.body.data.pointsTo, `sip:127.0.0.1:${uas.port};transport=tcp`, 'kept as written');

  const run = await trunk.uac(
    t,
    w.sipPort,
    trunk.uacScenario('uac-tail-answer.xml', { HOLD_MS: '300' }, false),
    did.digits,
  );
  await trunk.expectExit(t, run, 'the seller trunk (UDP) completed the call');
  await trunk.expectExit(t, uas, 'the renter endpoint answered over TCP and got the BYE');
  const call = await trunk.eventually(async () => {
    const [c] = await w.d.sql<{ id: string; status: string; cost: string }[]>`
      select id, status, cost::text from calls where account_id = ${w.operator.accountId} and ended_at is not null`;
    return c;
  });
  t.match(call, { status: 'completed', cost: '0.012000' });
  const [cdr] = await w.d.sql<{ direction: string; buyerCost: string; sellerCredit: string }[]>`
    select direction, buyer_cost::text, seller_credit::text from cdrs where call_group_id = ${call.id}`;
  t.match(cdr, { direction: 'inbound', buyerCost: '0.012000', sellerCredit: '0.010800' });
  const [ev] = await w.d.sql<{ data: Record<string, unknown> }[]>`
    select data from events where account_id = ${w.operator.accountId} and event = 'number.call.received'`;
  t.match(ev?.data, { didId: did.id, callId: call.id, handledBy: 'sip', status: 'completed' });
});
