import type { CoreDeps } from '../../../platform/core.js';
import type { Module } from '../../../platform/module.js';
import type { Mailer } from '../../../platform/mailer.js';
import type { SwitchSubscriptions } from '../subscriptions.js';
import type { SellRateDecks } from './deck-cache.js';
import { createCustomersRepo } from './repo.js';
import { customersRoutes } from './routes.js';
import { createCustomersService } from './service.js';

export { createSellRateDecks, type SellRateDecks, type SellRateLookup } from './deck-cache.js';

/**
 * Switch customers and their sell rates with notice; `decks` is shared with the call and SMS paths,
 * and its NOTIFY listener runs with this module.
 */
export function buildSwitchCustomersModule(
  core: CoreDeps,
  deps: { subscriptions: SwitchSubscriptions; decks: SellRateDecks; mailer: Pick<Mailer, 'send'> },
) {
  const service = createCustomersService({
    sql: core.sql,
    log: core.log.child({ module: 'switch-customers' }),
    clock: core.clock,
    repo: createCustomersRepo(core.sql),
    decks: deps.decks,
    mailer: deps.mailer,
  });
  const module: Module = {
    name: 'switch-customers',
    routes: customersRoutes(service, deps.subscriptions),
    start: () => deps.decks.start(),
    stop: () => deps.decks.stop(),
  };
  return { module, service };
}
