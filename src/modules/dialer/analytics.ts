import { Decimal } from 'decimal.js';
import { getCountries, getCountryCallingCode } from 'libphonenumber-js';
import type { PendingQuery, Row } from 'postgres';
import type { Sql } from '../../db/connection.js';
import type { CampaignRow } from './repo.js';

/** Plain words for the causes an attempt can end with (Q.850 names from the call plane, and the dialer's own). */
const CAUSE_LABELS: Record<string, string> = {
  NO_ANSWER: 'No answer',
  USER_BUSY: 'Busy',
  CALL_REJECTED: 'Rejected by the called network',
  UNALLOCATED_NUMBER: 'Number does not exist',
  INVALID_NUMBER_FORMAT: 'Invalid number format',
  INCOMPATIBLE_DESTINATION: 'Incompatible destination',
  NETWORK_OUT_OF_ORDER: 'Network out of order',
  NORMAL_CIRCUIT_CONGESTION: 'Route congested',
  NORMAL_TEMPORARY_FAILURE: 'Temporary failure',
  RECOVERY_ON_TIMER_EXPIRE: 'No response from the route',
  ORIGINATOR_CANCEL: 'Cancelled before answer',
  NORMAL_UNSPECIFIED: 'Unspecified failure',
  ROUTE_UNAVAILABLE: 'No route could take the call',
  INTERRUPTED: 'Interrupted by a restart of the exchange',
  INTERNAL_ERROR: 'Internal error',
  DNC_LISTED: 'On the do-not-call list',
};

const label = (code: string) => CAUSE_LABELS[code] ?? code.replace(/_/g, ' ').toLowerCase();

/**
 * Plain words for the dispositions accounts use most; any other code (the account's own, up to 40 of
 * `[a-z0-9_]`) reads as its words with a capital.
 */
const DISPOSITION_LABELS: Record<string, string> = {
  interested: 'Interested',
  not_interested: 'Not interested',
  callback: 'Call back',
  call_back: 'Call back',
  wrong_number: 'Wrong number',
  voicemail: 'Voicemail',
  left_message: 'Message left',
  sale: 'Sale',
  appointment: 'Appointment set',
  do_not_call: 'Asked not to be called',
  dnc: 'Asked not to be called',
  hung_up: 'Hung up',
  language_barrier: 'Language barrier',
};

/** The label shown beside a disposition code. */
export function dispositionLabel(code: string): string {
  const known = DISPOSITION_LABELS[code];
  if (known) return known;
  const words = code.replace(/_+/g, ' ').trim();
  return words ? words[0]!.toUpperCase() + words.slice(1) : code;
}

/** Calling code → the main country of that code (libphonenumber lists every country sharing one). */
const MAIN: Record<string, string> = {
  '1': 'US',
  '7': 'RU',
  '44': 'GB',
  '47': 'NO',
  '61': 'AU',
  '39': 'IT',
  '262': 'RE',
  '212': 'MA',
  '358': 'FI',
  '590': 'GP',
  '599': 'CW',
  '290': 'SH',
};
const byCode = new Map<string, string>();
for (const c of getCountries()) {
  const code = getCountryCallingCode(c);
  if (!byCode.has(code)) byCode.set(code, MAIN[code] ?? c);
}

/** The calling code and country a number (digits) belongs to. */
export function destinationOf(digits: string): { destination: string; country: string | null } {
  for (let len = 1; len <= 3; len++) {
    const code = digits.slice(0, len);
    const country = byCode.get(code);
    if (country) return { destination: `+${code}`, country };
  }
  return { destination: `+${digits.slice(0, 3)}`, country: null };
}

const rate = (num: number, den: number) => (den > 0 ? Math.round((num / den) * 10000) / 10000 : 0);
const money = (d: Decimal.Value) => new Decimal(d).toFixed(6);
const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

interface Bucket {
  k: string;
  attempts: number;
  answered: number;
  talk: string;
  spend: string;
}

function bucketsView(rows: Bucket[]) {
  return rows.map((r) => ({
    attempts: r.attempts,
    answered: r.answered,
    asr: rate(r.answered, r.attempts),
    talkMinutes: Math.round((Number(r.talk) / 60) * 100) / 100,
    spend: money(r.spend),
  }));
}

type Frag = PendingQuery<Row[]>;

const ANSWERED = `status in ('completed', 'sent')`;

