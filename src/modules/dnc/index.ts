import type { CoreDeps } from '../../platform/core.js';
import type { Module } from '../../platform/module.js';
import { dncRoutes } from './routes.js';
import { createDncService } from './service.js';

/** Per-account do-not-call lists; the dialer (and later the Switch's scrub) asks `isBlocked` at dial time. */
export function buildDncModule(core: CoreDeps) {
  const service = createDncService({ sql: core.sql, clock: core.clock });
  const module: Module = { name: 'dnc', routes: dncRoutes(service) };
  return { module, service };
}

export type { DncService } from './service.js';
