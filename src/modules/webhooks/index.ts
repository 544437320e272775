import { readFileSync } from 'node:fs';
import type { CoreDeps } from '../../platform/core.js';
import { createWebhookSender, type SenderOptions } from '../../webhooks/sender.js';
import { createDeliveryWorker } from '../../webhooks/worker.js';
import { webhooksRoutes } from './routes.js';
import { createWebhooksService } from './service.js';

/**
 * The webhooks module: endpoint API, and the delivery worker started with the daemon.
 * `sender` overrides are for tests (a CA to trust, a DNS lookup); production reads
 * `webhooks.ca_file` for extra trusted CAs and never turns certificate checks off.
 */
export function buildWebhooksModule(core: CoreDeps, opts: { sender?: Partial<SenderOptions> } = {}) {
  const cfg = core.config.webhooks;
  const timeoutMs = cfg.timeout_seconds * 1000;
  const ca = cfg.ca_file ? readFileSync(cfg.ca_file) : undefined;
  const sender = createWebhookSender({
    timeoutMs,
    allowPrivate: cfg.allow_private_targets,
    ...(ca ? { ca } : {}),
    ...opts.sender,
  });
  const worker = createDeliveryWorker({
    sql: core.sql,
    clock: core.clock,
    log: core.log.child({ module: 'webhooks' }),
    sender,
    concurrency: cfg.workers,
    // Outlives the longest attempt with room for the database writes around it.
    leaseMs: timeoutMs + 60_000,
    disableAfterFailures: cfg.disable_after_failures,
    pollMs: cfg.poll_interval_ms,
  });
  let started = false;
  const service = createWebhooksService({
    ...core,
    // A test ping or resend goes out at once rather than at the next poll.
    onQueued: () => {
      if (started) void worker.runOnce().catch((err) => core.log.error({ err }, 'webhook worker pass failed'));
    },
  });
  return {
    service,
    worker,
    module: {
      name: 'webhooks',
      routes: webhooksRoutes(service),
      start() {
        started = cfg.workers > 0;
        worker.start();
      },
      async stop() {
        started = false;
        await worker.stop();
      },
    },
  };
}
