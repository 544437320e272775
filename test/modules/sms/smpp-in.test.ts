import t from 'tap';
import pino from 'pino';
import { parseReceiptText, SMPP_STATUS } from '../../../src/messaging/index.js';
import { systemClock } from '../../../src/platform/clock.js';
import { createCustomerSmpp, ESME_X_NO_CREDIT } from '../../../src/modules/sms/smpp-in.js';
import { connectPeer } from '../../messaging/smpp-peer.js';
import { checkInvariants } from '../../ledger/helpers.js';
import { createSmsWorld, eventually } from './world.js';

/**
 * A customer binds to our SMPP server (an ESME on the `smpp` package), submits through the same
 * send path as the API to the Net::SMPP supplier SMSC, and gets receipts back as deliver_sm:
 * delivered, failed (refunded), refused (ESME_RSUBMITFAIL, not charged), no credit.
 */
t.test('customer SMPP in, supplier SMPP out, receipts back', async (t) => {
  const w = await createSmsWorld(t);
  const { h, buyer } = w;
  const creds = await h.services.smppCredentials.issue(buyer.accountId, { throughput: 0 });
  const server = createCustomerSmpp({
    sql: h.sql,
    clock: systemClock,
    log: pino({ level: 'silent' }),
    sms: h.services.sms,
    credentials: h.services.smppCredentials,
    host: '127.0.0.1',
    port: 0,
    tlsPort: null,
    tls: null,
  });
  const { port } = await server.start();
  t.teardown(() => server.stop());

  const bad = await connectPeer(port!);
  t.teardown(() => bad.close());
  t.equal(
    (await bad.request('bind_transceiver', { system_id: creds.systemId, password: 'wrong' })).command_status,
    SMPP_STATUS.ESME_RBINDFAIL,
  );

  const p = await connectPeer(port!);
  t.teardown(() => p.close());
  t.equal(
    (await p.request('bind_transceiver', { system_id: creds.systemId, password: creds.password })).command_status,
    0,
  );
  const submit = (to: string, text: string) =>
    p.request('submit_sm', {
      source_addr_ton: 5,
      source_addr: 'MyShop',
      destination_addr: to,
      data_coding: 0,
      registered_delivery: 1,
      short_message: Buffer.from(text, 'latin1'),
    });

  const ok = await submit('12025550160', 'Hello SMPP');
  t.equal(ok.command_status, 0);
  const id = ok['message_id'] as string;
  const dlr = await p.nextPdu('deliver_sm');
  p.session.send(dlr.response());
  t.equal(dlr['esm_class'], 4);
  t.equal(dlr['receipted_message_id'], id);
  t.match(parseReceiptText((dlr['short_message'] as Buffer).toString('latin1')), { id, stat: 'DELIVRD' });
  const [m] = await h.sql<
    { source: string; status: string; cost: string }[]
  >`select source, status, cost::text from messages where id = ${id}`;
  t.same(m, { source: 'smpp', status: 'delivered', cost: '0.010500' });
  const [entry] = await h.sql<{ relatedEntityType: string }[]>`
    select related_entity_type from entries where related_entity_id = ${id} and owner_id = ${buyer.accountId} and type = 'charge'`;
  t.equal(entry!.relatedEntityType, 'smpp_sms', 'history entry marked smpp_sms');
  const evs = await h.sql<
    { event: string }[]
  >`select event from events where data->>'messageId' = ${id} order by event`;
  t.same(
    evs.map((e) => e.event),
    ['sms.delivered', 'sms.dlr', 'sms.sent'],
  );

  // Concatenated input (UDH, two parts): the first part's id gets its own receipt, then the message's.
  const part = (seq: number, text: string) =>
    p.request('submit_sm', {
      source_addr_ton: 5,
      source_addr: 'MyShop',
      destination_addr: '12025550162',
      data_coding: 0,
      registered_delivery: 1,
      esm_class: 0x40,
      short_message: Buffer.concat([Buffer.from([5, 0, 3, 0x2a, 2, seq]), Buffer.from(text, 'latin1')]),
    });
  const p1 = await part(1, 'Hello ');
  const p2 = await part(2, 'in two parts');
  t.equal(p1.command_status, 0);
  t.equal(p2.command_status, 0);
  t.not(p1['message_id'], p2['message_id']);
  const got: string[] = [];
  for (let i = 0; i < 2; i++) {
    const d = await p.nextPdu('deliver_sm');
    p.session.send(d.response());
    t.match(parseReceiptText((d['short_message'] as Buffer).toString('latin1')), { stat: 'DELIVRD' });
    got.push(d['receipted_message_id'] as string);
  }
  t.same(got, [p1['message_id'], p2['message_id']], 'a receipt for each part id, the message id last');

  const before = await w.balance(buyer.accountId);
  const undeliv = await submit('14440009999', 'Never');
  t.equal(undeliv.command_status, 0);
  const dlr2 = await p.nextPdu('deliver_sm');
  p.session.send(dlr2.response());
  t.equal(dlr2['receipted_message_id'], undeliv['message_id']);
  t.match(parseReceiptText((dlr2['short_message'] as Buffer).toString('latin1')), { stat: 'UNDELIV' });
  await eventually(async () => (await w.balance(buyer.accountId)).balance === before.balance);

  const refused = await submit('19990009999', 'Refuse');
  t.equal(refused.command_status, SMPP_STATUS.ESME_RSUBMITFAIL);
  t.equal((await w.balance(buyer.accountId)).balance, before.balance, 'a refusal is not charged');
  t.equal((await submit('33612345678', 'No route')).command_status, SMPP_STATUS.ESME_RINVDSTADR);

  const poor = await h.signUp();
  t.equal((await w.api('POST', '/purchases', poor.session, { routeId: w.routeId })).status, 201);
  const poorCreds = await h.services.smppCredentials.issue(poor.accountId);
  const pp = await connectPeer(port!);
  t.teardown(() => pp.close());
  t.equal(
    (await pp.request('bind_transmitter', { system_id: poorCreds.systemId, password: poorCreds.password }))
      .command_status,
    0,
  );
  const nc = await pp.request('submit_sm', {
    source_addr: 'MyShop',
    destination_addr: '12025550161',
    short_message: Buffer.from('x'),
  });
  t.equal(nc.command_status, ESME_X_NO_CREDIT, 'insufficient balance: the documented vendor status');

  const [open] = await h.sql<{ n: number }[]>`select count(*)::int as n from holds where status = 'open'`;
  t.equal(open!.n, 0);
  await checkInvariants(t, h.sql);
});
