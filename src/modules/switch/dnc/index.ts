import type { CoreDeps } from '../../../platform/core.js';
import type { Module } from '../../../platform/module.js';
import { loadNodeId } from '../../../platform/node-id.js';
import type { ApplicationService } from '../../application/service.js';
import type { DncService } from '../../dnc/index.js';
import type { SwitchSubscriptions } from '../subscriptions.js';
import { createDncGate } from './gate.js';
import { switchDncRoutes } from './routes.js';
import { createSwitchDncService } from './service.js';

/**
 * The Switch DNC (docs/switch.md "DNC"): the account's do-not-call list (the dnc module's store)
 * honored for its customers' SIP calls and messages through `gate`, and the Switch DNC operations.
 */
export function buildSwitchDncModule(
  core: CoreDeps,
  deps: { dnc: DncService; application: ApplicationService; subscriptions: SwitchSubscriptions },
) {
  const log = core.log.child({ module: 'switch-dnc' });
  const gate = createDncGate({ sql: core.sql, log, clock: core.clock, dnc: deps.dnc });
  const service = createSwitchDncService({
    sql: core.sql,
    log,
    clock: core.clock,
    stateDir: core.config.paths.state,
    // Scrub files live in this state directory: its node id is who resumes them after a restart.
    node: loadNodeId(core.config.paths.state),
    dnc: deps.dnc,
    application: deps.application,
    gate,
  });
  const module: Module = {
    name: 'switch-dnc',
    routes: switchDncRoutes(service, deps.subscriptions),
    start: () => service.start(),
    stop: () => service.stop(),
  };
  return { module, service, gate };
}

export type { DncGate } from './gate.js';
export type { SwitchDncService } from './service.js';
