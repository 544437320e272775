import type { Db, Sql } from '../../db/connection.js';
import { notFound, SqlState } from '../../http/errors.js';

export interface SubAccountRow {
  id: string;
  parentId: string;
  label: string | null;
  externalRef: string | null;
  status: 'draft' | 'active' | 'suspended' | 'closed';
  markupPct: string | null;
  dailySpendCap: string | null;
  maxConcurrentCalls: number | null;
  creditLimit: string;
  currency: string;
  portalEmail: string | null;
  autoSuspended: boolean;
  sipUsername: string | null;
  /** Made with a test key: test keys only, simulated traffic, limits on test credit. */
  test: boolean;
  balance: string;
  createdAt: Date;
  updatedAt: Date;
}

export interface SettingsRow {
  operatorId: string;
  defaultMarkupPct: string;
  defaultBillingIncrement: number;
  minMarginPct: string;
  subLowBalanceThreshold: string;
  defaultDailySpendCap: string | null;
  defaultMaxConcurrentCalls: number | null;
  brandName: string | null;
  brandColor: string | null;
  brandLogoUrl: string | null;
  requireTrunkApproval: boolean;
  requireTrunkReadiness: boolean;
}

export interface SettingsPatch {
  defaultMarkupPct?: string | undefined;
  subLowBalanceThreshold?: string | undefined;
  defaultDailySpendCap?: string | null | undefined;
  defaultMaxConcurrentCalls?: number | null | undefined;
  brandName?: string | undefined;
  brandColor?: string | undefined;
  brandLogoUrl?: string | undefined;
}

