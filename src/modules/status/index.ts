import type { CoreDeps } from '../../platform/core.js';
import type { Mailer } from '../../platform/mailer.js';
import type { Module } from '../../platform/module.js';
import { every } from '../../platform/periodic.js';
import { statusPageRoutes } from './page-routes.js';
import { statusRoutes } from './routes.js';
import { createStatusService } from './service.js';

/** GET /status (readiness) and the status page: components, incidents, uptime samples, subscriptions. */
export function buildStatusModule(core: CoreDeps, deps: { mailer: Mailer }) {
  const service = createStatusService({ ...core, mailer: deps.mailer });
  const sample = () => service.sample().catch((err: unknown) => core.log.warn({ err }, 'status sample failed'));
  let loop: { stop(): Promise<void> } | null = null;
  const module: Module = {
    name: 'status',
    routes: async (app) => {
      await statusRoutes(core.health, core.clock.now())(app);
      await statusPageRoutes(service, core.config.status.uptime_days)(app);
    },
    async start() {
      await sample();
      loop = every(core.config.status.sample_seconds * 1000, sample);
    },
    stop: () => loop?.stop(),
  };
  return { module, service };
}
