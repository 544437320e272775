import t from 'tap';
import { pino } from 'pino';
import { createSupplierBind } from '../../src/messaging/supplier-bind.js';
import type { SupplierBindOptions, SupplierReceipt } from '../../src/messaging/supplier-bind.js';
import { checkBind } from '../../src/messaging/check-bind.js';
import { STATUS } from '../../src/messaging/smpp-lib.js';
import { systemClock } from '../../src/platform/clock.js';
import { startPerlSmsc } from './perl-smsc.js';
import { once } from 'node:events';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import smpp from 'smpp';
import { generate } from 'selfsigned';
import { createSmppServer } from '../../src/messaging/smpp-server.js';
import type { PDU, Session } from 'smpp';

const log = pino({ level: 'silent' });

async function setup(t: { teardown(fn: () => unknown): void }, over: Partial<SupplierBindOptions> = {}) {
  const smsc = await startPerlSmsc('sup1', 'pw1');
  t.teardown(() => smsc.stop());
  const receipts: SupplierReceipt[] = [];
  const receiptWaiters: Array<() => void> = [];
  const bind = createSupplierBind({
    host: '127.0.0.1',
    port: smsc.port,
    tls: false,
    systemId: 'sup1',
    password: 'pw1',
    bindType: 'transceiver',
    tps: 500,
    windowSize: 10,
    responseTimeoutMs: 2000,
    log,
    clock: systemClock,
    reconnectMinMs: 20,
    reconnectMaxMs: 200,
    throttleBackoffMs: 10,
    onReceipt(r) {
      receipts.push(r);
      receiptWaiters.splice(0).forEach((w) => w());
    },
    ...over,
  });
  t.teardown(() => bind.stop());
  const nextReceipt = async (n: number) => {
    while (receipts.length < n) await new Promise<void>((r) => receiptWaiters.push(r));
    return receipts[n - 1] as SupplierReceipt;
  };
  const receiptFor = async (reference: string) => {
    for (;;) {
      const hit = receipts.find((r) => r.reference === reference);
      if (hit) return hit;
      await new Promise<void>((r) => receiptWaiters.push(r));
    }
  };
  bind.start();
  return { smsc, bind, receipts, nextReceipt, receiptFor };
}

