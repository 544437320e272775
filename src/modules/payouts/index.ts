import type { Ledger } from '../../ledger/ledger.js';
import type { CoreDeps } from '../../platform/core.js';
import type { Module } from '../../platform/module.js';
import { createPayoutsRepo } from './repo.js';
import { payoutsRoutes } from './routes.js';
import { createPayoutsService, type KycGate } from './service.js';

/** Payouts of seller earnings: requests, the operator's approval, the ledger's `payout` entry. */
export function buildPayoutsModule(core: CoreDeps, deps: { ledger: Ledger; kyc: KycGate }) {
  const service = createPayoutsService({
    ...core,
    log: core.log.child({ module: 'payouts' }),
    ledger: deps.ledger,
    repo: createPayoutsRepo(core.sql),
    kyc: deps.kyc,
  });
  const module: Module = { name: 'payouts', routes: payoutsRoutes(service) };
  return { module, service };
}
