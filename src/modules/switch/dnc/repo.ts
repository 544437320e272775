import type { Db, Sql } from '../../../db/connection.js';

/** A Switch account's honor settings with its customers' overrides (customer id → honor). */
export interface HonorSettings {
  calls: boolean;
  sms: boolean;
  overrides: Map<string, boolean>;
  updatedAt: Date;
}

export interface HitRow {
  id: string;
  customerId: string;
  channel: 'voice' | 'sms';
  numberMasked: string;
  entryKind: 'number' | 'prefix';
  createdAt: Date;
}

export interface HitInsert {
  id: string;
  accountId: string;
  customerId: string;
  channel: 'voice' | 'sms';
  numberMasked: string;
  entryKind: 'number' | 'prefix';
  at: Date;
}

export type ScrubPhase = 'queued' | 'scrubbing' | 'done' | 'failed';

export interface ScrubRow {
  id: string;
  phase: ScrubPhase;
  fileBytes: string;
  total: number;
  listed: number;
  clean: number;
  invalid: number;
  truncated: boolean;
  error: string | null;
  createdAt: Date;
  finishedAt: Date | null;
}

export interface ScrubCounts {
  total: number;
  listed: number;
  clean: number;
  invalid: number;
  truncated: boolean;
}

/** Where a scrub stands at its last batch: the counts, and the bytes of each list written by then. */
export interface ScrubCheckpoint {
  counts: ScrubCounts;
  cleanBytes: number;
  listedBytes: number;
}

/** A scrub of this daemon's left open when it stopped, to resume. */
export interface OpenScrub extends ScrubCheckpoint {
  id: string;
  accountId: string;
}

/**
 * The Switch DNC's own rows: honor settings, hits and scrub jobs. The list itself is the dnc
 * module's (`dnc_entries`): only its counts are read here, for the summary.
 */