t.test('accepted with receipt; concatenated UCS-2; refused; throttled and retried', async (t) => {
  const { smsc, bind, nextReceipt, receiptFor } = await setup(t);
  const r1 = await bind.submit({ to: '+447700900123', from: 'MyShop', text: 'Hello {world}', reference: 'msg-1' });
  t.match(r1, { status: 'accepted', parts: 1 });
  const rec = await nextReceipt(1);
  t.equal(rec.reference, 'msg-1');
  t.equal(rec.stat, 'DELIVRD');
  t.equal(rec.supplierMessageId, r1.status === 'accepted' ? r1.supplierMessageId : '');
  const sub = await smsc.waitFor(/^SUBMIT 447700900123/);
  t.match(sub, /dc=0 esm=0 len=15 /, 'GSM-7 with two escape pairs is 15 septets, data_coding 0');

  const long = 'Привет 😀 '.repeat(10);
  const r2 = await bind.submit({
    to: '447700900124',
    from: '447700900999',
    text: long,
    reference: 'msg-2',
    registeredDelivery: false,
  });
  t.match(r2, { status: 'accepted', parts: 2 });
  t.equal(r2.status === 'accepted' && r2.supplierMessageIds.length, 2);
  // The SMSC logs a submit on its stdout and answers on the socket: the answer can come first.
  await smsc.waitFor(/^SUBMIT 447700900124/, 2);
  const parts = smsc.lines.filter((l) => l.startsWith('SUBMIT 447700900124'));
  t.equal(parts.length, 2);
  t.match(parts[0], /dc=8 esm=64 /);
  t.match(parts[0], /hex=050003[0-9a-f]{2}0201/);

  const r3 = await bind.submit({ to: '1999000', from: 'MyShop', text: 'x' });
  t.same(r3, { status: 'refused', commandStatus: STATUS.ESME_RINVDSTADR });

  const r4 = await bind.submit({ to: '1888000', from: 'MyShop', text: 'x', reference: 'thr' });
  t.match(r4, { status: 'accepted' }, 'accepted after two ESME_RTHROTTLED');
  await smsc.waitFor(/^RESP throttled$/, 2);
  t.equal(smsc.lines.filter((l) => l === 'RESP throttled').length, 2);
  t.ok(bind.effectiveTps() < 500, 'the bind slowed down');
  const r5 = await bind.submit({ to: '1887000', from: 'MyShop', text: 'x' });
  t.match(r5, { status: 'accepted' }, 'accepted after ESME_RMSGQFUL');

  const r6 = await bind.submit({ to: '1444000', from: 'MyShop', text: 'x', reference: 'und' });
  t.match(r6, { status: 'accepted' });
  const failed = await receiptFor('und');
  t.match(failed, { reference: 'und', stat: 'UNDELIV', err: '034' });

  const r7 = await bind.submit({ to: '1333000', from: 'MyShop', text: 'x', reference: 'dec' });
  const decRec = await receiptFor('dec');
  t.equal(decRec.reference, 'dec', 'receipt with the decimal form matched the hex id');
  t.not(decRec.supplierMessageId, r7.status === 'accepted' ? r7.supplierMessageId : '');
  t.same(await bind.submit({ to: '12', from: 'ABCDEFGHIJKL', text: 'x' }), {
    status: 'error',
    reason: 'invalid_sender_alphanumeric_too_long',
  });
});

t.test('receipt before submit_sm_resp is buffered and matched', async (t) => {
  const { smsc, bind, nextReceipt } = await setup(t);
  const r = await bind.submit({ to: '1555000', from: 'MyShop', text: 'x', reference: 'early' });
  t.match(r, { status: 'accepted' });
  const rec = await nextReceipt(1);
  t.equal(rec.reference, 'early');
  await smsc.waitFor(/^RESP/);
  const dlrIdx = smsc.lines.findIndex((l) => l.startsWith('DLR'));
  const respIdx = smsc.lines.findIndex((l) => l.startsWith('RESP'));
  t.ok(dlrIdx >= 0 && dlrIdx < respIdx, 'the SMSC really sent the receipt first');
});

t.test('silence: response timeout; disconnect: reconnect with one bind at a time', async (t) => {
  const { smsc, bind } = await setup(t, { responseTimeoutMs: 500 });
  const silent = await bind.submit({ to: '1777000', from: 'MyShop', text: 'x' });
  t.same(silent, { status: 'error', reason: 'response_timeout' });

  const dropped = await bind.submit({ to: '1666000', from: 'MyShop', text: 'x' });
  t.equal(dropped.status, 'error');
  // After the drop the bind comes back by itself and works.
  const after = await bind.submit({ to: '447700900123', from: 'MyShop', text: 'back' });
  t.match(after, { status: 'accepted' });
  await smsc.waitFor(/^BIND/, 2);
  const binds = smsc.lines.filter((l) => l.startsWith('BIND'));
  t.equal(binds.length, 2, 'one reconnect, no storm');
  t.ok(
    binds.every((l) => l.endsWith('active=1')),
    'never two binds at once',
  );

  smsc.send('disconnect');
  await smsc.waitFor(/^BIND trx ok/, 3);
  const again = await bind.submit({ to: '447700900123', from: 'MyShop', text: 'again' });
  t.match(again, { status: 'accepted' }, 'bind back after the SMSC dropped it');
  t.equal(bind.connects(), 3);

  await bind.stop();
  await smsc.waitFor(/^UNBIND/);
  t.equal(bind.state(), 'closed');
  t.same(await bind.submit({ to: '1', from: 'MyShop', text: 'x' }), { status: 'error', reason: 'bind_stopped' });
});

