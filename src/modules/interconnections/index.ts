import type { CoreDeps } from '../../platform/core.js';
import type { Module } from '../../platform/module.js';
import { interconnectionsRoutes } from './routes.js';
import { createInterconnectionsService, type InterconnectionDeps } from './service.js';
import { createPeeringTerms } from './terms.js';

/**
 * The terms in force between accounts, read by rating. Built before the marketplace (whose routing
 * prices with it) from this module's own table; `buildInterconnectionsModule` takes it back.
 */
export function buildPeeringTerms(core: CoreDeps) {
  return createPeeringTerms({ sql: core.sql, clock: core.clock });
}

export type PeeringTermsCache = ReturnType<typeof buildPeeringTerms>;

/** Interconnections between accounts (docs/interconnections.md). */
export function buildInterconnectionsModule(
  core: CoreDeps,
  deps: { terms: PeeringTermsCache } & Pick<InterconnectionDeps, 'account' | 'candidatesFor'>,
) {
  const service = createInterconnectionsService({
    sql: core.sql,
    clock: core.clock,
    account: deps.account,
    candidatesFor: deps.candidatesFor,
    termsChanged: deps.terms.changed,
  });
  const module: Module = {
    name: 'interconnections',
    routes: interconnectionsRoutes(service),
    start: () => deps.terms.start(),
    stop: () => deps.terms.stop(),
  };
  return { module, service };
}

export type { InterconnectionsService } from './service.js';
