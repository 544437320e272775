import type { CoreDeps } from '../../platform/core.js';
import type { Module } from '../../platform/module.js';
import { statusRoutes } from './routes.js';

/** GET /status: the readiness probes registered in `core.health`, and when this daemon was built. */
export function buildStatusModule(core: CoreDeps) {
  const module: Module = { name: 'status', routes: statusRoutes(core.health, core.clock.now()) };
  return { module };
}