t.test('bad credentials back off instead of hammering', async (t) => {
  const smsc = await startPerlSmsc('sup1', 'pw1');
  t.teardown(() => smsc.stop());
  let rnd = 0;
  const bind = createSupplierBind({
    host: '127.0.0.1',
    port: smsc.port,
    tls: false,
    systemId: 'sup1',
    password: 'wrong',
    bindType: 'transmitter',
    tps: 10,
    windowSize: 1,
    responseTimeoutMs: 1000,
    log,
    clock: systemClock,
    onReceipt() {},
    reconnectMinMs: 40,
    reconnectMaxMs: 1000,
    queueTimeoutMs: 100,
    random: () => (rnd = (rnd + 0.37) % 1),
  });
  t.teardown(() => bind.stop());
  const started = Date.now();
  bind.start();
  const r = await bind.submit({ to: '1', from: 'MyShop', text: 'x' });
  t.same(r, { status: 'error', reason: 'not_bound' });
  await smsc.waitFor(/^BIND tx fail/, 4);
  const elapsed = Date.now() - started;
  // Backoff 40·2^n with at least half of it fixed: the 4th attempt cannot come before 20+40+80 ms.
  t.ok(elapsed >= 140, `four bind attempts took ${elapsed} ms`);
  t.equal(bind.connects(), 4, 'one connection per attempt');
});

t.test('an unreachable SMSC fails sends at once instead of after the queue timeout', async (t) => {
  // A port that was just listening and is closed now: connections are refused, like a stopped SMSC.
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  const bind = createSupplierBind({
    host: '127.0.0.1',
    port,
    tls: false,
    systemId: 'sup1',
    password: 'pw1',
    bindType: 'transceiver',
    tps: 10,
    windowSize: 1,
    responseTimeoutMs: 1000,
    log,
    clock: systemClock,
    onReceipt() {},
    reconnectMinMs: 60_000,
    reconnectMaxMs: 60_000,
    queueTimeoutMs: 30_000,
  });
  t.teardown(() => bind.stop());
  const started = Date.now();
  bind.start();
  t.same(await bind.submit({ to: '447700900123', from: 'MyShop', text: 'first' }), {
    status: 'error',
    reason: 'not_bound',
  });
  t.same(await bind.submit({ to: '447700900123', from: 'MyShop', text: 'second' }), {
    status: 'error',
    reason: 'not_bound',
  });
  const elapsed = Date.now() - started;
  t.ok(elapsed < 5_000, `both sends answered in ${elapsed} ms, not after the 30 s queue timeout`);
  // The socket's close (which starts the backoff) follows the refusal by a tick or two.
  for (let i = 0; i < 200 && bind.state() !== 'backoff'; i++) await new Promise((r) => setTimeout(r, 10));
  t.equal(bind.state(), 'backoff');
  t.equal(bind.connects(), 1, 'no reconnect storm: one attempt, then backoff');
});

t.test('checkBind: one real bind and unbind', async (t) => {
  const smsc = await startPerlSmsc('sup1', 'pw1');
  t.teardown(() => smsc.stop());
  const ok = await checkBind({
    host: '127.0.0.1',
    port: smsc.port,
    tls: false,
    systemId: 'sup1',
    password: 'pw1',
    bindType: 'transceiver',
    timeoutMs: 2000,
  });
  t.equal(ok.pass, true);
  t.match(ok.checks, [
    { label: 'connect', ok: true },
    { label: 'bind', ok: true },
    { label: 'unbind', ok: true },
  ]);
  await smsc.waitFor(/^UNBIND/);
  const bad = await checkBind({
    host: '127.0.0.1',
    port: smsc.port,
    tls: false,
    systemId: 'sup1',
    password: 'nope',
    bindType: 'transmitter',
    timeoutMs: 2000,
  });
  t.equal(bad.pass, false);
  t.match(bad.checks, [
    { label: 'connect', ok: true },
    { label: 'bind', ok: false, value: 'ESME_RBINDFAIL' },
  ]);
  const closed = await checkBind({
    host: '127.0.0.1',
    port: 1,
    tls: false,
    systemId: 'a',
    password: 'b',
    bindType: 'transmitter',
    timeoutMs: 2000,
  });
  t.match(closed, { pass: false, checks: [{ label: 'connect', ok: false }] });
});

