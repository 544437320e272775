import t from 'tap';
import { pino } from 'pino';
import { generate } from 'selfsigned';
import { createSmppServer } from '../../src/messaging/smpp-server.js';
import type { SmppAccount, SmppServerOptions, SmppSubmission } from '../../src/messaging/smpp-server.js';
import { STATUS } from '../../src/messaging/smpp-lib.js';
import { splitForWire } from '../../src/messaging/segments.js';
import { encodeGsm7 } from '../../src/messaging/gsm7.js';
import { parseReceiptText } from '../../src/messaging/receipt-text.js';
import { createManualClock } from '../../src/platform/clock.js';
import { connectPeer } from './smpp-peer.js';

const log = pino({ level: 'silent' });

async function startServer(t: { teardown(fn: () => unknown): void }, over: Partial<SmppServerOptions> = {}) {
  const submissions: Array<{ account: SmppAccount; s: SmppSubmission }> = [];
  let n = 0;
  const clock = createManualClock(new Date('2026-11-22T04:00:00Z'));
  const server = createSmppServer({
    port: 0,
    host: '127.0.0.1',
    tls: null,
    log,
    clock,
    idleTimeoutMs: 30_000,
    async authenticate(systemId, password) {
      if (systemId === 'acme' && password === 'secret') return { accountId: 'acc-1', throughputPerSecond: 0 };
      if (systemId === 'slow' && password === 'secret') return { accountId: 'acc-2', throughputPerSecond: 2 };
      return null;
    },
    async onSubmit(account, s) {
      submissions.push({ account, s });
      if (s.to === '000') return { commandStatus: STATUS.ESME_RINVDSTADR };
      return { messageId: `m${++n}` };
    },
    ...over,
  });
  const ports = await server.start();
  t.teardown(() => server.stop());
  return { server, ports, submissions, clock };
}

t.test('bind rules: bad credentials, submit before bind, receiver cannot submit, enquire_link', async (t) => {
  const { ports } = await startServer(t);
  const p = await connectPeer(ports.port as number);
  t.teardown(() => p.close());
  const early = await p.request('submit_sm', { destination_addr: '447700900123', short_message: Buffer.from('hi') });
  t.equal(early.command_status, STATUS.ESME_RINVBNDSTS, 'submit before bind');
  t.equal((await p.request('enquire_link')).command_status, 0, 'enquire_link answered before bind');
  const bad = await p.request('bind_transceiver', { system_id: 'acme', password: 'wrong' });
  t.equal(bad.command_status, STATUS.ESME_RBINDFAIL);
  await p.closed;
  t.pass('a failed bind closes the connection');
  const p2 = await connectPeer(ports.port as number);
  t.teardown(() => p2.close());
  const rx = await p2.request('bind_receiver', { system_id: 'acme', password: 'secret' });
  t.equal(rx.command_status, 0);
  const again = await p2.request('bind_transmitter', { system_id: 'acme', password: 'secret' });
  t.equal(again.command_status, STATUS.ESME_RALYBND);
  const sub = await p2.request('submit_sm', { destination_addr: '447700900123', short_message: Buffer.from('hi') });
  t.equal(sub.command_status, STATUS.ESME_RINVBNDSTS, 'receiver bind cannot submit');
  const unb = await p2.request('unbind');
  t.equal(unb.command_status, 0);
  await p2.closed;
});

