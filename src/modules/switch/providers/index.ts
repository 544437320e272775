import { loadSigningSecret } from '../../accounts/signing-secret.js';
import type { App } from '../../../http/app.js';
import type { CoreDeps } from '../../../platform/core.js';
import type { Mailer } from '../../../platform/mailer.js';
import type { TargetGuard } from '../../../platform/outbound-guard.js';
import type { SwitchSubscriptions } from '../subscriptions.js';
import { createSwitchAudit } from './audit.js';
import { createTrunkDelivery, type ReachabilityProbe } from './delivery.js';
import { createDisputeService } from './disputes.js';
import { createEndpointService } from './endpoints.js';
import { providerRoutes } from './provider-routes.js';
import { createProviderService } from './providers.js';
import { createRateService } from './rates.js';
import { createReadiness } from './readiness.js';
import { createSecretSealer } from './secrets.js';
import { trunkRoutes } from './trunk-routes.js';
import { createTrunkService } from './trunks.js';

/** What the providers part of the Switch takes from the modules built before it. */
export interface SwitchProvidersDeps {
  mailer: Mailer;
  /** SIP OPTIONS through the connections module (its guard, its test history). */
  probe: ReachabilityProbe;
}

/** Switch providers, supplier trunks, endpoints, disputes and cost decks (docs/switch.md "Providers and supplier trunks"). */
export function buildSwitchProviders(
  core: CoreDeps,
  deps: SwitchProvidersDeps & { subscriptions: SwitchSubscriptions; guard: TargetGuard },
) {
  const { sql, clock, log } = core;
  const audit = createSwitchAudit({ sql, clock });
  const sealer = createSecretSealer(() => loadSigningSecret(sql, core.config.auth.jwt_secret));
  const readiness = createReadiness({ sql, clock });
  const trunks = createTrunkService({ sql, clock, audit, sealer, guard: deps.guard, blockers: readiness.blockers });
  const endpoints = createEndpointService({ sql, clock, guard: deps.guard, trunks });
  const providers = createProviderService({ sql, clock, audit });
  const disputes = createDisputeService({ sql, clock, audit });
  const rates = createRateService({ sql, clock, audit, trunks });
  const delivery = createTrunkDelivery({
    sql,
    clock,
    log: log.child({ part: 'switch-providers' }),
    guard: deps.guard,
    sealer,
    mailer: deps.mailer,
    probe: deps.probe,
    trunks,
    endpoints,
  });
  const subscriptions = deps.subscriptions;
  const routes = (app: App) => {
    providerRoutes({ subscriptions, providers, disputes })(app);
    trunkRoutes({ subscriptions, trunks, endpoints, readiness, audit, rates, delivery })(app);
  };
  return { routes, providers, trunks, readiness };
}
