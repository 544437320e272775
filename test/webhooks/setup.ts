import pino from 'pino';
import { loadConfig, type DeepPartial } from '../../src/config/load.js';
import type { Config } from '../../src/config/schema.js';
import type { Sql } from '../../src/db/connection.js';
import { createWebhooksService } from '../../src/modules/webhooks/service.js';
import { createManualClock } from '../../src/platform/clock.js';
import { newId } from '../../src/platform/ids.js';
import { createWebhookSender, type SenderOptions } from '../../src/webhooks/sender.js';
import { createDeliveryWorker } from '../../src/webhooks/worker.js';
import { createTestDatabase } from '../helpers/db.js';
import { startReceiver } from './receiver.js';

type T = { teardown(fn: () => unknown): void };
export const silent = pino({ level: 'silent' });

/** A database, an account, the webhooks service, a real HTTPS receiver and a worker, all on one manual clock. */
export async function setup(
  t: T,
  o: { webhooks?: DeepPartial<Config['webhooks']>; sender?: Partial<SenderOptions>; concurrency?: number } = {},
) {
  const { sql, url } = await createTestDatabase(t);
  const clock = createManualClock(new Date('2026-03-01T12:00:00Z'));
  const config = loadConfig({
    overrides: {
      webhooks: { allow_private_targets: true, disable_after_failures: 3, ...o.webhooks },
    } as DeepPartial<Config>,
  });
  const accountId = await createAccount(sql);
  const receiver = await startReceiver(t, { now: () => clock.now().getTime() });
  const service = createWebhooksService({ sql, clock, log: silent, config });
  const makeWorker = (sender?: Partial<SenderOptions>) => {
    const w = createDeliveryWorker({
      sql,
      clock,
      log: silent,
      sender: createWebhookSender({ timeoutMs: 2000, allowPrivate: true, ca: receiver.cert, ...o.sender, ...sender }),
      concurrency: o.concurrency ?? 4,
      leaseMs: 70_000,
      disableAfterFailures: config.webhooks.disable_after_failures,
    });
    t.teardown(() => w.stop());
    return w;
  };
  const worker = makeWorker();
  /** Registers an endpoint at the receiver and makes the receiver verify with its secret. */
  const addEndpoint = async (events?: string[], path = '/hook') => {
    const { endpoint, secret } = await service.createEndpoint(accountId, {
      url: receiver.url(path),
      ...(events ? { events } : {}),
    });
    receiver.secret = secret;
    return endpoint;
  };
  return { sql, url, clock, config, accountId, receiver, service, worker, makeWorker, addEndpoint };
}

export async function createAccount(sql: Sql) {
  const id = newId();
  await sql`insert into accounts (id, email) values (${id}, ${id + '@example.test'})`;
  return id;
}