t.test('submit: GSM-7, UCS-2, concatenated UDH and sar, message_payload, refusal', async (t) => {
  const { ports, submissions } = await startServer(t);
  const p = await connectPeer(ports.port as number);
  t.teardown(() => p.close());
  t.equal((await p.request('bind_transmitter', { system_id: 'acme', password: 'secret' })).command_status, 0);

  const r1 = await p.request('submit_sm', {
    source_addr_ton: 5,
    source_addr: 'Shop',
    destination_addr: '447700900123',
    data_coding: 0,
    registered_delivery: 1,
    short_message: encodeGsm7('Price {5€}'),
  });
  t.equal(r1.command_status, 0);
  t.equal(r1['message_id'], 'm1');
  t.match(submissions[0], {
    account: { accountId: 'acc-1' },
    s: { to: '447700900123', from: 'Shop', text: 'Price {5€}', parts: 1, registeredDelivery: 1, sourceTon: 5 },
  });

  await p.request('submit_sm', {
    destination_addr: '1',
    data_coding: 8,
    short_message: Buffer.from('0436d83dde00', 'hex'),
  });
  t.equal(submissions[1]?.s.text, 'ж😀');

  const long = 'Long message '.repeat(20);
  const parts = splitForWire(long, { reference: 42 });
  t.equal(parts.length, 2);
  const resps = [];
  for (const part of parts) {
    resps.push(
      await p.request('submit_sm', {
        destination_addr: '2',
        esm_class: part.esmClass,
        data_coding: part.dataCoding,
        short_message: part.shortMessage,
      }),
    );
  }
  t.equal(resps[0]?.command_status, 0, 'first part answered at once');
  t.equal(resps[1]?.['message_id'], 'm3', 'last part carries the message id');
  t.equal(submissions[2]?.s.text, long);
  t.equal(submissions[2]?.s.parts, 2);
  t.same(submissions[2]?.s.partMessageIds, [resps[0]?.['message_id']], 'earlier part id handed to onSubmit');

  await p.request('submit_sm', {
    destination_addr: '3',
    short_message: encodeGsm7('Hello '),
    sar_msg_ref_num: 500,
    sar_total_segments: 2,
    sar_segment_seqnum: 1,
  });
  await p.request('submit_sm', {
    destination_addr: '3',
    short_message: encodeGsm7('sar'),
    sar_msg_ref_num: 500,
    sar_total_segments: 2,
    sar_segment_seqnum: 2,
  });
  t.equal(submissions[3]?.s.text, 'Hello sar');

  await p.request('submit_sm', {
    destination_addr: '4',
    data_coding: 3,
    message_payload: Buffer.from('é'.repeat(300), 'latin1'),
  });
  t.equal(submissions[4]?.s.text, 'é'.repeat(300));

  const refused = await p.request('submit_sm', { destination_addr: '000', short_message: Buffer.from('x') });
  t.equal(refused.command_status, STATUS.ESME_RINVDSTADR, 'onSubmit commandStatus passed through');
  const baddcs = await p.request('submit_sm', {
    destination_addr: '5',
    data_coding: 4,
    short_message: Buffer.from([1]),
  });
  t.equal(baddcs.command_status, STATUS.ESME_RINVDCS);
});

t.test('per-bind throughput answers ESME_RTHROTTLED', async (t) => {
  const { ports, clock } = await startServer(t);
  const p = await connectPeer(ports.port as number);
  t.teardown(() => p.close());
  await p.request('bind_transceiver', { system_id: 'slow', password: 'secret' });
  const send = () => p.request('submit_sm', { destination_addr: '1', short_message: Buffer.from('x') });
  t.equal((await send()).command_status, 0);
  t.equal((await send()).command_status, 0);
  t.equal((await send()).command_status, STATUS.ESME_RTHROTTLED, 'third in one second throttled');
  clock.advance(500);
  t.equal((await send()).command_status, 0, 'one token back after half a second');
});

t.test('idle binds are closed with an unbind', async (t) => {
  const { ports } = await startServer(t, { idleTimeoutMs: 100 });
  const p = await connectPeer(ports.port as number);
  t.teardown(() => p.close());
  await p.request('bind_transmitter', { system_id: 'acme', password: 'secret' });
  const unbind = await p.nextPdu('unbind');
  t.equal(unbind.command, 'unbind');
  p.session.send(unbind.response());
  await p.closed;
  t.pass('closed');
});

t.test('framing error destroys the socket', async (t) => {
  const { ports } = await startServer(t);
  const p = await connectPeer(ports.port as number);
  t.teardown(() => p.close());
  p.session.socket.write(Buffer.from([0, 0, 0, 8, 0, 0, 0, 0]));
  await p.closed;
  t.pass('server closed the connection on a too-short command_length');
});

