import type { Ledger } from '../../ledger/index.js';
import type { CoreDeps } from '../../platform/core.js';
import type { Module } from '../../platform/module.js';
import type { SipPlane } from '../../platform/sip-plane.js';
import type { RouteChecksService } from '../route-checks/service.js';
import { createCliObserver } from './observer.js';
import { cliTestsRoutes } from './routes.js';
import { createCliTestsService, type CliTestsDeps } from './service.js';

const DUE_LOOP_MS = 5000;

/**
 * Caller-ID tests (spec "CLI tests"): calls through the API calls' engine, observed where the
 * handset's number arrives back at this exchange's SIP stack. The observer's INVITE handler is
 * registered here, at build, so it precedes the trunk B2BUA's (made when the calls module starts).
 */
export function buildCliTestsModule(
  core: CoreDeps,
  deps: {
    ledger: Ledger;
    sip: SipPlane;
    routeChecks: RouteChecksService;
    calls: CliTestsDeps['calls'];
    admission: CliTestsDeps['admission'];
    blends: CliTestsDeps['blends'];
    application: CliTestsDeps['application'];
    checkResults: CliTestsDeps['checkResults'];
  },
) {
  const log = core.log.child({ module: 'cli-tests' });
  const observer = createCliObserver({
    stack: deps.sip.stack,
    log,
    ringMs: core.config.cli_tests.ring_ms,
    now: () => core.clock.now(),
  });
  const service = createCliTestsService({
    sql: core.sql,
    log,
    clock: core.clock,
    config: core.config,
    ledger: deps.ledger,
    routeChecks: deps.routeChecks,
    calls: deps.calls,
    admission: deps.admission,
    blends: deps.blends,
    application: deps.application,
    checkResults: deps.checkResults,
    observer,
  });
  let timer: NodeJS.Timeout | undefined;
  const module: Module = {
    name: 'cli-tests',
    routes: cliTestsRoutes(service),
    async start() {
      await service.recover();
      timer = setInterval(
        () =>
          void service
            .dispatchDue()
            .catch((err: unknown) => log.warn({ err }, 'scheduled caller-ID tests not dispatched')),
        DUE_LOOP_MS,
      );
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      await service.stop();
    },
  };
  return { module, service };
}
