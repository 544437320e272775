import type { Sql } from '../../db/connection.js';
import { notFound } from '../../http/errors.js';
import type { Clock } from '../../platform/clock.js';

const rate = (answered: number, calls: number) => (calls ? Math.round((answered / calls) * 10000) / 10000 : 0);

/**
 * Caller IDs in rotation, account-wide: one can be paused (flagged as spam by a carrier, a number
 * being ported) so that no campaign presents it until it is resumed, and read alone with its daily
 * answer rate. A caller ID belongs to the account when one of its caller-ID sets holds it or one of
 * its campaigns presented it.
 */
export function createCallerIdStates(deps: { sql: Sql; clock: Clock }) {
  const { sql, clock } = deps;

  async function known(accountId: string, cli: string): Promise<{ id: string; name: string }[]> {
    const sets = await sql<{ id: string; name: string }[]>`
      select id, name from dialer_cli_sets where account_id = ${accountId} and ${`+${cli}`} = any (clis) order by name, id`;
    if (sets.length) return sets;
    const [used] = await sql`select 1 from dialer_attempts where account_id = ${accountId} and cli = ${cli} limit 1`;
    if (!used) throw notFound('Caller ID');
    return [];
  }

  async function state(accountId: string, cli: string) {
    const [s] = await sql<{ status: 'active' | 'paused'; note: string | null; updatedAt: Date }[]>`
      select status, note, updated_at from dialer_caller_id_states where account_id = ${accountId} and cli = ${cli}`;
    return {
      status: s?.status ?? ('active' as const),
      note: s?.note ?? null,
      statusChangedAt: s?.updatedAt.toISOString() ?? null,
    };
  }

  return {
    /** The account's paused caller IDs (E.164 digits): the runner leaves them out of every rotation. */
    async paused(accountId: string): Promise<Set<string>> {
      const rows = await sql<{ cli: string }[]>`
        select cli from dialer_caller_id_states where account_id = ${accountId} and status = 'paused'`;
      return new Set(rows.map((r) => r.cli));
    },

    async setStatus(
      accountId: string,
      cli: string,
      input: { status: 'active' | 'paused'; note?: string | null | undefined },
    ) {
      await known(accountId, cli);
      await sql`
        insert into dialer_caller_id_states (account_id, cli, status, note, updated_at)
        values (${accountId}, ${cli}, ${input.status}, ${input.note ?? null}, ${clock.now()})
        on conflict (account_id, cli) do update set status = excluded.status, note = excluded.note, updated_at = excluded.updated_at`;
      return { cli: `+${cli}`, ...(await state(accountId, cli)) };
    },

    /** One caller ID over a window: totals, per local day of `tz`, per campaign, and the sets that hold it. */
    async detail(accountId: string, cli: string, q: { from: Date; to: Date; today: Date; tz: string }) {
      const sets = await known(accountId, cli);
      const scope = sql`account_id = ${accountId} and cli = ${cli} and started_at >= ${q.from} and started_at < ${q.to}`;
      const answered = sql`count(*) filter (where status in ('completed', 'sent'))::int`;
      const [[total], daily, byCampaign, [today]] = await Promise.all([
        sql<{ calls: number; answered: number; talkSeconds: string; lastUsedAt: Date | null }[]>`
          select count(*)::int as calls, ${answered} as answered,
                 coalesce(sum(duration_seconds), 0)::text as talk_seconds, max(started_at) as last_used_at
          from dialer_attempts where ${scope}`,
        sql<{ date: string; calls: number; answered: number }[]>`
          select (started_at at time zone ${q.tz})::date::text as date, count(*)::int as calls, ${answered} as answered
          from dialer_attempts where ${scope} group by 1 order by 1`,
        sql<{ campaignId: string; name: string; calls: number; answered: number }[]>`
          select a.campaign_id, c.name, count(*)::int as calls,
                 count(*) filter (where a.status in ('completed', 'sent'))::int as answered
          from dialer_attempts a join dialer_campaigns c on c.id = a.campaign_id
          where a.account_id = ${accountId} and a.cli = ${cli} and a.started_at >= ${q.from} and a.started_at < ${q.to}
          group by a.campaign_id, c.name order by calls desc, a.campaign_id`,
        sql<{ n: number }[]>`
          select count(*)::int as n from dialer_attempts
          where account_id = ${accountId} and cli = ${cli} and started_at >= ${q.today}`,
      ]);
      return {
        cli: `+${cli}`,
        ...(await state(accountId, cli)),
        tz: q.tz,
        calls: total!.calls,
        answered: total!.answered,
        answerRate: rate(total!.answered, total!.calls),
        callsToday: today!.n,
        talkSeconds: Number(total!.talkSeconds),
        lastUsedAt: total!.lastUsedAt?.toISOString() ?? null,
        daily: daily.map((d) => ({ ...d, answerRate: rate(d.answered, d.calls) })),
        byCampaign: byCampaign.map((b) => ({ ...b, answerRate: rate(b.answered, b.calls) })),
        sets,
      };
    },
  };
}

export type CallerIdStates = ReturnType<typeof createCallerIdStates>;
