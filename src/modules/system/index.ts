import type { CoreDeps } from '../../platform/core.js';
import type { Module } from '../../platform/module.js';
import { systemRoutes } from './routes.js';
import { createSystemService } from './service.js';

/** Version and build, server time, capabilities. */
export function buildSystemModule(core: CoreDeps) {
  const service = createSystemService(core);
  const module: Module = { name: 'system', routes: systemRoutes(service) };
  return { module, service };
}