export function createDialerAnalytics(sql: Sql) {
  /** Attempts grouped by `key` (an SQL expression over dialer_attempts a) within `where`. */
  function grouped(key: Frag, where: Frag) {
    return sql<Bucket[]>`
      select ${key}::text as k, count(*)::int as attempts, count(*) filter (where ${sql.unsafe(ANSWERED)})::int as answered,
             coalesce(sum(duration_seconds), 0)::text as talk, coalesce(sum(cost + fee), 0)::numeric(20,6)::text as spend
      from dialer_attempts a where ${where} group by 1 order by 1`;
  }

  /** The account's dispositions on the attempts within `where`, most used first, with labels. */
  async function dispositionCodes(where: Frag) {
    const rows = await sql<{ code: string; n: number; answered: number; lastAt: Date }[]>`
      select disposition as code, count(*)::int as n,
             count(*) filter (where ${sql.unsafe(ANSWERED)})::int as answered, max(disposition_at) as last_at
      from dialer_attempts a where ${where} and a.disposition is not null
      group by 1 order by 2 desc, 1`;
    return rows.map((r) => ({
      code: r.code,
      label: dispositionLabel(r.code),
      count: r.n,
      answered: r.answered,
      lastAt: r.lastAt.toISOString(),
    }));
  }

  async function destinations(where: Frag) {
    const rows = await grouped(sql`left(a.number, 4)`, where);
    const by = new Map<
      string,
      { destination: string; country: string | null; attempts: number; answered: number; spend: Decimal }
    >();
    for (const r of rows) {
      const d = destinationOf(r.k);
      const cur = by.get(d.destination) ?? { ...d, attempts: 0, answered: 0, spend: new Decimal(0) };
      cur.attempts += r.attempts;
      cur.answered += r.answered;
      cur.spend = cur.spend.plus(r.spend);
      by.set(d.destination, cur);
    }
    return [...by.values()]
      .sort((a, b) => b.attempts - a.attempts)
      .slice(0, 50)
      .map((d) => ({ ...d, asr: rate(d.answered, d.attempts), spend: money(d.spend) }));
  }

  function headline(a: {
    dialed: number;
    answered: number;
    failed: number;
    attempts: number;
    answeredAttempts: number;
    talk: number;
    spend: string;
  }) {
    const spend = new Decimal(a.spend);
    const minutes = a.talk / 60;
    return {
      dialed: a.dialed,
      answered: a.answered,
      failed: a.failed,
      connectRate: rate(a.answered, a.dialed),
      acd: a.answeredAttempts ? Math.round((a.talk / a.answeredAttempts) * 10) / 10 : 0,
      talkMinutes: Math.round(minutes * 100) / 100,
      spend: money(spend),
      costPerAnswered: money(a.answered ? spend.div(a.answered) : 0),
      costPerMinute: money(minutes > 0 ? spend.div(minutes) : 0),
    };
  }

  return {
    async campaign(c: CampaignRow) {
      const tz = c.windowTz ?? 'UTC';
      const where = sql`a.campaign_id = ${c.id}`;
      const [totals] = await sql<{ attempts: number; answered: number; talk: string; spend: string }[]>`
        select count(*)::int as attempts, count(*) filter (where ${sql.unsafe(ANSWERED)})::int as answered,
               coalesce(sum(duration_seconds) filter (where ${sql.unsafe(ANSWERED)}), 0)::text as talk,
               coalesce(sum(cost + fee), 0)::numeric(20,6)::text as spend
        from dialer_attempts a where ${where}`;
      const states = await sql<{ state: string; lastStatus: string | null; n: number }[]>`
        select state, last_status, count(*)::int as n from dialer_numbers where campaign_id = ${c.id} group by 1, 2`;
      const dispositions: Record<string, number> = {
        answered: 0,
        no_answer: 0,
        busy: 0,
        failed: 0,
        dnc_blocked: 0,
        pending: 0,
        dialing: 0,
      };
      for (const s of states) {
        const k =
          s.state === 'blocked'
            ? 'dnc_blocked'
            : s.state === 'failed'
              ? s.lastStatus === 'no_answer' || s.lastStatus === 'busy'
                ? s.lastStatus
                : 'failed'
              : s.state;
        dispositions[k] = (dispositions[k] ?? 0) + s.n;
      }
      const causes = await sql<{ code: string; n: number }[]>`
        select coalesce(cause, 'NORMAL_UNSPECIFIED') as code, count(*)::int as n from dialer_attempts a
        where ${where} and not (${sql.unsafe(ANSWERED)}) group by 1 order by 2 desc`;
      const byHour = await grouped(sql`extract(hour from a.started_at at time zone ${tz})::int`, where);
      const byDow = await grouped(sql`extract(dow from a.started_at at time zone ${tz})::int`, where);
      const daily = await grouped(sql`(a.started_at at time zone ${tz})::date`, where);
      const retries = await grouped(sql`a.attempt`, where);
      const hours = Array.from(
        { length: 24 },
        (_, h) =>
          byHour.find((r) => Number(r.k) === h) ?? { k: String(h), attempts: 0, answered: 0, talk: '0', spend: '0' },
      );
      const best = hours
        .filter((h) => h.attempts > 0)
        .sort((a, b) => rate(b.answered, b.attempts) - rate(a.answered, a.attempts) || b.attempts - a.attempts)[0];
      const t = totals!;
      return {
        campaign: { id: c.id, name: c.name, status: c.status, kind: c.kind },
        headline: {
          ...headline({
            dialed: c.numbersDialed,
            answered: c.numbersAnswered,
            failed: c.numbersFailed,
            attempts: t.attempts,
            answeredAttempts: t.answered,
            talk: Number(t.talk),
            spend: t.spend,
          }),
          totalNumbers: c.totalNumbers,
          pending: (dispositions['pending'] ?? 0) + (dispositions['dialing'] ?? 0),
          asr: rate(t.answered, t.attempts),
          bestHour: best ? { hour: Number(best.k), asr: rate(best.answered, best.attempts), tz } : null,
        },
        dispositions,
        dispositionCodes: await dispositionCodes(where),
        failureCauses: causes.map((r) => ({ code: r.code, label: label(r.code), count: r.n })),
        byHour: bucketsView(hours).map((b, hour) => ({ hour, ...b })),
        byDayOfWeek: DAYS.map((name, day) => {
          const r = byDow.find((x) => Number(x.k) === day) ?? {
            k: String(day),
            attempts: 0,
            answered: 0,
            talk: '0',
            spend: '0',
          };
          return { day, name, ...bucketsView([r])[0]! };
        }),
        byDestination: await destinations(where),
        retryEffectiveness: retries.map((r) => ({ attempt: Number(r.k), ...bucketsView([r])[0]! })),
        daily: daily.map((r) => ({ date: r.k, ...bucketsView([r])[0]! })),
      };
    },

    async overview(accountId: string, from: Date, to: Date) {
      const where = sql`a.account_id = ${accountId} and a.started_at >= ${from} and a.started_at < ${to}`;
      const statuses = await sql<{ status: string; n: number }[]>`
        select status, count(*)::int as n from dialer_campaigns where account_id = ${accountId} group by 1`;
      const campaigns: Record<string, number> = {
        draft: 0,
        ready: 0,
        running: 0,
        paused: 0,
        completed: 0,
        failed: 0,
        total: 0,
      };
      for (const s of statuses) {
        campaigns[s.status] = s.n;
        campaigns['total']! += s.n;
      }
      const [t] = await sql<
        {
          dialed: number;
          answered: number;
          failed: number;
          attempts: number;
          answeredAttempts: number;
          talk: string;
          spend: string;
        }[]
      >`
        select count(distinct (campaign_id, number))::int as dialed,
               count(distinct (campaign_id, number)) filter (where ${sql.unsafe(ANSWERED)})::int as answered,
               count(*) filter (where not (${sql.unsafe(ANSWERED)}))::int as failed,
               count(*)::int as attempts, count(*) filter (where ${sql.unsafe(ANSWERED)})::int as answered_attempts,
               coalesce(sum(duration_seconds), 0)::text as talk, coalesce(sum(cost + fee), 0)::numeric(20,6)::text as spend
        from dialer_attempts a where ${where}`;
      const byHour = await grouped(sql`extract(hour from a.started_at at time zone 'UTC')::int`, where);
      const daily = await grouped(sql`(a.started_at at time zone 'UTC')::date`, where);
      const top = await sql<
        { id: string; name: string; status: string; kind: string; attempts: number; answered: number; spend: string }[]
      >`
        select c.id, c.name, c.status, c.kind, count(*)::int as attempts,
               count(*) filter (where a.status in ('completed', 'sent'))::int as answered,
               coalesce(sum(a.cost + a.fee), 0)::numeric(20,6)::text as spend
        from dialer_attempts a join dialer_campaigns c on c.id = a.campaign_id
        where ${where} group by c.id order by attempts desc limit 5`;
      return {
        window: { from: from.toISOString(), to: to.toISOString() },
        campaigns,
        headline: headline({ ...t!, talk: Number(t!.talk) }),
        topDestinations: (await destinations(where)).slice(0, 10),
        byHour: Array.from({ length: 24 }, (_, hour) => {
          const r = byHour.find((x) => Number(x.k) === hour) ?? {
            k: String(hour),
            attempts: 0,
            answered: 0,
            talk: '0',
            spend: '0',
          };
          return { hour, ...bucketsView([r])[0]! };
        }),
        daily: daily.map((r) => ({ date: r.k, ...bucketsView([r])[0]! })),
        topCampaigns: top.map((r) => ({ ...r, asr: rate(r.answered, r.attempts) })),
        dispositionCodes: await dispositionCodes(where),
      };
    },
  };
}

export type DialerAnalytics = ReturnType<typeof createDialerAnalytics>;