export function createApplicationRepo(sql: Sql) {
  const select = (db: Db, now: Date) => db`
    select a.id, a.parent_id, a.label, a.external_ref, a.status, s.markup_pct::text, s.daily_spend_cap::text,
           s.max_concurrent_calls, s.credit_limit::text, s.currency, s.portal_email, s.test,
           coalesce(l.cap_suspended_day = (${now}::timestamptz at time zone 'UTC')::date, false) as auto_suspended,
           c.username as sip_username, coalesce(l.balance, 0)::text as balance, a.created_at, greatest(a.updated_at, s.updated_at) as updated_at
    from accounts a
    join sub_accounts s on s.account_id = a.id
    left join ledger_accounts l on l.owner_id = a.id and l.kind = 'customer'
    left join sip_credentials c on c.account_id = a.id`;

  return {
    async insertSub(
      db: Db,
      s: {
        id: string;
        parentId: string;
        markupPct: string | null;
        dailySpendCap: string | null;
        maxConcurrentCalls: number | null;
        creditLimit: string;
        currency: string;
        test: boolean;
        username: string;
        ha1: string;
      },
    ) {
      await db`
        insert into sub_accounts (account_id, parent_id, markup_pct, daily_spend_cap, max_concurrent_calls, credit_limit, currency, test)
        values (${s.id}, ${s.parentId}, ${s.markupPct}::numeric, ${s.dailySpendCap}::numeric, ${s.maxConcurrentCalls},
                ${s.creditLimit}::numeric, ${s.currency}, ${s.test})`;
      await db`insert into sip_credentials (username, account_id, ha1) values (${s.username}, ${s.id}, ${s.ha1})`;
    },

    async get(id: string, now: Date, db: Db = sql): Promise<SubAccountRow | undefined> {
      const [row] = await db<SubAccountRow[]>`${select(db, now)} where a.id = ${id}`;
      return row;
    },

    async list(
      parentId: string,
      now: Date,
      q: {
        cursor?: string | undefined;
        limit: number;
        search?: string | undefined;
        status?: string | undefined;
        lowBelow?: string | null;
      },
    ) {
      const filters = sql`
        a.parent_id = ${parentId}
        ${q.search ? sql`and (a.label ilike ${'%' + q.search.replace(/[\\%_]/g, '\\$&') + '%'} or a.external_ref ilike ${'%' + q.search.replace(/[\\%_]/g, '\\$&') + '%'})` : sql``}
        ${q.status === 'suspended' ? sql`and (a.status = 'suspended' or coalesce(l.cap_suspended_day = (${now}::timestamptz at time zone 'UTC')::date, false))` : sql``}
        ${q.status && q.status !== 'suspended' ? sql`and a.status = ${q.status} and not coalesce(l.cap_suspended_day = (${now}::timestamptz at time zone 'UTC')::date, false)` : sql``}
        ${q.lowBelow ? sql`and coalesce(l.balance, 0) < ${q.lowBelow}::numeric` : sql``}`;
      const rows = await sql<SubAccountRow[]>`
        ${select(sql, now)} where ${filters} ${q.cursor ? sql`and a.id < ${q.cursor}::uuid` : sql``}
        order by a.id desc limit ${q.limit + 1}`;
      const [count] = await sql<{ n: number }[]>`
        select count(*)::int as n from accounts a join sub_accounts s on s.account_id = a.id
        left join ledger_accounts l on l.owner_id = a.id and l.kind = 'customer' where ${filters}`;
      return { rows, total: count!.n };
    },

    async updateHa1(id: string, username: string, ha1: string, now: Date) {
      await sql`update sip_credentials set username = ${username}, ha1 = ${ha1}, rotated_at = ${now} where account_id = ${id}`;
    },

    async lookupSip(username: string) {
      const [row] = await sql<
        { ha1: string; accountId: string; parentId: string | null; status: string; test: boolean }[]
      >`
        select c.ha1, c.account_id, a.parent_id, a.status, coalesce(s.test, false) as test
        from sip_credentials c join accounts a on a.id = c.account_id left join sub_accounts s on s.account_id = c.account_id
        where c.username = ${username}`;
      return row;
    },

    async settings(operatorId: string, db: Db = sql): Promise<SettingsRow> {
      await db`insert into application_settings (operator_id) values (${operatorId}) on conflict do nothing`;
      const [row] = await db<SettingsRow[]>`
        select operator_id, default_markup_pct::text, default_billing_increment, min_margin_pct::text,
               sub_low_balance_threshold::text, default_daily_spend_cap::text, default_max_concurrent_calls,
               brand_name, brand_color, brand_logo_url, require_trunk_approval, require_trunk_readiness
        from application_settings where operator_id = ${operatorId}`;
      return row!;
    },

    async updateSettings(db: Db, operatorId: string, p: SettingsPatch, now: Date) {
      const values: Record<string, string | number | Date | null> = { updated_at: now };
      const put = (col: string, v: string | number | null | undefined) => {
        if (v !== undefined) values[col] = v;
      };
      put('default_markup_pct', p.defaultMarkupPct);
      put('sub_low_balance_threshold', p.subLowBalanceThreshold);
      put('default_daily_spend_cap', p.defaultDailySpendCap);
      put('default_max_concurrent_calls', p.defaultMaxConcurrentCalls);
      put('brand_name', p.brandName);
      put('brand_color', p.brandColor);
      put('brand_logo_url', p.brandLogoUrl);
      await db`update application_settings set ${db(values)} where operator_id = ${operatorId}`;
    },

    /** Subs following the operator's default cap (their own is null). */
    async subsOnDefaultCap(db: Db, operatorId: string) {
      return db<{ id: string; creditLimit: string; test: boolean }[]>`
        select account_id as id, credit_limit::text, test from sub_accounts where parent_id = ${operatorId} and daily_spend_cap is null`;
    },

    async openSubCount(operatorId: string): Promise<number> {
      const [row] = await sql<{ n: number }[]>`
        select count(*)::int as n from accounts a join sub_accounts s on s.account_id = a.id
        where a.parent_id = ${operatorId} and a.status <> 'closed'`;
      return row!.n;
    },

    async totals(operatorId: string) {
      const [row] = await sql<{ subCount: number; activeSubCount: number; aggregateBalance: string }[]>`
        select count(*)::int as sub_count, (count(*) filter (where a.status = 'active'))::int as active_sub_count,
               coalesce(sum(l.balance), 0)::text as aggregate_balance
        from accounts a join sub_accounts s on s.account_id = a.id
        left join ledger_accounts l on l.owner_id = a.id and l.kind = 'customer'
        where a.parent_id = ${operatorId}`;
      return row!;
    },

    /** Live spend of the operator's subs per UTC day and sub, with the part credited to the operator (its margin). */
    async analytics(operatorId: string, now: Date, days: number) {
      return sql<
        {
          day: string;
          subId: string;
          label: string | null;
          calls: number;
          sms: number;
          revenue: string;
          margin: string;
        }[]
      >`
        with subs as (select id, label from accounts where parent_id = ${operatorId}),
        e as (
          select e.posting_id, e.owner_id, e.type, e.amount, e.related_entity_type, (e.created_at at time zone 'UTC')::date as day
          from entries e join subs s on s.id = e.owner_id
          where e.account_kind = 'customer' and e.type in ('charge', 'platform_fee', 'refund')
            and e.created_at >= ((${now}::timestamptz at time zone 'UTC')::date - (${days}::int - 1))::timestamp at time zone 'UTC'),
        m as (
          select x.posting_id, sum(x.amount) as amount from entries x
          where x.owner_id = ${operatorId} and x.account_kind = 'seller_payable' and x.posting_id in (select posting_id from e)
          group by x.posting_id)
        select to_char(e.day, 'YYYY-MM-DD') as day, e.owner_id as sub_id, s.label,
               count(distinct e.posting_id) filter (where e.related_entity_type = 'call' and e.type <> 'refund')::int as calls,
               count(distinct e.posting_id) filter (where e.related_entity_type in ('sms', 'message') and e.type <> 'refund')::int as sms,
               (-sum(e.amount))::text as revenue,
               coalesce((select sum(m.amount) from m where m.posting_id in (select e2.posting_id from e e2 where e2.owner_id = e.owner_id and e2.day = e.day)), 0)::text as margin
        from e join subs s on s.id = e.owner_id
        group by e.day, e.owner_id, s.label order by e.day`;
    },

    /** A sub-account's markup terms: its own, its operator's default, and its route markups. */
    async markupTerms(subId: string) {
      const [row] = await sql<
        { markupPct: string | null; defaultMarkupPct: string | null; routeIds: string[]; routePcts: string[] }[]
      >`
        select s.markup_pct::text, st.default_markup_pct::text,
               coalesce(array_agg(m.route_id) filter (where m.route_id is not null), '{}') as route_ids,
               coalesce(array_agg(m.markup_pct::text) filter (where m.route_id is not null), '{}') as route_pcts
        from sub_accounts s
        left join application_settings st on st.operator_id = s.parent_id
        left join sub_account_route_markups m on m.sub_account_id = s.account_id
        where s.account_id = ${subId}
        group by s.markup_pct, st.default_markup_pct`;
      return row;
    },

    routeMarkups: (subId: string) =>
      sql<{ routeId: string; markupPct: string; createdAt: Date; updatedAt: Date }[]>`
        select route_id, markup_pct::text, created_at, updated_at from sub_account_route_markups
        where sub_account_id = ${subId} order by created_at, route_id`,

    /** Sets one route's markup; NOT_FOUND for a route that does not exist. */
    async putRouteMarkup(subId: string, routeId: string, markupPct: string, now: Date) {
      try {
        const [row] = await sql<{ routeId: string; markupPct: string; createdAt: Date; updatedAt: Date }[]>`
          insert into sub_account_route_markups (sub_account_id, route_id, markup_pct, created_at, updated_at)
          values (${subId}, ${routeId}, ${markupPct}::numeric, ${now}, ${now})
          on conflict (sub_account_id, route_id) do update set markup_pct = excluded.markup_pct, updated_at = excluded.updated_at
          returning route_id, markup_pct::text, created_at, updated_at`;
        return row!;
      } catch (err) {
        if ((err as { code?: string }).code === SqlState.FOREIGN_KEY_VIOLATION) throw notFound('Route');
        throw err;
      }
    },

    async deleteRouteMarkup(subId: string, routeId: string) {
      const rows = await sql`
        delete from sub_account_route_markups where sub_account_id = ${subId} and route_id = ${routeId} returning route_id`;
      return rows.length > 0;
    },

    /** Subs a daily cap suspended on an earlier day that have not been announced as resumed. */
    async capTransitions(now: Date) {
      const suspended = await sql<{ id: string; parentId: string }[]>`
        update sub_accounts s set auto_suspended_day = l.cap_suspended_day
        from ledger_accounts l
        where l.owner_id = s.account_id and l.kind = 'customer'
          and l.cap_suspended_day = (${now}::timestamptz at time zone 'UTC')::date and s.auto_suspended_day is null
        returning s.account_id as id, s.parent_id`;
      const resumed = await sql<{ id: string; parentId: string }[]>`
        update sub_accounts s set auto_suspended_day = null
        where s.auto_suspended_day is not null and s.auto_suspended_day < (${now}::timestamptz at time zone 'UTC')::date
        returning s.account_id as id, s.parent_id`;
      return { suspended, resumed };
    },
  };
}

export type ApplicationRepo = ReturnType<typeof createApplicationRepo>;
