import type { Sql } from '../../db/connection.js';
import { notFound, ruleError } from '../../http/errors.js';
import { numberDigits } from './campaigns.js';
import { contactListView } from './library.js';
import { digitsOrFail } from './numbers.js';

/** The most members one contact list holds (the size `POST /dialer/contact-lists` takes). */
export const MAX_LIST_MEMBERS = 50_000;

interface MemberInput {
  number: string;
  name?: string | undefined;
  fields?: Record<string, string> | undefined;
}

/**
 * A contact list's members one by one: paged, added (a number already listed is a duplicate and
 * keeps its entry) and removed. `count` moves with every change, in the same transaction.
 */
export function createContactMembers(deps: { sql: Sql }) {
  const { sql } = deps;

  async function ownList(accountId: string, id: string) {
    const [list] = await sql<{ id: string }[]>`
      select id from dialer_contact_lists where id = ${id} and account_id = ${accountId}`;
    if (!list) throw notFound('Contact list');
  }

  return {
    async list(
      accountId: string,
      id: string,
      q: { search?: string | undefined; cursor?: string | undefined; limit: number },
    ) {
      await ownList(accountId, id);
      const prefix = q.search ? numberDigits(q.search).replace(/\D/g, '') : '';
      const rows = await sql<
        { position: number; number: string; name: string | null; fields: Record<string, string> | null }[]
      >`
        select position, number, name, fields from dialer_contacts where list_id = ${id}
          ${prefix ? sql`and number like ${`${prefix}%`}` : sql``}
          ${q.cursor ? sql`and position > ${Number(q.cursor)}` : sql``}
        order by position limit ${q.limit + 1}`;
      return rows.map((r) => ({
        id: String(r.position),
        number: `+${r.number}`,
        name: r.name,
        fields: r.fields ?? {},
      }));
    },

    async add(
      accountId: string,
      id: string,
      input: { numbers?: string[] | undefined; contacts?: MemberInput[] | undefined },
    ) {
      const given = [
        ...(input.numbers ?? []).map((number) => ({ number })),
        ...(input.contacts ?? []),
      ] as MemberInput[];
      const digits = digitsOrFail(
        given.map((g) => g.number),
        'numbers',
      );
      const rows = new Map<string, { number: string; name: string | null; fields: string | null }>();
      given.forEach((g, i) => {
        const n = digits[i]!;
        // A contact entry carries more than a bare number: it wins, as at list creation.
        if (!rows.has(n) || g.name !== undefined || g.fields !== undefined) {
          rows.set(n, { number: n, name: g.name ?? null, fields: g.fields ? JSON.stringify(g.fields) : null });
        }
      });
      return sql.begin(async (tx) => {
        const [list] = await tx<{ count: number }[]>`
          select count from dialer_contact_lists where id = ${id} and account_id = ${accountId} for update`;
        if (!list) throw notFound('Contact list');
        const fresh = [...rows.values()];
        const present = new Set(
          (
            await tx<{ number: string }[]>`
              select number from dialer_contacts where list_id = ${id} and number = any (${fresh.map((r) => r.number)}::text[])`
          ).map((r) => r.number),
        );
        const add = fresh.filter((r) => !present.has(r.number));
        if (list.count + add.length > MAX_LIST_MEMBERS) {
          throw ruleError(`A contact list holds at most ${MAX_LIST_MEMBERS} contacts`);
        }
        if (add.length) {
          await tx`
            insert into dialer_contacts (list_id, position, number, name, fields)
            select ${id}::uuid, (select coalesce(max(position), -1) from dialer_contacts where list_id = ${id}) + p, number, name, fields::jsonb
            from unnest(${add.map((r) => r.number)}::text[], ${add.map((r) => r.name) as string[]}::text[],
                        ${add.map((r) => r.fields) as string[]}::text[]) with ordinality as t (number, name, fields, p)`;
        }
        const [r] = await tx<Parameters<typeof contactListView>[0][]>`
          update dialer_contact_lists set count = count + ${add.length} where id = ${id}
          returning id, account_id, name, count, created_at`;
        return { added: add.length, duplicates: given.length - add.length, list: contactListView(r!) };
      });
    },

    async remove(accountId: string, id: string, number: string) {
      const [n] = digitsOrFail([number], 'number');
      return sql.begin(async (tx) => {
        const [list] = await tx`
          select 1 from dialer_contact_lists where id = ${id} and account_id = ${accountId} for update`;
        if (!list) throw notFound('Contact list');
        const r = await tx`delete from dialer_contacts where list_id = ${id} and number = ${n!}`;
        if (r.count === 0) throw notFound('Contact in this list');
        const [after] = await tx<{ count: number }[]>`
          update dialer_contact_lists set count = count - ${r.count} where id = ${id} returning count`;
        return { number: `+${n!}`, count: after!.count };
      });
    },
  };
}

export type ContactMembers = ReturnType<typeof createContactMembers>;
