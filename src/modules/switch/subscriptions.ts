import { AppError } from '../../http/errors.js';
import type { Principal } from '../../http/access.js';
import type { Sql } from '../../db/connection.js';
import type { Clock } from '../../platform/clock.js';

export interface SwitchSubscription {
  accountId: string;
  kind: 'trial' | 'plan';
  startedAt: Date;
  /** null: a plan with no end date. */
  endsAt: Date | null;
}

/** Whether a Switch plan or trial is in force at `now`. */
export const isActive = (s: SwitchSubscription | null, now: Date): boolean =>
  s !== null && s.startedAt <= now && (s.endsAt === null || s.endsAt > now);

/** Switch plans and trials: who may use the Switch operations (spec "Switch"). */
export function createSwitchSubscriptions(deps: { sql: Sql; clock: Clock }) {
  const { sql, clock } = deps;

  async function get(accountId: string): Promise<SwitchSubscription | null> {
    const [row] = await sql<SwitchSubscription[]>`
      select account_id, kind, started_at, ends_at from switch_subscriptions where account_id = ${accountId}`;
    return row ?? null;
  }

  return {
    get,

    /** Throws 402 SWITCH_SUBSCRIPTION_REQUIRED unless the caller's account has a plan or trial in force. */
    async require(p: Principal): Promise<void> {
      if (isActive(await get(p.accountId), clock.now())) return;
      throw new AppError('SWITCH_SUBSCRIPTION_REQUIRED', 'This Switch operation needs an active Switch plan or trial');
    },

    /** Starts (or replaces) the account's plan or trial from now. */
    async grant(accountId: string, kind: 'trial' | 'plan', endsAt: Date | null): Promise<SwitchSubscription> {
      const now = clock.now();
      const [row] = await sql<SwitchSubscription[]>`
        insert into switch_subscriptions (account_id, kind, started_at, ends_at, updated_at)
        values (${accountId}, ${kind}, ${now}, ${endsAt}, ${now})
        on conflict (account_id) do update set kind = excluded.kind, started_at = excluded.started_at,
          ends_at = excluded.ends_at, updated_at = excluded.updated_at
        returning account_id, kind, started_at, ends_at`;
      return row!;
    },

    /** Ends the account's plan or trial now; false when it had none. */
    async end(accountId: string): Promise<boolean> {
      const rows = await sql`delete from switch_subscriptions where account_id = ${accountId}`;
      return rows.count > 0;
    },
  };
}

export type SwitchSubscriptions = ReturnType<typeof createSwitchSubscriptions>;
