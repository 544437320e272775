import { Decimal } from 'decimal.js';
import type { Sql } from '../../db/connection.js';
import type { Clock } from '../../platform/clock.js';
import type { CampaignRow } from './repo.js';
import { inWindow, localDate } from './window.js';

/** Numbers priced one by one; beyond this a uniform sample of this size stands for the rest. */
export const ESTIMATE_SAMPLE = 100;
const QUARTER_MS = 15 * 60_000;
/** Beyond a year of closed windows and holidays, no finishing time is given. */
const HORIZON_QUARTERS = 366 * 24 * 4;

export interface EstimateDeps {
  sql: Sql;
  clock: Clock;
  /** The most one attempt to `number` can cost on the campaign's route, markup included (null: no rate covers it). */
  worstCase(c: CampaignRow, number: string): Promise<Decimal | null>;
  /** Money the account can spend now (live or test credit, by the campaign's environment). */
  available(c: CampaignRow): Promise<string>;
  /** The account's holiday dates (`YYYY-MM-DD`, local to each campaign). */
  holidays(accountId: string): Promise<Set<string>>;
  /** Calls an account may have up at once over the API call plane (0: no limit). */
  accountCallCap: number;
}

/**
 * What is left of a campaign, before it starts or while it runs: the most it can cost (the route
 * price for `maxCallDuration` in billing blocks with markup, plus the platform fee, for each attempt
 * left) and how long its first round of calls takes at its concurrency and pacing, inside its calling
 * window and outside the account's holidays. Writes nothing and dials nothing.
 */
export function createEstimator(deps: EstimateDeps) {
  const { sql, clock } = deps;

  /** The instant `seconds` of open calling time after `from`, or null past the horizon. */
  async function finishTime(c: CampaignRow, from: Date, seconds: number): Promise<Date | null> {
    const holidays = await deps.holidays(c.accountId);
    const tz = c.windowTz ?? 'UTC';
    const window =
      c.windowStartHour !== null && c.windowEndHour !== null
        ? { startHour: c.windowStartHour, endHour: c.windowEndHour, tz }
        : null;
    // Hours and holidays change on quarter hours in every zone: a quarter is open or closed whole.
    const open = (t: number) => (!window || inWindow(new Date(t), window)) && !holidays.has(localDate(new Date(t), tz));
    let t = from.getTime();
    let left = seconds * 1000;
    for (let i = 0; i < HORIZON_QUARTERS; i++) {
      if (left <= 0) return new Date(t);
      const next = (Math.floor(t / QUARTER_MS) + 1) * QUARTER_MS;
      if (open(t)) {
        const step = Math.min(left, next - t);
        left -= step;
        t += step;
      } else t = next;
    }
    return left <= 0 ? new Date(t) : null;
  }

  return async function estimate(c: CampaignRow) {
    const [counts] = await sql<{ pending: number; dialing: number; attemptsLeft: string }[]>`
      select count(*) filter (where state = 'pending')::int as pending,
             count(*) filter (where state = 'dialing')::int as dialing,
             coalesce(sum(greatest(${c.maxAttempts} - attempts, 0)) filter (where state = 'pending'), 0)::text as attempts_left
      from dialer_numbers where campaign_id = ${c.id} and state in ('pending', 'dialing')`;
    const pending = counts!.pending;
    const attemptsLeft = Number(counts!.attemptsLeft);
    const sample = await sql<{ number: string; left: number }[]>`
      select number, greatest(${c.maxAttempts} - attempts, 0)::int as left from dialer_numbers
      where campaign_id = ${c.id} and state = 'pending'
      ${pending > ESTIMATE_SAMPLE ? sql`order by random()` : sql`order by id`} limit ${ESTIMATE_SAMPLE}`;

    const fee = new Decimal(c.platformFeePerCall);
    let perCallMax = new Decimal(0);
    let firstRound = new Decimal(0);
    let allAttempts = new Decimal(0);
    let uncovered = 0;
    for (const n of sample) {
      const worst = await deps.worstCase(c, n.number);
      if (!worst) {
        uncovered++;
        continue;
      }
      const one = worst.plus(fee);
      if (one.gt(perCallMax)) perCallMax = one;
      firstRound = firstRound.plus(one);
      allAttempts = allAttempts.plus(one.times(n.left));
    }
    // The sample stands for every pending number; with no sample the figures are exact.
    const scale = sample.length ? new Decimal(pending).div(sample.length) : new Decimal(0);
    const money = (d: Decimal) => d.times(scale).toDecimalPlaces(6, Decimal.ROUND_UP).toFixed(6);

    const [observed] = await sql<{ seconds: string | null }[]>`
      select avg(extract(epoch from ended_at - started_at))::text as seconds from dialer_attempts where campaign_id = ${c.id}`;
    // Unobserved, a call is taken to last its whole maxCallDuration (the slowest the campaign can go).
    const fallback = c.kind === 'sms' ? 1 : c.maxCallDuration;
    const callSeconds = observed!.seconds !== null ? Math.max(Number(observed!.seconds), 0.001) : fallback;
    const concurrency =
      deps.accountCallCap > 0 && c.kind === 'voice' ? Math.min(c.concurrency, deps.accountCallCap) : c.concurrency;
    let perSecond = concurrency / callSeconds;
    if (c.callInterval > 0) perSecond = Math.min(perSecond, 1000 / c.callInterval);
    const dialingSeconds = pending ? Math.ceil(pending / perSecond) : 0;
    const now = clock.now();
    const from = c.scheduleAt && c.scheduleAt > now ? c.scheduleAt : now;
    const finishesAt = pending ? await finishTime(c, from, dialingSeconds) : now;
    const remaining = c.maxSpend === null ? null : Decimal.max(new Decimal(c.maxSpend).minus(c.spent), 0);

    return {
      campaignId: c.id,
      pendingNumbers: pending,
      dialing: counts!.dialing,
      attemptsLeft,
      sampled: pending > sample.length,
      sampleSize: sample.length,
      cost: {
        perCallMax: perCallMax.toFixed(6),
        firstRoundMax: money(firstRound),
        allAttemptsMax: money(allAttempts),
        uncoveredNumbers: Math.round(uncovered * scale.toNumber()),
      },
      spent: c.spent,
      maxSpendLeft: remaining?.toFixed(6) ?? null,
      available: await deps.available(c),
      duration: {
        basis:
          observed!.seconds !== null
            ? ('observed' as const)
            : c.kind === 'sms'
              ? ('assumed' as const)
              : ('max_call_duration' as const),
        averageCallSeconds: Math.round(callSeconds * 10) / 10,
        concurrency,
        callsPerMinute: Math.round(perSecond * 60 * 100) / 100,
        dialingSeconds,
        startsAt: from.toISOString(),
        finishesAt: finishesAt?.toISOString() ?? null,
      },
    };
  };
}

export type Estimator = ReturnType<typeof createEstimator>;
