import type { Db, Sql } from '../../db/connection.js';

export type CampaignStatus = 'draft' | 'ready' | 'running' | 'paused' | 'completed' | 'failed';

export interface CampaignRow {
  id: string;
  accountId: string;
  parentId: string | null;
  routeId: string;
  name: string;
  kind: 'voice' | 'sms';
  environment: 'live' | 'test';
  status: CampaignStatus;
  statusReason: string | null;
  messageBody: string | null;
  senderId: string | null;
  aiAgentId: string | null;
  actions: unknown[];
  language: string;
  targetAcd: string | null;
  targetAsr: string | null;
  notes: string | null;
  concurrency: number;
  maxCallDuration: number;
  callInterval: number;
  platformFeePerCall: string;
  cliSetId: string | null;
  cliStrategy: Record<string, unknown> | null;
  windowStartHour: number | null;
  windowEndHour: number | null;
  windowTz: string | null;
  maxAttempts: number;
  retryDelayMinutes: number;
  maxSpend: string | null;
  spent: string;
  totalNumbers: number;
  numbersDialed: number;
  numbersAnswered: number;
  numbersFailed: number;
  totalDurationSeconds: string;
  scheduleAt: Date | null;
  startedAt: Date | null;
  completedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
  totalClis: number;
}

const CAMPAIGN_COLUMNS = (sql: Db) => sql`
  c.id, c.account_id, c.parent_id, c.route_id, c.name, c.kind, c.environment, c.status, c.status_reason, c.message_body,
  c.sender_id, c.ai_agent_id, c.actions, c.language, c.target_acd, c.target_asr, c.notes, c.concurrency,
  c.max_call_duration, c.call_interval, c.platform_fee_per_call::numeric(20,6)::text as platform_fee_per_call,
  c.cli_set_id, c.cli_strategy, c.window_start_hour, c.window_end_hour, c.window_tz, c.max_attempts,
  c.retry_delay_minutes, c.max_spend::numeric(20,6)::text as max_spend, c.spent::numeric(20,6)::text as spent,
  c.total_numbers, c.numbers_dialed, c.numbers_answered, c.numbers_failed, c.total_duration_seconds,
  c.schedule_at, c.started_at, c.completed_at, c.created_at, c.updated_at,
  coalesce(cardinality(s.clis), 0)::int as total_clis`;

const IMPORT_COLUMNS = (sql: Db) =>
  sql`id, campaign_id, status, rows_read, imported, duplicates, invalid, errors, error, started_at, finished_at`;

export interface NumberClaim {
  id: string;
  number: string;
  attempts: number;
  name: string | null;
}

export interface AttemptInsert {
  id: string;
  campaignId: string;
  accountId: string;
  number: string;
  attempt: number;
  callId: string | null;
  cli: string | null;
  status: string;
  sipCode: number | null;
  cause: string | null;
  durationSeconds: number;
  cost: string;
  fee: string;
  startedAt: Date;
  endedAt: Date;
}

export interface ImportRow {
  id: string;
  campaignId: string;
  status: 'running' | 'completed' | 'failed';
  rowsRead: number;
  imported: number;
  duplicates: number;
  invalid: number;
  errors: { row: number; value: string; message: string }[];
  error: string | null;
  startedAt: Date;
  finishedAt: Date | null;
}