export function createSwitchDncRepo(sql: Sql) {
  return {
    async honor(accountId: string): Promise<HonorSettings | null> {
      const [row] = await sql<
        { calls: boolean; sms: boolean; updatedAt: Date; overrides: { c: string; h: boolean }[] }[]
      >`
        select h.calls, h.sms, h.updated_at,
          coalesce((select json_agg(json_build_object('c', o.customer_id, 'h', o.honor))
                    from switch_dnc_customer_honor o where o.account_id = h.account_id), '[]') as overrides
        from switch_dnc_honor h where h.account_id = ${accountId}`;
      if (!row) return null;
      return {
        calls: row.calls,
        sms: row.sms,
        updatedAt: row.updatedAt,
        overrides: new Map(row.overrides.map((o) => [o.c, o.h])),
      };
    },

    /** Sets the account's honor settings and customer overrides (null removes one) in one transaction. */
    async setHonor(
      accountId: string,
      input: { calls: boolean; sms: boolean; customers: { customerId: string; honor: boolean | null }[] },
      at: Date,
    ): Promise<void> {
      const write = async (tx: Db) => {
        await tx`
          insert into switch_dnc_honor (account_id, calls, sms, updated_at)
          values (${accountId}, ${input.calls}, ${input.sms}, ${at})
          on conflict (account_id) do update set calls = excluded.calls, sms = excluded.sms, updated_at = excluded.updated_at`;
        const set = input.customers.filter((c) => c.honor !== null);
        const cleared = input.customers.filter((c) => c.honor === null).map((c) => c.customerId);
        if (set.length > 0) {
          await tx`
            insert into switch_dnc_customer_honor (account_id, customer_id, honor, updated_at)
            select ${accountId}::uuid, c::uuid, h::boolean, ${at}
            from unnest(${set.map((c) => c.customerId)}::text[], ${set.map((c) => String(c.honor))}::text[]) as t (c, h)
            on conflict (account_id, customer_id) do update set honor = excluded.honor, updated_at = excluded.updated_at`;
        }
        if (cleared.length > 0) {
          await tx`
            delete from switch_dnc_customer_honor where account_id = ${accountId} and customer_id = any (${cleared}::uuid[])`;
        }
      };
      await sql.begin(write);
    },

    async insertHit(h: HitInsert): Promise<void> {
      await sql`
        insert into switch_dnc_hits (id, account_id, customer_id, channel, number_masked, entry_kind, created_at)
        values (${h.id}, ${h.accountId}, ${h.customerId}, ${h.channel}, ${h.numberMasked}, ${h.entryKind}, ${h.at})`;
    },

    async hits(
      accountId: string,
      q: { customerId?: string | undefined; channel?: string | undefined; cursor?: string | undefined; limit: number },
    ): Promise<HitRow[]> {
      return sql<HitRow[]>`
        select id, customer_id, channel, number_masked, entry_kind, created_at from switch_dnc_hits
        where account_id = ${accountId}
          ${q.customerId ? sql`and customer_id = ${q.customerId}` : sql``}
          ${q.channel ? sql`and channel = ${q.channel}` : sql``}
          ${q.cursor ? sql`and id < ${q.cursor}` : sql``}
        order by id desc limit ${q.limit}`;
    },

    /** Hits per customer among `customerIds`: all time and since `since`. */
    async hitCounts(
      accountId: string,
      customerIds: string[],
      since: Date,
    ): Promise<Map<string, { total: number; recent: number; lastAt: Date | null }>> {
      if (customerIds.length === 0) return new Map();
      const rows = await sql<{ customerId: string; total: number; recent: number; lastAt: Date | null }[]>`
        select customer_id, count(*)::int as total, count(*) filter (where created_at >= ${since})::int as recent,
               max(created_at) as last_at
        from switch_dnc_hits where account_id = ${accountId} and customer_id = any (${customerIds}::uuid[])
        group by customer_id`;
      return new Map(rows.map((r) => [r.customerId, r]));
    },

    /** What the summary shows: the list's size (the dnc module's table) and the hits. */
    async summary(accountId: string, since: Date) {
      const [row] = await sql<
        {
          numbers: number;
          prefixes: number;
          lastAddedAt: Date | null;
          hits: number;
          recentHits: number;
          voiceHits: number;
          smsHits: number;
          lastHitAt: Date | null;
        }[]
      >`
        select e.numbers, e.prefixes, e.last_added_at, h.hits, h.recent_hits, h.voice_hits, h.sms_hits, h.last_hit_at
        from (select count(*) filter (where kind = 'number')::int as numbers,
                     count(*) filter (where kind = 'prefix')::int as prefixes,
                     max(created_at) as last_added_at
              from dnc_entries where account_id = ${accountId}) e,
             (select count(*)::int as hits, count(*) filter (where created_at >= ${since})::int as recent_hits,
                     count(*) filter (where created_at >= ${since} and channel = 'voice')::int as voice_hits,
                     count(*) filter (where created_at >= ${since} and channel = 'sms')::int as sms_hits,
                     max(created_at) as last_hit_at
              from switch_dnc_hits where account_id = ${accountId}) h`;
      return row!;
    },

    /**
     * Which of `numbers` (digits) the account lists as whole numbers: one index probe each on the
     * dnc module's `dnc_entries_value_idx`. A scrub checks prefixes apart (`prefixes`).
     */
    async listedNumbersAmong(accountId: string, numbers: string[]): Promise<Set<string>> {
      if (numbers.length === 0) return new Set();
      const rows = await sql<{ value: string }[]>`
        select e.value from dnc_entries e
        where e.account_id = ${accountId} and e.kind = 'number' and e.value = any (${numbers}::text[])`;
      return new Set(rows.map((r) => r.value));
    },

    /** The account's listed prefixes (a list holds few; a scrub keeps them in memory for its run). */
    async prefixes(accountId: string): Promise<string[]> {
      const rows = await sql<{ value: string }[]>`
        select value from dnc_entries where account_id = ${accountId} and kind = 'prefix'`;
      return rows.map((r) => r.value);
    },

    /** A queued scrub of `node`, the daemon whose state directory holds its file. */
    async createScrub(s: { id: string; accountId: string; node: string; fileBytes: number; at: Date }): Promise<void> {
      await sql`
        insert into switch_dnc_scrubs (id, account_id, node, phase, file_bytes, created_at, heartbeat_at)
        values (${s.id}, ${s.accountId}, ${s.node}, 'queued', ${s.fileBytes}, ${s.at}, now())`;
    },

    async scrub(accountId: string, id: string): Promise<ScrubRow | null> {
      const [row] = await sql<ScrubRow[]>`
        select id, phase, file_bytes, total, listed, clean, invalid, truncated, error, created_at, finished_at
        from switch_dnc_scrubs where account_id = ${accountId} and id = ${id}`;
      return row ?? null;
    },

    /** Scrubs still running or queued for the account (a cap on concurrent jobs). */
    async openScrubs(accountId: string): Promise<number> {
      const [row] = await sql<{ n: number }[]>`
        select count(*)::int as n from switch_dnc_scrubs where account_id = ${accountId} and phase in ('queued', 'scrubbing')`;
      return row!.n;
    },

    async recentScrubs(accountId: string, limit: number): Promise<ScrubRow[]> {
      return sql<ScrubRow[]>`
        select id, phase, file_bytes, total, listed, clean, invalid, truncated, error, created_at, finished_at
        from switch_dnc_scrubs where account_id = ${accountId} order by id desc limit ${limit}`;
    },

    /** The scrub's checkpoint: its lists hold exactly `cleanBytes` and `listedBytes`, flushed, for these counts. */
    async checkpoint(id: string, k: ScrubCheckpoint): Promise<void> {
      const c = k.counts;
      await sql`
        update switch_dnc_scrubs set phase = 'scrubbing', total = ${c.total}, listed = ${c.listed}, clean = ${c.clean},
          invalid = ${c.invalid}, truncated = ${c.truncated}, clean_bytes = ${k.cleanBytes},
          listed_bytes = ${k.listedBytes}, heartbeat_at = now()
        where id = ${id}`;
    },

    async finish(id: string, c: ScrubCounts, at: Date): Promise<void> {
      await sql`
        update switch_dnc_scrubs set phase = 'done', total = ${c.total}, listed = ${c.listed}, clean = ${c.clean},
          invalid = ${c.invalid}, truncated = ${c.truncated}, finished_at = ${at}
        where id = ${id}`;
    },

    async fail(id: string, error: string, at: Date): Promise<void> {
      await sql`update switch_dnc_scrubs set phase = 'failed', error = ${error}, finished_at = ${at} where id = ${id}`;
    },

    /**
     * Scrubs of other daemons left open and silent for `staleSeconds` (database time): their daemon
     * has not come back to resume them (rows from before migration 310 have no node), so they are
     * failed and their owner uploads again.
     */
    async failAbandoned(node: string, staleSeconds: number, at: Date): Promise<number> {
      const r = await sql`
        update switch_dnc_scrubs set phase = 'failed',
          error = 'interrupted: the exchange holding the file stopped and has not come back; upload the file again',
          finished_at = ${at}
        where phase in ('queued', 'scrubbing') and node is distinct from ${node}
          and coalesce(heartbeat_at, created_at) < now() - make_interval(secs => ${staleSeconds})`;
      return r.count;
    },

    /** This daemon's scrubs left open when it stopped (killed or shut down), claimed to resume. */
    async claimOwn(node: string): Promise<OpenScrub[]> {
      const rows = await sql<
        {
          id: string;
          accountId: string;
          total: number;
          listed: number;
          clean: number;
          invalid: number;
          truncated: boolean;
          cleanBytes: string;
          listedBytes: string;
        }[]
      >`
        update switch_dnc_scrubs set resumes = resumes + 1, heartbeat_at = now()
        where node = ${node} and phase in ('queued', 'scrubbing')
        returning id, account_id, total, listed, clean, invalid, truncated, clean_bytes, listed_bytes`;
      return rows.map((r) => ({
        id: r.id,
        accountId: r.accountId,
        counts: { total: r.total, listed: r.listed, clean: r.clean, invalid: r.invalid, truncated: r.truncated },
        cleanBytes: Number(r.cleanBytes),
        listedBytes: Number(r.listedBytes),
      }));
    },
  };
}

export type SwitchDncRepo = ReturnType<typeof createSwitchDncRepo>;
