import type { Sql } from '../../db/connection.js';
import type { Clock } from '../../platform/clock.js';

/** Whether one step is done for an account, asked of the module that owns it. */
export type StepProbe = (accountId: string) => Promise<boolean>;

export const STEP_KEYS = ['verify_email', 'top_up', 'buy_route', 'create_api_key', 'first_traffic'] as const;
export type StepKey = (typeof STEP_KEYS)[number];

/** `href`: the dashboard page where the step is done. */
const STEPS: Record<StepKey, { title: string; description: string; href: string }> = {
  verify_email: {
    title: 'Verify your e-mail address',
    description: 'Open the link we e-mailed you, or ask for a new one.',
    href: '/settings/security',
  },
  top_up: {
    title: 'Top up your balance',
    description: 'The account is prepaid: 5 USD minimum by card or crypto, 100 USD by wire.',
    href: '/billing/top-up',
  },
  buy_route: {
    title: 'Buy a route',
    description: 'Pick a voice or SMS termination on the marketplace.',
    href: '/marketplace',
  },
  create_api_key: {
    title: 'Create an API key',
    description: 'Keys are made from the dashboard; a test key simulates traffic without spending.',
    href: '/developers/api-keys',
  },
  first_traffic: {
    title: 'Make your first call or send your first SMS',
    description: 'Over the API or your SIP trunk or SMPP bind.',
    href: '/voice-and-sms',
  },
};

/**
 * The checklist of a new account: each step's state is read from the module that owns it (given
 * as probes), never copied; only the steps the account skipped and whether it hid the list are kept.
 */
export function createOnboardingService(deps: { sql: Sql; clock: Clock; probes: Record<StepKey, StepProbe> }) {
  const { sql, clock, probes } = deps;

  async function state(accountId: string) {
    const [row] = await sql<{ skipped: string[]; dismissedAt: Date | null }[]>`
      select skipped, dismissed_at from onboarding_state where account_id = ${accountId}`;
    return row ?? { skipped: [], dismissedAt: null };
  }

  async function checklist(accountId: string) {
    const [st, done] = await Promise.all([state(accountId), Promise.all(STEP_KEYS.map((k) => probes[k](accountId)))]);
    const steps = STEP_KEYS.map((key, i) => ({
      key,
      ...STEPS[key],
      done: done[i]!,
      skipped: !done[i] && st.skipped.includes(key),
    }));
    const completed = steps.filter((s) => s.done).length;
    const settled = steps.filter((s) => s.done || s.skipped).length;
    return {
      steps,
      completed,
      total: steps.length,
      percent: Math.round((completed / steps.length) * 100),
      complete: settled === steps.length,
      nextStep: steps.find((s) => !s.done && !s.skipped)?.key ?? null,
      dismissed: st.dismissedAt !== null,
      dismissedAt: st.dismissedAt?.toISOString() ?? null,
    };
  }

  return {
    checklist,
    async skip(accountId: string, key: StepKey) {
      const now = clock.now();
      await sql`
        insert into onboarding_state (account_id, skipped, updated_at) values (${accountId}, ${[key]}, ${now})
        on conflict (account_id) do update set
          skipped = case when ${key} = any (onboarding_state.skipped) then onboarding_state.skipped
                         else onboarding_state.skipped || ${key}::text end,
          updated_at = ${now}`;
      return checklist(accountId);
    },
    async dismiss(accountId: string) {
      const now = clock.now();
      await sql`
        insert into onboarding_state (account_id, dismissed_at, updated_at) values (${accountId}, ${now}, ${now})
        on conflict (account_id) do update set dismissed_at = coalesce(onboarding_state.dismissed_at, ${now}), updated_at = ${now}`;
      return checklist(accountId);
    },
    async reset(accountId: string) {
      const now = clock.now();
      await sql`
        insert into onboarding_state (account_id, updated_at) values (${accountId}, ${now})
        on conflict (account_id) do update set skipped = '{}', dismissed_at = null, updated_at = ${now}`;
      return checklist(accountId);
    },
  };
}

export type OnboardingService = ReturnType<typeof createOnboardingService>;