export function createDialerRepo(sql: Sql) {
  return {
    sql,

    async insertCampaign(tx: Db, row: Record<string, unknown>): Promise<void> {
      await tx`insert into dialer_campaigns ${tx(row as never)}`;
    },

    async campaign(db: Db, accountId: string | null, id: string, lock = false): Promise<CampaignRow | null> {
      const [row] = await db<CampaignRow[]>`
        select ${CAMPAIGN_COLUMNS(db)}
        from dialer_campaigns c left join dialer_cli_sets s on s.id = c.cli_set_id
        where c.id = ${id} ${accountId ? db`and c.account_id = ${accountId}` : db``}
        ${lock ? db`for update of c` : db``}`;
      return row ?? null;
    },

    async campaigns(
      accountId: string,
      q: { status?: string | undefined; search?: string | undefined; cursor?: string | undefined; limit: number },
    ): Promise<CampaignRow[]> {
      return sql<CampaignRow[]>`
        select ${CAMPAIGN_COLUMNS(sql)}
        from dialer_campaigns c left join dialer_cli_sets s on s.id = c.cli_set_id
        where c.account_id = ${accountId}
          ${q.status ? sql`and c.status = ${q.status}` : sql``}
          ${q.search ? sql`and c.name ilike ${`%${q.search.replace(/[\\%_]/g, '\\$&')}%`}` : sql``}
          ${q.cursor ? sql`and c.id < ${q.cursor}` : sql``}
        order by c.id desc limit ${q.limit}`;
    },

    async updateCampaign(tx: Db, id: string, fields: Record<string, unknown>): Promise<void> {
      await tx`update dialer_campaigns set ${tx(fields as never)} where id = ${id}`;
    },

    /** Campaigns this node should run: running or due, unclaimed, claimed by it, or left by a node whose claim lapsed. */
    async claimRunnable(node: string, now: Date, holdSeconds: number): Promise<string[]> {
      const rows = await sql<{ id: string }[]>`
        update dialer_campaigns set runner_node = ${node}, runner_until = ${now}::timestamptz + make_interval(secs => ${holdSeconds})
        where status in ('running', 'ready')
          and (runner_node is null or runner_node = ${node} or runner_until < ${now})
        returning id`;
      return rows.map((r) => r.id);
    },

    async releaseRunner(id: string, node: string): Promise<void> {
      await sql`update dialer_campaigns set runner_node = null, runner_until = null where id = ${id} and runner_node = ${node}`;
    },

    /**
     * Adds numbers not yet in the campaign; returns how many were new (and bumps `total_numbers` by
     * it). `unseen`: the caller knows none of `rows` is in the campaign (an import into a campaign
     * holding only what it stored, deduped across the file), so they go in without the conflict
     * check; a unique violation (23505) then means it was wrong.
     */
    async addNumbers(
      tx: Db,
      campaignId: string,
      rows: { number: string; name: string | null; fields: Record<string, string> | null }[],
      unseen = false,
    ): Promise<number> {
      if (rows.length === 0) return 0;
      const r = await tx`
        insert into dialer_numbers (campaign_id, number, name, fields)
        select ${campaignId}::uuid, number, name, fields::jsonb
        from unnest(${rows.map((x) => x.number)}::text[], ${rows.map((x) => x.name) as string[]}::text[],
                    ${rows.map((x) => (x.fields ? JSON.stringify(x.fields) : null)) as string[]}::text[])
             as t (number, name, fields)
        ${unseen ? tx`` : tx`on conflict (campaign_id, number) do nothing`}`;
      if (r.count > 0) {
        await tx`update dialer_campaigns set total_numbers = total_numbers + ${r.count} where id = ${campaignId}`;
      }
      return r.count;
    },

    /**
     * Pending numbers due now, oldest first (read only; the claim marks them). Ordered by the id
     * column: the `id::text` output would sort "100" before "98".
     */
    async due(campaignId: string, now: Date, limit: number): Promise<{ id: string; number: string }[]> {
      return sql<{ id: string; number: string }[]>`
        select id::text, number from dialer_numbers
        where campaign_id = ${campaignId} and state = 'pending' and next_at <= ${now}
        order by next_at, dialer_numbers.id limit ${limit}`;
    },

    /** Marks numbers on the do-not-call list as blocked; they count as failed, never dialled. */
    async block(campaignId: string, ids: string[], now: Date): Promise<void> {
      if (ids.length === 0) return;
      await sql.begin(async (tx) => {
        const r = await tx`
          update dialer_numbers set state = 'blocked', last_status = 'dnc', last_cause = 'DNC_LISTED', updated_at = ${now}
          where id = any (${ids}::bigint[]) and state = 'pending'`;
        await tx`update dialer_campaigns set numbers_failed = numbers_failed + ${r.count}, updated_at = ${now} where id = ${campaignId}`;
      });
    },

    /**
     * Takes numbers for dialling: the attempt is counted before the call is placed, so a crash
     * after this never lets the number be called beyond `maxAttempts`. `numbers_dialed` counts a
     * number on its first attempt, in the same transaction.
     */
    async claim(campaignId: string, items: { id: string; callId: string | null }[], now: Date): Promise<NumberClaim[]> {
      if (items.length === 0) return [];
      return sql.begin(async (tx) => {
        const rows = await tx<NumberClaim[]>`
          update dialer_numbers n set state = 'dialing', attempts = attempts + 1, last_call_id = v.call_id, updated_at = ${now}
          from unnest(${items.map((x) => x.id)}::bigint[], ${items.map((x) => x.callId) as string[]}::uuid[]) as v (id, call_id)
          where n.id = v.id and n.state = 'pending'
          returning n.id::text, n.number, n.attempts, n.name`;
        const first = rows.filter((r) => r.attempts === 1).length;
        if (first > 0) {
          await tx`update dialer_campaigns set numbers_dialed = numbers_dialed + ${first}, updated_at = ${now} where id = ${campaignId}`;
        }
        return rows;
      });
    },

    /** Gives a claim back when the call was never placed (a limit said "not now"): the attempt does not count. */
    async unclaim(campaignId: string, n: NumberClaim, retryAt: Date): Promise<void> {
      await sql.begin(async (tx) => {
        const r = await tx`
          update dialer_numbers set state = 'pending', attempts = attempts - 1, next_at = ${retryAt}, last_call_id = null
          where id = ${n.id} and state = 'dialing'`;
        if (r.count > 0 && n.attempts === 1) {
          await tx`update dialer_campaigns set numbers_dialed = numbers_dialed - 1 where id = ${campaignId}`;
        }
      });
    },

    /** Numbers left dialling by a daemon that stopped or died (crash recovery). */
    async dialing(campaignId: string): Promise<(NumberClaim & { lastCallId: string | null })[]> {
      return sql<(NumberClaim & { lastCallId: string | null })[]>`
        select id::text, number, attempts, name, last_call_id from dialer_numbers
        where campaign_id = ${campaignId} and state = 'dialing'`;
    },

    async counts(db: Db, campaignId: string): Promise<{ pending: number; dialing: number }> {
      const [r] = await db<{ pending: number; dialing: number }[]>`
        select count(*) filter (where state = 'pending')::int as pending,
               count(*) filter (where state = 'dialing')::int as dialing
        from dialer_numbers where campaign_id = ${campaignId} and state in ('pending', 'dialing')`;
      return r!;
    },

    /**
     * One attempt's end, in one statement (as atomic as a transaction, one round trip instead of
     * five): the number moves on only while it is still dialling, and only then are the attempt row
     * and the campaign's counters written. The campaign pauses with `pauseReason`, or with
     * `max_spend_reached` when this spend takes it to its budget. False: the number had moved on.
     */
    async recordAttempt(
      a: AttemptInsert,
      numberId: string,
      o: {
        state: 'answered' | 'failed' | 'pending';
        nextAt: Date | null;
        /** Money the campaign spent on the attempt: the call and the platform fee. */
        spent: string;
        now: Date;
        pauseReason: string | null;
      },
    ): Promise<boolean> {
      const [r] = await sql<{ moved: number }[]>`
        with n as (
          update dialer_numbers set state = ${o.state}, next_at = coalesce(${o.nextAt}::timestamptz, next_at),
                 last_status = ${a.status}, last_cause = ${a.cause}, last_call_id = ${a.callId}::uuid,
                 updated_at = ${o.now}
          where id = ${numberId} and state = 'dialing'
          returning id
        ), c as (
          update dialer_campaigns set
            numbers_answered = numbers_answered + ${o.state === 'answered' ? 1 : 0},
            numbers_failed = numbers_failed + ${o.state === 'failed' ? 1 : 0},
            total_duration_seconds = total_duration_seconds + ${a.durationSeconds},
            spent = spent + ${o.spent}::numeric,
            status = case when status = 'running' and (${o.pauseReason}::text is not null or spent + ${o.spent}::numeric >= max_spend)
                          then 'paused' else status end,
            status_reason = case when status = 'running' and (${o.pauseReason}::text is not null or spent + ${o.spent}::numeric >= max_spend)
                                 then coalesce(${o.pauseReason}::text, 'max_spend_reached') else status_reason end,
            updated_at = ${o.now}
          where id = ${a.campaignId} and exists (select 1 from n)
        ), i as (
          insert into dialer_attempts (id, campaign_id, account_id, number, attempt, call_id, cli, status, sip_code, cause,
                                       duration_seconds, cost, fee, started_at, ended_at)
          select ${a.id}::uuid, ${a.campaignId}::uuid, ${a.accountId}::uuid, ${a.number}::text, ${a.attempt}::int,
                 ${a.callId}::uuid, ${a.cli}::text, ${a.status}::text, ${a.sipCode}::int, ${a.cause}::text,
                 ${a.durationSeconds}::int, ${a.cost}::numeric, ${a.fee}::numeric, ${a.startedAt}::timestamptz,
                 ${a.endedAt}::timestamptz
          from n
        )
        select count(*)::int as moved from n`;
      return (r?.moved ?? 0) > 0;
    },

    /** Calls per caller ID of the account since `since` (least-used rotation and daily caps). */
    async cliUsage(accountId: string, since: Date): Promise<Map<string, number>> {
      const rows = await sql<{ cli: string; n: number }[]>`
        select cli, count(*)::int as n from dialer_attempts
        where account_id = ${accountId} and started_at >= ${since} and cli is not null group by cli`;
      return new Map(rows.map((r) => [r.cli, r.n]));
    },

    /** The campaign's settled spend as recorded now (the budget check's fresh figure). */
    async spent(campaignId: string): Promise<string> {
      const [r] = await sql<
        { spent: string }[]
      >`select spent::numeric(20,6)::text as spent from dialer_campaigns where id = ${campaignId}`;
      return r?.spent ?? '0';
    },

    async takeCliCursor(campaignId: string, n: number): Promise<number> {
      const [r] = await sql<{ c: string }[]>`
        update dialer_campaigns set cli_cursor = cli_cursor + ${n} where id = ${campaignId} returning cli_cursor - ${n} as c`;
      return Number(r!.c);
    },

    async cliSet(accountId: string, id: string): Promise<{ id: string; clis: string[] } | null> {
      const [r] = await sql<{ id: string; clis: string[] }[]>`
        select id, clis from dialer_cli_sets where id = ${id} and account_id = ${accountId}`;
      return r ?? null;
    },

    async insertImport(row: { id: string; campaignId: string; accountId: string; startedAt: Date }): Promise<void> {
      await sql`insert into dialer_imports (id, campaign_id, account_id, status, started_at)
                values (${row.id}, ${row.campaignId}, ${row.accountId}, 'running', ${row.startedAt})`;
    },

    async updateImport(
      db: Db,
      id: string,
      f: Partial<
        Pick<ImportRow, 'status' | 'rowsRead' | 'imported' | 'duplicates' | 'invalid' | 'error' | 'finishedAt'>
      > & {
        errors?: ImportRow['errors'];
      },
    ): Promise<void> {
      const { errors, ...rest } = f;
      const fields: Record<string, unknown> = { ...rest };
      if (errors) fields['errors'] = db.json(errors as never);
      await db`update dialer_imports set ${db(fields as never)} where id = ${id}`;
    },

    async imports(campaignId: string): Promise<ImportRow[]> {
      return sql<ImportRow[]>`
        select ${IMPORT_COLUMNS(sql)} from dialer_imports where campaign_id = ${campaignId} order by id desc limit 25`;
    },

    async importJob(campaignId: string, id: string): Promise<ImportRow | null> {
      const [row] = await sql<ImportRow[]>`
        select ${IMPORT_COLUMNS(sql)} from dialer_imports where campaign_id = ${campaignId} and id = ${id}`;
      return row ?? null;
    },

    /** Imports a daemon was reading when it stopped: they will not finish. */
    async failStaleImports(now: Date): Promise<void> {
      await sql`update dialer_imports set status = 'failed', error = 'The import was interrupted; numbers read so far were kept',
                finished_at = ${now} where status = 'running'`;
    },
  };
}

export type DialerRepo = ReturnType<typeof createDialerRepo>;
