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

    /** Which of `numbers` (digits) are blocked, in one query for a batch. */
    async blockedAmong(accountId: string, numbers: string[]): Promise<Set<string>> {
      if (numbers.length === 0) return new Set();
      const rows = await sql<{ n: string }[]>`
        select n from unnest(${numbers}::text[]) as t (n)
        where exists (
          select 1 from dnc_entries e
          where e.account_id = ${accountId}
            and ((e.kind = 'number' and e.value = t.n)
              or (e.kind = 'prefix' and e.value = any (array(select left(t.n, i) from generate_series(1, length(t.n)) i)))))`;
      return new Set(rows.map((r) => r.n));
    },
  };
}

export type DncRepo = ReturnType<typeof createDncRepo>;
