import type { Db } from '../../db/connection.js';

export interface DncRow {
  id: string;
  kind: 'number' | 'prefix';
  value: string;
  note: string | null;
  source: 'api' | 'import';
  createdAt: Date;
}

export interface DncInsert {
  id: string;
  kind: 'number' | 'prefix';
  value: string;
  note: string | null;
}

/** Every prefix of a digit string, itself included: a check looks them all up in one index probe each. */
export function prefixesOf(digits: string): string[] {
  const out: string[] = [];
  for (let i = 1; i <= digits.length; i++) out.push(digits.slice(0, i));
  return out;
}

export function createDncRepo(sql: Db) {
  return {
    /** Inserts the entries not yet listed; returns how many were new. */
    async insertMany(accountId: string, rows: DncInsert[], source: 'api' | 'import', at: Date): Promise<number> {
      if (rows.length === 0) return 0;
      const r = await sql`
        insert into dnc_entries (id, account_id, kind, value, note, source, created_at)
        select id, ${accountId}::uuid, kind, value, note, ${source}, ${at}
        from unnest(${rows.map((x) => x.id)}::uuid[], ${rows.map((x) => x.kind)}::text[],
                    ${rows.map((x) => x.value)}::text[], ${rows.map((x) => x.note) as string[]}::text[])
             as t (id, kind, value, note)
        on conflict (account_id, value, kind) do nothing`;
      return r.count;
    },

    async list(
      accountId: string,
      q: { kind?: string | undefined; search?: string | undefined; cursor?: string | undefined; limit: number },
    ): Promise<DncRow[]> {
      return sql<DncRow[]>`
        select id, kind, value, note, source, created_at from dnc_entries
        where account_id = ${accountId}
          ${q.kind ? sql`and kind = ${q.kind}` : sql``}
          ${q.search ? sql`and value like ${`${q.search}%`}` : sql``}
          ${q.cursor ? sql`and id < ${q.cursor}` : sql``}
        order by id desc limit ${q.limit}`;
    },

    async remove(accountId: string, id: string): Promise<boolean> {
      const r = await sql`delete from dnc_entries where account_id = ${accountId} and id = ${id}`;
      return r.count > 0;
    },

    /** The entry that blocks `digits` (the whole number, else its longest listed prefix), or null. */
    async match(accountId: string, digits: string): Promise<DncRow | null> {
      const [row] = await sql<DncRow[]>`
        select id, kind, value, note, source, created_at from dnc_entries
        where account_id = ${accountId}
          and ((kind = 'number' and value = ${digits}) or (kind = 'prefix' and value = any (${prefixesOf(digits)}::text[])))
        order by kind = 'number' desc, length(value) desc limit 1`;
      return row ?? null;
    },

    /**
     * Which of `numbers` (digits) are blocked, in one query for a batch: each number is looked up
     * whole, and cut at the lengths the account's prefixes have (a skip scan of the partial index of
     * migration 308, at most 16 probes), so a batch costs a probe per number and per prefix length
     * in use rather than one per digit. The unnest is not made distinct here (the service already
     * dedupes): its row estimate then stays the array's length, and a large batch gets a hash join.
     */
    async blockedAmong(accountId: string, numbers: string[]): Promise<Set<string>> {
      if (numbers.length === 0) return new Set();
      const rows = await sql<{ n: string }[]>`
        with recursive lens (l) as (
          select min(length(value)) from dnc_entries where account_id = ${accountId} and kind = 'prefix'
          union all
          select (select min(length(value)) from dnc_entries
                  where account_id = ${accountId} and kind = 'prefix' and length(value) > lens.l)
          from lens where lens.l is not null
        )
        select t.n from unnest(${numbers}::text[]) as t (n)
        join dnc_entries e on e.account_id = ${accountId} and e.kind = 'number' and e.value = t.n
        union
        select t.n from unnest(${numbers}::text[]) as t (n)
        join lens on lens.l <= length(t.n)
        join dnc_entries e on e.account_id = ${accountId} and e.kind = 'prefix' and e.value = left(t.n, lens.l)`;
      return new Set(rows.map((r) => r.n));
    },
  };
}

export type DncRepo = ReturnType<typeof createDncRepo>;
