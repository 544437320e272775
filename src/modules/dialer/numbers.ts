import type { Sql } from '../../db/connection.js';
import { conflict, notFound, validationError } from '../../http/errors.js';
import type { Clock } from '../../platform/clock.js';
import { isE164Digits } from '../../platform/e164.js';
import { numberDigits } from './campaigns.js';
import type { CampaignRow } from './repo.js';

export type NumberState = 'pending' | 'dialing' | 'answered' | 'failed' | 'blocked';
/** Outcomes a reset may give another try (an answered number is done; a DNC-blocked one stays blocked). */
export type ResettableStatus = 'no_answer' | 'busy' | 'failed';

interface NumberRow {
  id: string;
  number: string;
  name: string | null;
  fields: Record<string, string> | null;
  state: NumberState;
  attempts: number;
  nextAt: Date | null;
  lastStatus: string | null;
  lastCause: string | null;
  lastCallId: string | null;
  updatedAt: Date | null;
}

const numberView = (r: NumberRow) => ({
  id: r.id,
  number: `+${r.number}`,
  name: r.name,
  fields: r.fields ?? {},
  state: r.state,
  attempts: r.attempts,
  nextAttemptAt: r.state === 'pending' && r.nextAt ? r.nextAt.toISOString() : null,
  lastStatus: r.lastStatus,
  lastCause: r.lastCause,
  lastCallId: r.lastCallId,
  updatedAt: r.updatedAt?.toISOString() ?? null,
});

// '-infinity' (due at once) reads as null: the driver would give an invalid Date. The id goes out as
// text (a bigint); queries order by the column, not by this text.
const COLUMNS = (sql: Sql) => sql`
  id::text, number, name, fields, state, attempts,
  case when next_at = '-infinity' then null else next_at end as next_at,
  last_status, last_cause, last_call_id, updated_at`;

const FINAL = new Set(['completed', 'failed']);

/** Digits of each given number; a bad one is a VALIDATION_ERROR naming its index. */
export function digitsOrFail(list: readonly string[], path: string): string[] {
  const out: string[] = [];
  const bad: { path: string; message: string }[] = [];
  list.forEach((raw, i) => {
    const n = numberDigits(raw);
    if (isE164Digits(n)) out.push(n);
    else bad.push({ path: `${path}/${i}`, message: 'must be an E.164 number' });
  });
  if (bad.length) throw validationError(bad.slice(0, 100));
  return out;
}

/**
 * A campaign's numbers one by one: listed with their state, removed before they are dialled, given
 * another round after a failure, and checked for duplicates before they are added.
 */
