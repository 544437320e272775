import type { Ledger } from '../../ledger/ledger.js';
import type { CoreDeps } from '../../platform/core.js';
import type { Module } from '../../platform/module.js';
import { topupsRoutes } from './routes.js';
import { createTopupsService } from './service.js';

/** Top-ups: credit onto an account through the ledger; links point at this daemon's public API. */
export function buildTopupsModule(core: CoreDeps, deps: { ledger: Ledger }) {
  const { config } = core;
  const service = createTopupsService({ ...core, ledger: deps.ledger });
  const publicBase = `https://${config.http.public_hostname}${config.http.port === 443 ? '' : `:${config.http.port}`}/api/v1`;
  const module: Module = { name: 'topups', routes: topupsRoutes(service, publicBase) };
  return { module, service };
}
