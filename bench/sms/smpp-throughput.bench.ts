// submit_sm throughput: SMPP in to our server, out through a supplier bind to a local SMSC,
// beside the raw throughput of the same smpp library on loopback, in one run.
// Run: npx tsx bench/sms/smpp-throughput.bench.ts [messages=5000] [window=100]
import { pino } from 'pino';
import { createSmppServer } from '../../src/messaging/smpp-server.js';
import { createSupplierBind } from '../../src/messaging/supplier-bind.js';
import { useRawMessageCodec } from '../../src/messaging/smpp-lib.js';
import { systemClock } from '../../src/platform/clock.js';
import { driveSmpp, startSmsc } from './smpp-raw.js';

const total = Number(process.argv[2] ?? 5000);
const windowSize = Number(process.argv[3] ?? 100);
const log = pino({ level: 'silent' });
useRawMessageCodec();

const drive = (port: number, count = total) => driveSmpp(port, count, windowSize);

const smsc = await startSmsc();
await drive(smsc.port, 1000); // warm-up, so the first measure is not also the JIT's
const raw = await drive(smsc.port);

const bind = createSupplierBind({
  host: '127.0.0.1',
  port: smsc.port,
  tls: false,
  systemId: 'x',
  password: 'y',
  bindType: 'transmitter',
  tps: 1_000_000,
  windowSize,
  responseTimeoutMs: 10_000,
  log,
  clock: systemClock,
  onReceipt() {},
});
bind.start();
const server = createSmppServer({
  port: 0,
  host: '127.0.0.1',
  tls: null,
  log,
  clock: systemClock,
  idleTimeoutMs: 60_000,
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
