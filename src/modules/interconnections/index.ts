import type { CoreDeps } from '../../platform/core.js';
import type { Module } from '../../platform/module.js';
import { every, type IntervalTimer } from '../../platform/periodic.js';
import { interconnectionsRoutes } from './routes.js';
import { createInterconnectionsService, type InterconnectionDeps } from './service.js';
import { createStatements } from './statements.js';
import { createPeeringTerms } from './terms.js';

// Proposals and terms past their time are marked expired within a minute; a closed period's
// statements are made within five.
const SWEEP_MS = 60_000;
const STATEMENTS_MS = 300_000;
// A cap a side reached is told within seconds: the crossing is already committed with its CDR.
const CAPS_MS = 5_000;

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
  deps: { terms: PeeringTermsCache; timer?: IntervalTimer } & Pick<InterconnectionDeps, 'account' | 'candidatesFor'>,
) {
  const service = createInterconnectionsService({
    sql: core.sql,
    clock: core.clock,
    account: deps.account,
    candidatesFor: deps.candidatesFor,
    termsChanged: deps.terms.changed,
  });
  const statements = createStatements({ sql: core.sql, clock: core.clock });
  let jobs: { stop(): Promise<void> }[] = [];
  const job = (name: string, ms: number, run: () => Promise<number>) =>
    every(
      ms,
      () =>
        run().then(
          (n) => n > 0 && core.log.info({ job: name, count: n }, 'interconnections job done'),
          (err: unknown) => core.log.error({ err, job: name }, 'interconnections job failed'),
        ),
      deps.timer,
    );
  const module: Module = {
    name: 'interconnections',
    routes: interconnectionsRoutes(service, statements),
    start: async () => {
      await deps.terms.start();
      jobs = [
        job('expiry sweep', SWEEP_MS, service.expireDue),
        job('statements', STATEMENTS_MS, statements.closeDue),
        job('caps reached', CAPS_MS, service.tellCapsReached),
      ];
    },
    stop: async () => {
      await Promise.all(jobs.map((j) => j.stop()));
      jobs = [];
      await deps.terms.stop();
    },
  };
  return { module, service, statements };
}

export type { InterconnectionsService } from './service.js';