t.test('receipts: deliver_sm with TLVs, held while no receiver is bound', async (t) => {
  const { server, ports } = await startServer(t);
  const receipt = {
    messageId: 'm77',
    stat: 'DELIVRD' as const,
    submitDate: new Date('2026-11-22T04:05:00Z'),
    doneDate: new Date('2026-11-22T04:06:00Z'),
    to: '447700900123',
    from: 'Shop',
    text: 'Hello [there]',
  };
  t.equal(server.deliverReceipt('acc-1', receipt), 'queued');
  t.equal(server.queuedReceipts('acc-1'), 1);
  const tx = await connectPeer(ports.port as number);
  t.teardown(() => tx.close());
  await tx.request('bind_transmitter', { system_id: 'acme', password: 'secret' });
  t.equal(server.queuedReceipts('acc-1'), 1, 'a transmitter does not take receipts');
  const rx = await connectPeer(ports.port as number);
  t.teardown(() => rx.close());
  await rx.request('bind_transceiver', { system_id: 'acme', password: 'secret' });
  const dlr = await rx.nextPdu('deliver_sm');
  rx.session.send(dlr.response());
  t.equal(dlr['esm_class'], 4);
  t.equal(dlr['receipted_message_id'], 'm77');
  t.equal(dlr['message_state'], 2);
  t.equal(dlr['source_addr'], '447700900123');
  t.equal(dlr['destination_addr'], 'Shop');
  t.equal(dlr['dest_addr_ton'], 5, 'alphanumeric original sender keeps TON 5');
  const parsed = parseReceiptText((dlr['short_message'] as Buffer).toString('latin1'));
  t.match(parsed, { id: 'm77', stat: 'DELIVRD', text: 'Hello .there.' });
  t.equal(server.queuedReceipts('acc-1'), 0);

  t.equal(server.deliverReceipt('acc-1', { ...receipt, messageId: 'm78', stat: 'UNDELIV', err: '1' }), 'sent');
  const dlr2 = await rx.nextPdu('deliver_sm');
  t.equal(dlr2['message_state'], 5);
  rx.session.send(dlr2.response());
});

t.test('a concatenated message gets a receipt for every part id', async (t) => {
  const { server, ports } = await startServer(t);
  const rx = await connectPeer(ports.port as number);
  t.teardown(() => rx.close());
  await rx.request('bind_transceiver', { system_id: 'acme', password: 'secret' });
  server.deliverReceipt('acc-1', {
    messageId: 'm5',
    partMessageIds: ['p1'],
    stat: 'DELIVRD',
    submitDate: new Date(),
    doneDate: new Date(),
    to: '1',
    from: '2',
  });
  const a = await rx.nextPdu('deliver_sm');
  const b = await rx.nextPdu('deliver_sm');
  rx.session.send(a.response());
  rx.session.send(b.response());
  t.same([a['receipted_message_id'], b['receipted_message_id']], ['p1', 'm5']);
});

t.test('refused receipt is queued again and retried', async (t) => {
  const { server, ports } = await startServer(t, { receiptRetryMs: 20 });
  const rx = await connectPeer(ports.port as number);
  t.teardown(() => rx.close());
  await rx.request('bind_receiver', { system_id: 'acme', password: 'secret' });
  server.deliverReceipt('acc-1', {
    messageId: 'm9',
    stat: 'EXPIRED',
    submitDate: new Date(),
    doneDate: new Date(),
    to: '1',
    from: '2',
  });
  const first = await rx.nextPdu('deliver_sm');
  rx.session.send(first.response({ command_status: STATUS.ESME_RSYSERR }));
  const second = await rx.nextPdu('deliver_sm');
  t.equal(second['receipted_message_id'], 'm9', 'same receipt sent again');
  rx.session.send(second.response());
});

t.test('TLS listener', async (t) => {
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], { keyType: 'ec' });
  const { ports } = await startServer(t, { port: null, tlsPort: 0, tls: { key: pems.private, cert: pems.cert } });
  t.equal(ports.port, null);
  const p = await connectPeer(ports.tlsPort as number, true);
  t.teardown(() => p.close());
  t.equal((await p.request('bind_transceiver', { system_id: 'acme', password: 'secret' })).command_status, 0);
  t.equal(
    (await p.request('submit_sm', { destination_addr: '1', short_message: Buffer.from('tls') })).command_status,
    0,
  );
});

t.test('bind lockout: refused even with the right password until lockoutMs after the last failure', async (t) => {
  const { ports, clock } = await startServer(t, { lockout: { failures: 2, lockoutMs: 60_000 } });
  const bindOnce = async (password: string) => {
    const p = await connectPeer(ports.port as number);
    t.teardown(() => p.close());
    return (await p.request('bind_transceiver', { system_id: 'acme', password })).command_status;
  };
  t.equal(await bindOnce('wrong'), STATUS.ESME_RBINDFAIL);
  t.equal(await bindOnce('wrong'), STATUS.ESME_RBINDFAIL);
  t.equal(await bindOnce('secret'), STATUS.ESME_RBINDFAIL, 'locked after two failures');
  clock.advance(59_999);
  t.equal(await bindOnce('secret'), STATUS.ESME_RBINDFAIL, 'still locked; the refused attempt does not extend it');
  clock.advance(1);
  t.equal(await bindOnce('secret'), 0, 'bound once the lockout has passed');
});