t.test('framing error from the SMSC destroys the socket and the bind comes back', async (t) => {
  let sessions = 0;
  let second: () => void = () => {};
  const secondSession = new Promise<void>((r) => (second = r));
  const server = smpp.createServer({}, (s: Session) => {
    const n = ++sessions;
    if (n === 2) second();
    s.on('error', () => {});
    s.on('pdu', (pdu: PDU) => {
      if (pdu.isResponse()) return;
      if (pdu.command === 'bind_transmitter') {
        s.send(pdu.response({ system_id: 'lib' }), () => {
          // first session: a PDU header claiming 1 GiB
          if (n === 1) s.socket.write(Buffer.from([0x40, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 1]));
        });
      } else if (pdu.command === 'submit_sm') s.send(pdu.response({ message_id: 'ok1' }));
      else s.send(pdu.response());
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => {
    for (const s of server.sessions) s.socket.destroy();
    server.close();
  });
  const bind = createSupplierBind({
    host: '127.0.0.1',
    port: (server.address() as AddressInfo).port,
    tls: false,
    systemId: 'a',
    password: 'b',
    bindType: 'transmitter',
    tps: 100,
    windowSize: 5,
    responseTimeoutMs: 1000,
    log,
    clock: systemClock,
    onReceipt() {},
    reconnectMinMs: 20,
    reconnectMaxMs: 50,
  });
  t.teardown(() => bind.stop());
  bind.start();
  await secondSession;
  const r = await bind.submit({ to: '447700900123', from: 'MyShop', text: 'after framing error' });
  t.match(r, { status: 'accepted', supplierMessageId: 'ok1' });
  t.equal(bind.connects(), 2, 'the broken socket was dropped and one new bind made');
});

t.test('TLS bind to an SMSC (our own SMPP server as the peer), receipts through it', async (t) => {
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }],
  });
  const smsc = createSmppServer({
    port: null,
    tlsPort: 0,
    host: '127.0.0.1',
    tls: { key: pems.private, cert: pems.cert },
    log,
    clock: systemClock,
    idleTimeoutMs: 60_000,
    authenticate: async (id, pw) =>
      id === 'tlsuser' && pw === 'pw' ? { accountId: 'sup', throughputPerSecond: 0 } : null,
    onSubmit: async (_a, s) => ({ messageId: `0x${s.to.slice(-4)}` }),
  });
  const { tlsPort } = await smsc.start();
  t.teardown(() => smsc.stop());
  const receipts: SupplierReceipt[] = [];
  let got: () => void = () => {};
  const gotReceipt = new Promise<void>((r) => (got = r));
  const bind = createSupplierBind({
    host: '127.0.0.1',
    port: tlsPort as number,
    tls: { ca: pems.cert },
    systemId: 'tlsuser',
    password: 'pw',
    bindType: 'transceiver',
    tps: 50,
    windowSize: 2,
    responseTimeoutMs: 2000,
    log,
    clock: systemClock,
    onReceipt(r) {
      receipts.push(r);
      got();
    },
  });
  t.teardown(() => bind.stop());
  bind.start();
  const r = await bind.submit({ to: '447700901234', from: 'MyShop', text: 'over TLS', reference: 'tls-ref' });
  t.match(r, { status: 'accepted', supplierMessageId: '0x1234' });
  const now = new Date();
  t.equal(
    smsc.deliverReceipt('sup', {
      messageId: '0x1234',
      stat: 'DELIVRD',
      submitDate: now,
      doneDate: now,
      to: '447700901234',
      from: 'MyShop',
    }),
    'sent',
  );
  await gotReceipt;
  t.match(receipts[0], { supplierMessageId: '0x1234', reference: 'tls-ref', stat: 'DELIVRD', source: '447700901234' });
});

