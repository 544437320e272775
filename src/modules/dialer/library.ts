import type { Sql } from '../../db/connection.js';
import { notFound, validationError, type ErrorDetail } from '../../http/errors.js';
import type { Clock } from '../../platform/clock.js';
import { isE164Digits } from '../../platform/e164.js';
import { newId } from '../../platform/ids.js';
import { countSegments } from '../../messaging/segments.js';
import { numberDigits } from './campaigns.js';
import { isTimeZone } from './window.js';

export interface ContactInput {
  number: string;
  name?: string | undefined;
  fields?: Record<string, string> | undefined;
}

interface TemplateRow {
  id: string;
  name: string;
  body: string;
  createdAt: Date;
  updatedAt: Date;
}

const templateView = (r: TemplateRow) => ({
  id: r.id,
  name: r.name,
  body: r.body,
  createdAt: r.createdAt.toISOString(),
  updatedAt: r.updatedAt.toISOString(),
});

interface ContactListRow {
  id: string;
  accountId: string;
  name: string;
  count: number;
  createdAt: Date;
}

export const contactListView = (r: ContactListRow) => ({
  id: r.id,
  userId: r.accountId,
  name: r.name,
  count: r.count,
  createdAt: r.createdAt.toISOString(),
});

interface CliSetRow {
  id: string;
  accountId: string;
  name: string;
  clis: string[];
  createdAt: Date;
}

const cliSetView = (r: CliSetRow) => ({
  id: r.id,
  userId: r.accountId,
  name: r.name,
  clis: r.clis.join('\n'),
  createdAt: r.createdAt.toISOString(),
});

