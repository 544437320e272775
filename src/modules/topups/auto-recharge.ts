import type { Logger } from 'pino';
import type { Config } from '../../config/schema.js';
import type { Sql } from '../../db/connection.js';
import { ruleError, validationError } from '../../http/errors.js';
import type { Ledger } from '../../ledger/ledger.js';
import { Money } from '../../ledger/money.js';
import type { Clock } from '../../platform/clock.js';
import { CARD_MIN, type CardTopups } from './card.js';
import type { TopupsRepo } from './repo.js';

export interface AutoRechargeInput {
  enabled: boolean;
  threshold: string;
  amount: string;
  dailyLimit?: string | undefined;
}

/**
 * Auto-recharge: when the live balance falls below the threshold, the saved card is charged
 * off-session for the set amount, at most `dailyLimit` a UTC day, one attempt in flight per
 * account, and after a failure not again before `auto_recharge_retry_minutes`.
 */
export function createAutoRecharge(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  config: Readonly<Config>;
  ledger: Ledger;
  repo: TopupsRepo;
  card: CardTopups;
}) {
  const { sql, clock, repo, ledger, log, card } = deps;
  const b = deps.config.billing;
  const retryBefore = () => new Date(clock.now().getTime() - b.auto_recharge_retry_minutes * 60_000);

  async function view(accountId: string) {
    const r = await repo.autoRecharge(sql, accountId);
    const saved = await repo.savedCard(sql, accountId);
    return {
      enabled: r?.enabled ?? false,
      threshold: r ? Money.parse(r.threshold).toString() : null,
      amount: r ? Money.parse(r.amount).toString() : null,
      dailyLimit: r ? Money.parse(r.dailyLimit).toString() : null,
      card: saved?.paymentMethod ? { brand: saved.cardBrand, last4: saved.cardLast4 } : null,
      lastAttemptAt: r?.lastAttemptAt?.toISOString() ?? null,
      lastFailure: r?.lastFailure ?? null,
      updatedAt: r?.updatedAt.toISOString() ?? null,
    };
  }

  async function one(accountId: string, amount: string, threshold: string) {
    const bal = await ledger.balanceOf(accountId);
    if (Money.parse(bal.balance).cmp(threshold) >= 0) return;
    const saved = await repo.savedCard(sql, accountId);
    if (!saved?.paymentMethod) return;
    if (!(await repo.claimAutoAttempt(sql, accountId, retryBefore(), clock.now()))) return;
    const t = await card.chargeSaved(accountId, amount, saved.customerId, saved.paymentMethod);
    log.info({ accountId, topupId: t.id, status: t.status }, 'auto-recharge attempted');
  }

  return {
    view,

    async put(accountId: string, input: AutoRechargeInput) {
      const threshold = Money.parse(input.threshold);
      const amount = Money.parse(input.amount);
      if (amount.cmp(CARD_MIN) < 0 || amount.cmp(b.card_max_amount) > 0)
        throw validationError([
          {
            path: 'amount',
            message: `card top-ups are between ${CARD_MIN} and ${Money.parse(b.card_max_amount)} USD`,
          },
        ]);
      const dailyLimit = Money.parse(input.dailyLimit ?? amount.times('3').toString());
      if (dailyLimit.cmp(amount) < 0)
        throw validationError([{ path: 'dailyLimit', message: 'must be at least the recharge amount' }]);
      if (input.enabled) {
        if (!card.enabled()) throw ruleError('Card top-ups are not enabled on this exchange');
        const saved = await repo.savedCard(sql, accountId);
        if (!saved?.paymentMethod)
          throw ruleError('Auto-recharge needs a saved card: make a card top-up with saveCard true first');
      }
      await repo.putAutoRecharge({
        accountId,
        enabled: input.enabled,
        threshold: threshold.toString(),
        amount: amount.toString(),
        dailyLimit: dailyLimit.toString(),
        updatedAt: clock.now(),
      });
      return view(accountId);
    },

    /** One pass over the enabled auto-recharges; each account's failure is its own. */
    async tick() {
      if (!card.enabled()) return;
      for (const r of await repo.dueAutoRecharges(retryBefore())) {
        try {
          await one(r.accountId, r.amount, r.threshold);
        } catch (err) {
          log.warn({ err, accountId: r.accountId }, 'auto-recharge failed');
        }
      }
    },
  };
}

export type AutoRecharge = ReturnType<typeof createAutoRecharge>;
