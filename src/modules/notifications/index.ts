import type { CoreDeps } from '../../platform/core.js';
import type { Mailer } from '../../platform/mailer.js';
import type { Module } from '../../platform/module.js';
import { every } from '../../platform/periodic.js';
import { notificationsRoutes } from './routes.js';
import { createNotificationsService } from './service.js';

/** The in-app notification feed and the loop that fills it from the webhook outbox. */
export function buildNotificationsModule(core: CoreDeps, deps: { mailer: Mailer }) {
  const service = createNotificationsService({ ...core, mailer: deps.mailer });
  let loop: { stop(): Promise<void> } | null = null;
  const module: Module = {
    name: 'notifications',
    routes: notificationsRoutes(service),
    start() {
      loop = every(core.config.notifications.poll_interval_ms, () =>
        service.pump().catch((err: unknown) => core.log.error({ err }, 'notification feed pass failed')),
      );
    },
    stop: () => loop?.stop(),
  };
  return { module, service };
}
