import type { CoreDeps } from '../../platform/core.js';
import type { Module } from '../../platform/module.js';
import { keysRoutes } from './routes.js';
import { createKeysService } from './service.js';

// Key usage is counted in memory and written in batches this often (and once more at stop).
const USAGE_FLUSH_MS = 5000;

/** API keys: their routes, and the loop that writes their usage counts. */
export function buildKeysModule(core: CoreDeps) {
  const service = createKeysService(core);
  let usageTimer: NodeJS.Timeout | undefined;
  const module: Module = {
    name: 'keys',
    routes: keysRoutes(service),
    async start() {
      await service.startCache();
      usageTimer = setInterval(
        () => void service.flushUsage().catch((err) => core.log.warn({ err }, 'api usage flush failed')),
        USAGE_FLUSH_MS,
      );
      usageTimer.unref();
    },
    async stop() {
      clearInterval(usageTimer);
      await service.flushUsage();
      await service.stopCache();
    },
  };
  return { module, service };
}
