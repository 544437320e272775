import type { Sql } from '../../db/connection.js';
import { conflict, notFound, SqlState, validationError } from '../../http/errors.js';
import type { Clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';

/** The most holidays an account keeps (a calendar, not a log). */
export const MAX_HOLIDAYS = 1000;
/** How long the runner trusts its copy of an account's holidays; a write on this daemon clears it at once. */
const CACHE_MS = 5000;

interface HolidayRow {
  id: string;
  day: string;
  name: string;
  createdAt: Date;
}

const view = (r: HolidayRow) => ({ id: r.id, date: r.day, name: r.name, createdAt: r.createdAt.toISOString() });

/** A real calendar date: `2026-02-30` is refused, not rolled over. */
function isDate(s: string): boolean {
  const d = new Date(`${s}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === s;
}

/**
 * The account's dialer calendar: dates on which no campaign starts a call or sends a message. A
 * date is local to each campaign (its `windowTz`, UTC without one), as its calling window is.
 */
export function createDialerCalendar(deps: { sql: Sql; clock: Clock }) {
  const { sql, clock } = deps;
  const cache = new Map<string, { days: Set<string>; at: number }>();

  async function days(accountId: string): Promise<Set<string>> {
    const hit = cache.get(accountId);
    if (hit && Date.now() - hit.at < CACHE_MS) return hit.days;
    const rows = await sql<{ day: string }[]>`select day::text from dialer_holidays where account_id = ${accountId}`;
    const set = new Set(rows.map((r) => r.day));
    cache.set(accountId, { days: set, at: Date.now() });
    return set;
  }

  return {
    days,

    async list(accountId: string, q: { from?: string | undefined; to?: string | undefined }) {
      const rows = await sql<HolidayRow[]>`
        select id, day::text, name, created_at from dialer_holidays
        where account_id = ${accountId}
          ${q.from ? sql`and day >= ${q.from}::date` : sql``}
          ${q.to ? sql`and day <= ${q.to}::date` : sql``}
        order by day`;
      return rows.map(view);
    },

    async add(accountId: string, input: { date: string; name: string }) {
      if (!isDate(input.date)) throw validationError([{ path: 'date', message: 'must be a calendar date YYYY-MM-DD' }]);
      try {
        const row = await sql.begin(async (tx) => {
          // Serialises adds of one account so the cap holds.
          await tx`select pg_advisory_xact_lock(hashtextextended(${`dialer_holidays:${accountId}`}, 0))`;
          const [n] = await tx<{ n: number }[]>`
            select count(*)::int as n from dialer_holidays where account_id = ${accountId}`;
          if (n!.n >= MAX_HOLIDAYS) throw conflict(`An account keeps at most ${MAX_HOLIDAYS} holidays`);
          const [r] = await tx<HolidayRow[]>`
            insert into dialer_holidays (id, account_id, day, name, created_at)
            values (${newId()}, ${accountId}, ${input.date}::date, ${input.name}, ${clock.now()})
            returning id, day::text, name, created_at`;
          return r!;
        });
        cache.delete(accountId);
        return view(row);
      } catch (err) {
        if ((err as { code?: string }).code === SqlState.UNIQUE_VIOLATION) {
          throw conflict(`${input.date} is already a holiday`);
        }
        throw err;
      }
    },

    async remove(accountId: string, id: string) {
      const r = await sql`delete from dialer_holidays where id = ${id} and account_id = ${accountId}`;
      if (r.count === 0) throw notFound('Holiday');
      cache.delete(accountId);
      return { id };
    },
  };
}

export type DialerCalendar = ReturnType<typeof createDialerCalendar>;