t.test('window and rate limits hold', async (t) => {
  const { smsc, bind } = await setup(t, { windowSize: 2, responseTimeoutMs: 200, tps: 20 });
  const started = Date.now();
  const silent = [1, 2, 3].map((i) => bind.submit({ to: `177700${i}`, from: 'MyShop', text: 'x' }));
  await smsc.waitFor(/^SUBMIT 1777/, 2);
  t.equal(bind.outstanding(), 2, 'two in flight, the third waits for room');
  await smsc.waitFor(/^SUBMIT 1777/, 3);
  t.ok(Date.now() - started >= 200, 'third sent only after a response timeout freed the window');
  t.same(
    await Promise.all(silent),
    [1, 2, 3].map(() => ({ status: 'error', reason: 'response_timeout' })),
  );

  const t0 = Date.now();
  const ok = await Promise.all(
    [1, 2, 3, 4, 5].map((i) => bind.submit({ to: `44770090000${i}`, from: 'MyShop', text: 'rate' })),
  );
  t.ok(ok.every((r) => r.status === 'accepted'));
  // 20 per second with a 100 ms burst (two tokens): five submits span at least three intervals of 50 ms.
  t.ok(Date.now() - t0 >= 140, `five submits at 20/s took ${Date.now() - t0} ms`);
});

t.test('submits made in one turn of the event loop leave in one socket write', async (t) => {
  let submits = 0;
  const server = smpp.createServer({}, (s: Session) => {
    s.on('error', () => {});
    s.on('pdu', (pdu: PDU) => {
      if (pdu.isResponse()) return;
      if (pdu.command === 'submit_sm') s.send(pdu.response({ message_id: `m${++submits}` }));
      else s.send(pdu.response());
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  t.teardown(() => {
    for (const s of server.sessions) s.socket.destroy();
    server.close();
  });
  // The bind's own socket is not reachable from here: the stream's write calls of every socket to
  // this server are counted instead (a corked stream hands its chunks over in one _writev).
  const proto = net.Socket.prototype as unknown as Record<'_write' | '_writev', (...a: unknown[]) => unknown>;
  const { _write: write, _writev: writev } = proto;
  let writes = 0;
  const counted = (f: (...a: unknown[]) => unknown) =>
    function (this: net.Socket, ...a: unknown[]) {
      if (this.remotePort === port) writes++;
      return f.apply(this, a);
    };
  proto._write = counted(write);
  proto._writev = counted(writev);
  t.teardown(() => {
    proto._write = write;
    proto._writev = writev;
  });
  const bind = createSupplierBind({
    host: '127.0.0.1',
    port,
    tls: false,
    systemId: 'a',
    password: 'b',
    bindType: 'transmitter',
    tps: 10_000,
    windowSize: 50,
    responseTimeoutMs: 2000,
    log,
    clock: systemClock,
    onReceipt() {},
  });
  t.teardown(() => bind.stop());
  bind.start();
  t.match(await bind.submit({ to: '447700900100', from: 'MyShop', text: 'first' }), { status: 'accepted' });
  writes = 0;
  const eight = await Promise.all(
    Array.from({ length: 8 }, (_, i) => bind.submit({ to: `44770090010${i}`, from: 'MyShop', text: `m ${i}` })),
  );
  t.ok(
    eight.every((r) => r.status === 'accepted'),
    'all eight accepted',
  );
  t.equal(submits, 9, 'the SMSC got every submit');
  t.equal(writes, 1, 'the eight submit_sm went out in one write');
});
