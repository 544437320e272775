// submit_sm throughput: SMPP in to our server, out through a supplier bind to a local SMSC,
// beside the raw throughput of the same smpp library on loopback, in one run.
// Run: npx tsx bench/sms/smpp-throughput.bench.ts [messages=5000] [window=100]
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import smpp from 'smpp';
import type { PDU, Session } from 'smpp';
import { createSmppServer } from '../../src/messaging/smpp-server.js';
import { createSupplierBind } from '../../src/messaging/supplier-bind.js';
import { useRawMessageCodec } from '../../src/messaging/smpp-lib.js';
import { encodeGsm7 } from '../../src/messaging/gsm7.js';
import { systemClock } from '../../src/platform/clock.js';

const total = Number(process.argv[2] ?? 5000);
const windowSize = Number(process.argv[3] ?? 100);
const log = pino({ level: 'silent' });
useRawMessageCodec();

/** The local SMSC: the smpp library answering every submit_sm at once. */
async function startSmsc() {
  let id = 0;
  const server = smpp.createServer({}, (s: Session) => {
    s.on('error', () => {});
    s.on('pdu', (pdu: PDU) => {
      if (pdu.isResponse()) return;
      if (pdu.command === 'submit_sm') s.send(pdu.response({ message_id: String(++id) }));
      else if (pdu.command === 'unbind') s.send(pdu.response(), () => s.socket.end());
      else s.send(pdu.response());
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, port: (server.address() as AddressInfo).port };
}

/** An ESME sending `total` submit_sm with `windowSize` outstanding; returns messages per second. */
async function drive(port: number, count = total): Promise<number> {
  const s = smpp.connect({ host: '127.0.0.1', port });
  s.on('error', () => {});
  await once(s, 'connect');
  await new Promise<PDU>((r) => s.send(new smpp.PDU('bind_transmitter', { system_id: 'bench', password: 'bench' }), r));
  const body = encodeGsm7('Benchmark message text');
  const started = process.hrtime.bigint();
  await new Promise<void>((resolve, reject) => {
    let sent = 0;
    let done = 0;
    const next = () => {
      while (sent < count && sent - done < windowSize) {
        sent++;
        s.send(new smpp.PDU('submit_sm', { destination_addr: '447700900123', source_addr: 'Bench', data_coding: 0, short_message: body }), (resp: PDU) => {
          if (resp.command_status !== 0) return reject(new Error(`status ${resp.command_status}`));
          done++;
          if (done === count) resolve();
          else next();
        });
      }
    };
    next();
  });
  const secs = Number(process.hrtime.bigint() - started) / 1e9;
  s.socket.destroy();
  return count / secs;
}

const smsc = await startSmsc();
await drive(smsc.port, 1000); // warm-up, so the first measure is not also the JIT's
const raw = await drive(smsc.port);

const bind = createSupplierBind({
  host: '127.0.0.1', port: smsc.port, tls: false, systemId: 'x', password: 'y', bindType: 'transmitter',
  tps: 1_000_000, windowSize, responseTimeoutMs: 10_000, log, clock: systemClock, onReceipt() {},
});
bind.start();
const server = createSmppServer({
  port: 0, host: '127.0.0.1', tls: null, log, clock: systemClock, idleTimeoutMs: 60_000,
  authenticate: async () => ({ accountId: 'bench', throughputPerSecond: 0 }),
  async onSubmit(_account, sub) {
    const r = await bind.submit({ to: sub.to, from: sub.from, text: sub.text });
    return r.status === 'accepted' ? { messageId: r.supplierMessageId } : { commandStatus: 0x45 };
  },
});
const { port } = await server.start();
const e2e = await drive(port as number);

console.log(`smpp raw loopback (smpp library both ends): ${raw.toFixed(0)} msg/s`);
console.log(`smpp in -> our server -> supplier bind -> local SMSC: ${e2e.toFixed(0)} msg/s`);
console.log(`ratio end-to-end / raw: ${(e2e / raw).toFixed(2)} (messages ${total}, window ${windowSize})`);
await bind.stop();
await server.stop();
smsc.server.close();
