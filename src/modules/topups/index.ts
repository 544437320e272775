import type { Ledger } from '../../ledger/ledger.js';
import { Money } from '../../ledger/money.js';
import type { CoreDeps } from '../../platform/core.js';
import type { Module } from '../../platform/module.js';
import { every } from '../../platform/periodic.js';
import { createAutoRecharge } from './auto-recharge.js';
import { createChargebacks } from './chargebacks.js';
import { createCardTopups, type BillingIdentity } from './card.js';
import { paymentRoutes } from './payment-routes.js';
import { createTopupsRepo } from './repo.js';
import { topupsRoutes } from './routes.js';
import { createTopupsService } from './service.js';
import { createStripeGateway, type CardGateway } from './stripe-gateway.js';
import { createWireTopups } from './wire.js';

/**
 * Top-ups: credit onto an account through the ledger (cards through Stripe, bank wires matched
 * by reference, x402, invite codes, operator credits), their history and receipts, auto-recharge.
 * Links point at this daemon's public API.
 */
export async function buildTopupsModule(
  core: CoreDeps,
  deps: {
    ledger: Ledger;
    /** The account as a receipt names it; frozen into the top-up when credited. */
    identity: BillingIdentity;
    email: (accountId: string) => Promise<string | null>;
    /** Tests stand a gateway in; otherwise Stripe from `[billing] stripe_*`. */
    gateway?: CardGateway | null;
  },
) {
  const { config, log } = core;
  const b = config.billing;
  const repo = createTopupsRepo(core.sql);
  const chargebacks = createChargebacks({ clock: core.clock, repo });
  const service = createTopupsService({ ...core, ledger: deps.ledger, repo, chargebacks, identity: deps.identity });
  const gateway = deps.gateway === undefined ? await createStripeGateway(b) : deps.gateway;
  const base = { ...core, ledger: deps.ledger, repo, chargebacks };
  const card = createCardTopups({
    ...base,
    log: log.child({ module: 'topups' }),
    gateway,
    identity: deps.identity,
    email: deps.email,
  });
  const wire = createWireTopups({ ...base, identity: deps.identity });
  const auto = createAutoRecharge({ ...base, log: log.child({ module: 'auto-recharge' }), card });
  const publicBase = `https://${config.http.public_hostname}${config.http.port === 443 ? '' : `:${config.http.port}`}/api/v1`;
  let loops: { stop(): Promise<void> }[] = [];

  const housekeeping = async () => {
    try {
      const expired = await repo.expireWires(core.clock.now());
      if (expired > 0) log.info({ expired }, 'wire top-up references expired');
      await auto.tick();
    } catch (err) {
      log.warn({ err }, 'top-up housekeeping failed');
    }
  };

  const routes = paymentRoutes({
    sql: core.sql,
    repo,
    card,
    wire,
    auto,
    issuer: config.http.public_hostname,
    cardMax: Money.parse(b.card_max_amount).toString(),
    x402: () => ({
      enabled: b.x402_facilitator_url !== '' && b.x402_pay_to !== '',
      minimum: Money.parse(b.x402_min_amount).toString(),
      maximum: Money.parse(b.x402_max_amount).toString(),
    }),
  });
  const module: Module = {
    name: 'topups',
    routes: (app) => {
      topupsRoutes(service, publicBase)(app);
      routes(app);
    },
    start() {
      loops = [every(b.auto_recharge_check_seconds * 1000, housekeeping)];
    },
    async stop() {
      await Promise.all(loops.map((l) => l.stop()));
    },
  };
  /** Credited top-ups, for their invoices (the billing module renders them). */
  const credited = {
    list: (accountId: string, cursor: string | undefined, max: number) => repo.listCredited(accountId, cursor, max),
    async one(accountId: string, id: string) {
      const t = await repo.byId(core.sql, accountId, id);
      return t && t.receiptNumber !== null ? t : null;
    },
  };
  return { module, service: { ...service, card, wire, autoRecharge: auto, housekeeping, credited } };
}
