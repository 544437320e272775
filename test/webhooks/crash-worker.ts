// A delivery worker in its own process, for the crash test: it claims and sends, and the
// test kills it with SIGKILL while the receiver holds the request open.
import pino from 'pino';
import { connect } from '../../src/db/connection.js';
import { createManualClock } from '../../src/platform/clock.js';
import { createWebhookSender } from '../../src/webhooks/sender.js';
import { createDeliveryWorker } from '../../src/webhooks/worker.js';

const [url, at, ca] = process.argv.slice(2) as [string, string, string];
const log = pino({ level: 'silent' });
const sql = connect({ url, max: 2, log });
const worker = createDeliveryWorker({
  sql,
  clock: createManualClock(new Date(at)),
  log,
  sender: createWebhookSender({ timeoutMs: 60_000, allowPrivate: true, ca }),
  concurrency: 1,
  leaseMs: 70_000,
  disableAfterFailures: 20,
});
await worker.runOnce();