export function createCampaignNumbers(deps: {
  sql: Sql;
  clock: Clock;
  blockedAmong(accountId: string, numbers: string[]): Promise<Set<string>>;
}) {
  const { sql, clock } = deps;

  return {
    async list(
      campaignId: string,
      q: { state?: NumberState | undefined; search?: string | undefined; cursor?: string | undefined; limit: number },
    ) {
      const prefix = q.search ? numberDigits(q.search).replace(/\D/g, '') : '';
      const rows = await sql<NumberRow[]>`
        select ${COLUMNS(sql)} from dialer_numbers where campaign_id = ${campaignId}
          ${q.state ? sql`and state = ${q.state}` : sql``}
          ${prefix ? sql`and number like ${`${prefix}%`}` : sql``}
          ${q.cursor ? sql`and id > ${q.cursor}::bigint` : sql``}
        order by dialer_numbers.id limit ${q.limit + 1}`;
      return rows.map(numberView);
    },

    async one(campaignId: string, number: string) {
      const [row] = await sql<NumberRow[]>`
        select ${COLUMNS(sql)} from dialer_numbers where campaign_id = ${campaignId} and number = ${number}`;
      if (!row) throw notFound('Number in this campaign');
      return numberView(row);
    },

    /**
     * Removes numbers not yet dialled. A number with an attempt stays (its results refer to it), as
     * does one being dialled; they are answered in `kept` with their state.
     */
    async remove(c: CampaignRow, numbers: string[]) {
      if (FINAL.has(c.status)) throw conflict(`The campaign is ${c.status}`);
      const digits = [...new Set(digitsOrFail(numbers, 'numbers'))];
      return sql.begin(async (tx) => {
        // The campaign row first, as adding numbers does, so total_numbers moves in one order.
        await tx`select 1 from dialer_campaigns where id = ${c.id} for update`;
        const gone = await tx`
          delete from dialer_numbers
          where campaign_id = ${c.id} and number = any (${digits}::text[]) and state = 'pending' and attempts = 0`;
        const [total] = await tx<{ totalNumbers: number }[]>`
          update dialer_campaigns set total_numbers = total_numbers - ${gone.count}, updated_at = ${clock.now()}
          where id = ${c.id} returning total_numbers`;
        const kept = await tx<{ number: string; state: string; attempts: number }[]>`
          select number, state, attempts from dialer_numbers
          where campaign_id = ${c.id} and number = any (${digits}::text[]) order by number limit 100`;
        const [present] = await tx<{ n: number }[]>`
          select count(*)::int as n from dialer_numbers where campaign_id = ${c.id} and number = any (${digits}::text[])`;
        return {
          removed: gone.count,
          notInCampaign: digits.length - gone.count - present!.n,
          kept: kept.map((k) => ({ number: `+${k.number}`, state: k.state, attempts: k.attempts })),
          totalNumbers: total!.totalNumbers,
        };
      });
    },

    /**
     * Gives failed numbers a fresh round of `maxAttempts` (due now). The counters move back as if
     * the numbers had not been dialled, so a number dialled again counts once; its earlier attempts
     * stay in the results.
     */
    async reset(c: CampaignRow, input: { statuses?: ResettableStatus[] | undefined; numbers?: string[] | undefined }) {
      if (FINAL.has(c.status)) {
        throw conflict(`The campaign is ${c.status}: clone it with numbers "not_answered" to call them again`);
      }
      const statuses = input.statuses?.length ? input.statuses : ['no_answer', 'busy', 'failed'];
      const digits = input.numbers ? digitsOrFail(input.numbers, 'numbers') : null;
      const now = clock.now();
      return sql.begin(async (tx) => {
        await tx`select 1 from dialer_campaigns where id = ${c.id} for update`;
        const r = await tx`
          update dialer_numbers set state = 'pending', attempts = 0, next_at = ${now}, updated_at = ${now}
          where campaign_id = ${c.id} and state = 'failed' and last_status = any (${statuses}::text[])
            ${digits ? tx`and number = any (${digits}::text[])` : tx``}`;
        const [counts] = await tx<{ pending: number }[]>`
          update dialer_campaigns set numbers_failed = numbers_failed - ${r.count},
                 numbers_dialed = numbers_dialed - ${r.count}, updated_at = ${now}
          where id = ${c.id}
          returning (select count(*)::int from dialer_numbers where campaign_id = ${c.id} and state = 'pending') as pending`;
        return { reset: r.count, pending: counts!.pending };
      });
    },

    /**
     * Before adding numbers: which are already in the campaign, given twice, on the do-not-call list,
     * or called by another of the account's campaigns within `withinDays`. Writes nothing.
     */
    async duplicateCheck(c: CampaignRow, numbers: string[], withinDays: number) {
      const invalid: { index: number; value: string; message: string }[] = [];
      const seen = new Set<string>();
      const repeated = new Set<string>();
      numbers.forEach((raw, index) => {
        const n = numberDigits(raw);
        if (!isE164Digits(n)) invalid.push({ index, value: raw.slice(0, 40), message: 'must be an E.164 number' });
        else if (seen.has(n)) repeated.add(n);
        else seen.add(n);
      });
      const digits = [...seen];
      const since = new Date(clock.now().getTime() - withinDays * 86400_000);
      const [inCampaign, dnc, recent] = await Promise.all([
        sql<{ number: string }[]>`
          select number from dialer_numbers where campaign_id = ${c.id} and number = any (${digits}::text[])`,
        deps.blockedAmong(c.accountId, digits),
        withinDays === 0
          ? Promise.resolve([])
          : sql<{ number: string; campaignId: string; startedAt: Date; status: string }[]>`
              select distinct on (number) number, campaign_id, started_at, status from dialer_attempts
              where account_id = ${c.accountId} and campaign_id <> ${c.id} and number = any (${digits}::text[])
                and started_at >= ${since}
              order by number, started_at desc`,
      ]);
      const already = new Set(inCampaign.map((r) => r.number));
      const plus = (n: string) => `+${n}`;
      return {
        checked: numbers.length,
        unique: digits.filter((n) => !already.has(n) && !dnc.has(n)).length,
        inCampaign: [...already].sort().map(plus),
        repeated: [...repeated].sort().map(plus),
        dnc: [...dnc].sort().map(plus),
        recentlyCalled: recent.map((r) => ({
          number: plus(r.number),
          campaignId: r.campaignId,
          lastCalledAt: r.startedAt.toISOString(),
          lastStatus: r.status,
        })),
        invalid,
      };
    },
  };
}

export type CampaignNumbers = ReturnType<typeof createCampaignNumbers>;
