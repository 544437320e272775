/**
 * The webhooks bench's customer: the test receiver (TLS, both signatures checked) in a process of
 * its own, as a real endpoint is, so its work does not share the delivery worker's event loop.
 * Parent messages: `{ type: 'count' }` → `{ type: 'count', received, verified, cpuUs }`.
 */
import { startReceiver } from '../../test/webhooks/receiver.js';

const teardowns: (() => unknown)[] = [];
const receiver = await startReceiver({ teardown: (fn) => void teardowns.push(fn) }, { now: () => Date.now() });
receiver.secret = process.argv[2] ?? '';
let verified = 0;
let counted = 0;
const count = () => {
  // Only the new ones: the list grows for the whole run.
  for (; counted < receiver.received.length; counted++) if (receiver.received[counted]!.signatureOk) verified++;
  // Bodies are not needed after the check; dropping them keeps the heap (and GC) flat over a long run.
  receiver.received.fill(undefined as never, 0, counted);
};
process.on('message', (m: { type: string }) => {
  if (m.type === 'count') {
    count();
    const cpu = process.cpuUsage();
    process.send?.({ type: 'count', received: counted, verified, cpuUs: cpu.user + cpu.system });
  } else if (m.type === 'stop') {
    void Promise.all(teardowns.map((fn) => fn())).then(() => process.exit(0));
  }
});
process.send?.({ type: 'ready', port: receiver.port, cert: receiver.cert });