/** The dialer's saved records: SMS templates, contact lists and simple caller-ID sets. */
export function createLibraryService(deps: { sql: Sql; clock: Clock }) {
  const { sql, clock } = deps;

  function numbersOrFail(list: readonly string[], path: string): string[] {
    const problems: ErrorDetail[] = [];
    const out: string[] = [];
    list.forEach((raw, i) => {
      const n = numberDigits(raw);
      if (!isE164Digits(n)) problems.push({ path: `${path}/${i}`, message: 'must be an E.164 number' });
      else out.push(n);
    });
    if (problems.length) throw validationError(problems.slice(0, 100));
    return out;
  }

  return {
    // Placeholders such as {{name}} are stored as written: no per-recipient merge is applied (spec).
    async createTemplate(accountId: string, input: { name: string; body: string }) {
      const now = clock.now();
      const [r] = await sql<TemplateRow[]>`
        insert into dialer_templates (id, account_id, name, body, created_at, updated_at)
        values (${newId()}, ${accountId}, ${input.name}, ${input.body}, ${now}, ${now})
        returning id, name, body, created_at, updated_at`;
      return templateView(r!);
    },

    async templates(accountId: string, q: { cursor?: string | undefined; limit: number }) {
      const rows = await sql<TemplateRow[]>`
        select id, name, body, created_at, updated_at from dialer_templates
        where account_id = ${accountId} ${q.cursor ? sql`and id < ${q.cursor}` : sql``}
        order by id desc limit ${q.limit + 1}`;
      return rows.map(templateView);
    },

    async updateTemplate(
      accountId: string,
      id: string,
      input: { name?: string | undefined; body?: string | undefined },
    ) {
      const [r] = await sql<TemplateRow[]>`
        update dialer_templates set name = coalesce(${input.name ?? null}, name), body = coalesce(${input.body ?? null}, body),
               updated_at = ${clock.now()}
        where id = ${id} and account_id = ${accountId}
        returning id, name, body, created_at, updated_at`;
      if (!r) throw notFound('Template');
      return templateView(r);
    },

    async template(accountId: string, id: string) {
      const [r] = await sql<TemplateRow[]>`
        select id, name, body, created_at, updated_at from dialer_templates where id = ${id} and account_id = ${accountId}`;
      if (!r) throw notFound('Template');
      return templateView(r);
    },

    /**
     * How the template goes out as an SMS: as written (placeholders are not merged), with the
     * encoding and segment count the SMS path bills, and the placeholder names it holds.
     */
    async previewTemplate(accountId: string, id: string) {
      const t = await this.template(accountId, id);
      const info = countSegments(t.body);
      const names = [...t.body.matchAll(/\{\{\s*([^{}]+?)\s*\}\}/g)].map((m) => m[1]!);
      return {
        id: t.id,
        body: t.body,
        characters: [...t.body].length,
        encoding: info.encoding === 'gsm7' ? ('GSM-7' as const) : ('UCS-2' as const),
        segments: info.segments,
        placeholders: [...new Set(names)],
      };
    },

    async deleteTemplate(accountId: string, id: string) {
      const r = await sql`delete from dialer_templates where id = ${id} and account_id = ${accountId}`;
      if (r.count === 0) throw notFound('Template');
      return { id, message: 'Template deleted' };
    },

    async createContactList(
      accountId: string,
      input: { name: string; numbers: string[]; contacts?: ContactInput[] | undefined },
    ) {
      const numbers = numbersOrFail(input.numbers, 'numbers');
      const extra = input.contacts ?? [];
      const extraDigits = numbersOrFail(
        extra.map((c) => c.number),
        'contacts',
      );
      const byNumber = new Map<
        string,
        { number: string; name: string | null; fields: Record<string, string> | null }
      >();
      for (const n of numbers) byNumber.set(n, { number: n, name: null, fields: null });
      extra.forEach((c, i) => {
        byNumber.set(extraDigits[i]!, { number: extraDigits[i]!, name: c.name ?? null, fields: c.fields ?? null });
      });
      const rows = [...byNumber.values()];
      const id = newId();
      const now = clock.now();
      await sql.begin(async (tx) => {
        await tx`insert into dialer_contact_lists (id, account_id, name, count, created_at)
                 values (${id}, ${accountId}, ${input.name}, ${rows.length}, ${now})`;
        for (let i = 0; i < rows.length; i += 5000) {
          const part = rows.slice(i, i + 5000);
          await tx`
            insert into dialer_contacts (list_id, position, number, name, fields)
            select ${id}::uuid, p, number, name, fields::jsonb
            from unnest(${part.map((_, j) => i + j)}::int[], ${part.map((r) => r.number)}::text[],
                        ${part.map((r) => r.name) as string[]}::text[],
                        ${part.map((r) => (r.fields ? JSON.stringify(r.fields) : null)) as string[]}::text[])
                 as t (p, number, name, fields)`;
        }
      });
      return { id, userId: accountId, name: input.name, count: rows.length, createdAt: now.toISOString() };
    },

    async contactLists(accountId: string, q: { cursor?: string | undefined; limit: number }) {
      const rows = await sql<ContactListRow[]>`
        select id, account_id, name, count, created_at from dialer_contact_lists
        where account_id = ${accountId} ${q.cursor ? sql`and id < ${q.cursor}` : sql``}
        order by id desc limit ${q.limit + 1}`;
      return rows.map(contactListView);
    },

    /** The list's contacts in their order (numbers in E.164 with '+'). */
    async contacts(accountId: string, id: string) {
      const [list] = await sql<{ id: string; name: string; count: number; createdAt: Date }[]>`
        select id, name, count, created_at from dialer_contact_lists where id = ${id} and account_id = ${accountId}`;
      if (!list) throw notFound('Contact list');
      const rows = await sql<{ number: string; name: string | null; fields: Record<string, string> | null }[]>`
        select number, name, fields from dialer_contacts where list_id = ${id} order by position`;
      return { list, contacts: rows.map((r) => ({ number: `+${r.number}`, name: r.name, fields: r.fields ?? {} })) };
    },

    async renameContactList(accountId: string, id: string, name: string) {
      const [r] = await sql<ContactListRow[]>`
        update dialer_contact_lists set name = ${name} where id = ${id} and account_id = ${accountId}
        returning id, account_id, name, count, created_at`;
      if (!r) throw notFound('Contact list');
      return contactListView(r);
    },

    async deleteContactList(accountId: string, id: string) {
      const r = await sql`delete from dialer_contact_lists where id = ${id} and account_id = ${accountId}`;
      if (r.count === 0) throw notFound('Contact list');
      return { id };
    },

    async createCliSet(accountId: string, input: { name: string; clis: string[] }) {
      const clis = [...new Set(numbersOrFail(input.clis, 'clis'))].map((n) => `+${n}`);
      if (clis.length === 0) throw validationError([{ path: 'clis', message: 'give at least one caller ID' }]);
      const id = newId();
      const now = clock.now();
      await sql`insert into dialer_cli_sets (id, account_id, name, clis, created_at)
                values (${id}, ${accountId}, ${input.name}, ${clis}, ${now})`;
      return { id, userId: accountId, name: input.name, clis: clis.join('\n'), createdAt: now.toISOString() };
    },

    /** Adds caller IDs to one of the account's sets (those already in it are kept once). */
    async addToCliSet(accountId: string, id: string, input: { clis: string[] }) {
      const more = numbersOrFail(input.clis, 'clis').map((n) => `+${n}`);
      const [row] = await sql<CliSetRow[]>`
        update dialer_cli_sets
           set clis = (select array_agg(distinct c order by c) from unnest(clis || ${more}::text[]) as c)
         where id = ${id} and account_id = ${accountId}
        returning id, account_id, name, clis, created_at`;
      if (!row) throw notFound('Caller-ID set');
      return cliSetView(row);
    },

    async cliSets(accountId: string, q: { cursor?: string | undefined; limit: number }) {
      const rows = await sql<CliSetRow[]>`
        select id, account_id, name, clis, created_at from dialer_cli_sets
        where account_id = ${accountId} ${q.cursor ? sql`and id < ${q.cursor}` : sql``}
        order by id desc limit ${q.limit + 1}`;
      return rows.map(cliSetView);
    },

    async cliSet(accountId: string, id: string) {
      const [r] = await sql<CliSetRow[]>`
        select id, account_id, name, clis, created_at from dialer_cli_sets where id = ${id} and account_id = ${accountId}`;
      if (!r) throw notFound('Caller-ID set');
      return cliSetView(r);
    },

    /** Renames a set or replaces its caller IDs; campaigns using it present the new ones from their next call. */
    async updateCliSet(
      accountId: string,
      id: string,
      input: { name?: string | undefined; clis?: string[] | undefined },
    ) {
      const clis = input.clis ? [...new Set(numbersOrFail(input.clis, 'clis'))].map((n) => `+${n}`) : null;
      if (clis && clis.length === 0) throw validationError([{ path: 'clis', message: 'give at least one caller ID' }]);
      const [r] = await sql<CliSetRow[]>`
        update dialer_cli_sets set name = coalesce(${input.name ?? null}, name), clis = coalesce(${clis}::text[], clis)
        where id = ${id} and account_id = ${accountId}
        returning id, account_id, name, clis, created_at`;
      if (!r) throw notFound('Caller-ID set');
      return cliSetView(r);
    },

    async deleteCliSet(accountId: string, id: string) {
      const r = await sql`delete from dialer_cli_sets where id = ${id} and account_id = ${accountId}`;
      if (r.count === 0) throw notFound('Caller-ID set');
      return { id };
    },

    /**
     * The zone caller-ID stats count days in: `tz` when given (an IANA zone, else 400 naming `tz`), else
     * the campaign's `windowTz` when one campaign is asked for, else the account's profile zone, else UTC.
     */
    async statsZone(accountId: string, q: { tz?: string | undefined; campaignId?: string | undefined }) {
      if (q.tz !== undefined) {
        if (!isTimeZone(q.tz))
          throw validationError([{ path: 'tz', message: 'must be an IANA time zone such as Europe/London' }]);
        return q.tz;
      }
      if (q.campaignId) {
        const [c] = await sql<{ windowTz: string | null }[]>`
          select window_tz from dialer_campaigns where id = ${q.campaignId} and account_id = ${accountId}`;
        if (c?.windowTz) return c.windowTz;
      }
      const [p] = await sql<{ timeZone: string }[]>`
        select time_zone from account_profiles where account_id = ${accountId}`;
      return p && isTimeZone(p.timeZone) ? p.timeZone : 'UTC';
    },

    /** Answer-rate figures per caller ID the account's campaigns used (the `/dialer/caller-ids` stats). */
    async callerIdStats(accountId: string, q: { campaignId?: string | undefined; from: Date; to: Date; today: Date }) {
      const rows = await sql<
        { cli: string; calls: number; answered: number; callsToday: number; talkSeconds: string; lastUsedAt: Date }[]
      >`
        select cli, count(*)::int as calls,
               count(*) filter (where status in ('completed', 'sent'))::int as answered,
               count(*) filter (where started_at >= ${q.today})::int as calls_today,
               coalesce(sum(duration_seconds), 0)::text as talk_seconds,
               max(started_at) as last_used_at
        from dialer_attempts
        where account_id = ${accountId} and cli is not null and started_at >= ${q.from} and started_at < ${q.to}
          ${q.campaignId ? sql`and campaign_id = ${q.campaignId}` : sql``}
        group by cli order by calls desc, cli`;
      return rows.map((r) => ({
        cli: `+${r.cli}`,
        calls: r.calls,
        answered: r.answered,
        answerRate: r.calls ? Math.round((r.answered / r.calls) * 10000) / 10000 : 0,
        callsToday: r.callsToday,
        talkSeconds: Number(r.talkSeconds),
        lastUsedAt: r.lastUsedAt.toISOString(),
      }));
    },
  };
}

export type LibraryService = ReturnType<typeof createLibraryService>;
