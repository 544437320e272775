import type { Logger } from 'pino';
import type { Sql } from '../../db/connection.js';
import { notFound, validationError } from '../../http/errors.js';
import { Money, money6 } from '../../ledger/money.js';
import type { Clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import { emit } from '../../webhooks/emit.js';

export type AlertPeriod = 'day' | 'month';

interface AlertRow {
  id: string;
  accountId: string;
  period: AlertPeriod;
  threshold: string;
  enabled: boolean;
  lastFiredPeriod: string | null;
  lastFiredAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

const MAX_ALERTS = 20;

/** The UTC day or month a moment falls in, and when that period began. */
function periodOf(period: AlertPeriod, now: Date): { key: string; start: Date } {
  const iso = now.toISOString();
  return period === 'day'
    ? { key: iso.slice(0, 10), start: new Date(`${iso.slice(0, 10)}T00:00:00Z`) }
    : { key: iso.slice(0, 7), start: new Date(`${iso.slice(0, 7)}-01T00:00:00Z`) };
}

function present(a: AlertRow) {
  return {
    id: a.id,
    period: a.period,
    threshold: money6(a.threshold),
    enabled: a.enabled,
    lastFiredPeriod: a.lastFiredPeriod,
    lastFiredAt: a.lastFiredAt?.toISOString() ?? null,
    createdAt: a.createdAt.toISOString(),
    updatedAt: a.updatedAt.toISOString(),
  };
}

/**
 * Spending alerts: live spend (charges and fees net of refunds) of the current UTC day or month
 * reaching a threshold emits `billing.spending_alert` once per period.
 */
export function createSpendingAlerts(deps: { sql: Sql; clock: Clock; log: Logger }) {
  const { sql, clock } = deps;
  const cols = sql`id, account_id, period, threshold::text, enabled, last_fired_period, last_fired_at, created_at, updated_at`;

  async function own(accountId: string, id: string) {
    const [row] = await sql<
      AlertRow[]
    >`select ${cols} from billing_alerts where id = ${id} and account_id = ${accountId}`;
    if (!row) throw notFound('Spending alert');
    return row;
  }

  return {
    async list(accountId: string) {
      return (
        await sql<AlertRow[]>`select ${cols} from billing_alerts where account_id = ${accountId} order by id desc`
      ).map(present);
    },

    async create(accountId: string, input: { period: AlertPeriod; threshold: string; enabled?: boolean | undefined }) {
      const threshold = Money.parse(input.threshold);
      if (!threshold.isPositive()) throw validationError([{ path: 'threshold', message: 'must be greater than 0' }]);
      const [n] = await sql<
        { n: string }[]
      >`select count(*)::text as n from billing_alerts where account_id = ${accountId}`;
      if (Number(n!.n) >= MAX_ALERTS)
        throw validationError([{ path: 'period', message: `at most ${MAX_ALERTS} alerts` }]);
      const now = clock.now();
      const [row] = await sql<AlertRow[]>`
        insert into billing_alerts (id, account_id, period, threshold, enabled, created_at, updated_at)
        values (${newId()}, ${accountId}, ${input.period}, ${threshold.toString()}::numeric, ${input.enabled ?? true}, ${now}, ${now})
        returning ${cols}`;
      return present(row!);
    },

    async update(
      accountId: string,
      id: string,
      input: { threshold?: string | undefined; enabled?: boolean | undefined },
    ) {
      await own(accountId, id);
      const threshold = input.threshold === undefined ? null : Money.parse(input.threshold);
      if (threshold && !threshold.isPositive())
        throw validationError([{ path: 'threshold', message: 'must be greater than 0' }]);
      const [row] = await sql<AlertRow[]>`
        update billing_alerts set threshold = coalesce(${threshold?.toString() ?? null}::numeric, threshold),
               enabled = coalesce(${input.enabled ?? null}::boolean, enabled),
               -- A raised threshold may fire again in the same period.
               last_fired_period = case when ${threshold?.toString() ?? null}::numeric is not null then null else last_fired_period end,
               updated_at = ${clock.now()}
        where id = ${id} returning ${cols}`;
      return present(row!);
    },

    async remove(accountId: string, id: string) {
      await own(accountId, id);
      await sql`delete from billing_alerts where id = ${id}`;
    },

    /** One pass: alerts whose period's spend reached the threshold and that have not fired in it. */
    async check() {
      const now = clock.now();
      let fired = 0;
      for (const period of ['day', 'month'] as const) {
        const p = periodOf(period, now);
        const due = await sql<{ id: string; accountId: string; threshold: string; spend: string }[]>`
          select a.id, a.account_id, a.threshold::text, s.spend::text
          from billing_alerts a
          cross join lateral (
            select coalesce(-sum(e.amount), 0) as spend from entries e
            where e.owner_id = a.account_id and e.account_kind = 'customer'
              and e.type in ('charge', 'platform_fee', 'refund') and e.created_at >= ${p.start}) s
          where a.enabled and a.period = ${period} and a.last_fired_period is distinct from ${p.key}
            and s.spend >= a.threshold`;
        for (const a of due) {
          await sql.begin(async (tx) => {
            const rows = await tx`
              update billing_alerts set last_fired_period = ${p.key}, last_fired_at = ${now}
              where id = ${a.id} and last_fired_period is distinct from ${p.key} returning 1`;
            if (rows.length === 0) return; // another daemon fired it
            await emit(tx, {
              accountId: a.accountId,
              event: 'billing.spending_alert',
              data: { alertId: a.id, period, periodKey: p.key, threshold: money6(a.threshold), spend: money6(a.spend) },
              at: now,
            });
            fired++;
          });
        }
      }
      return fired;
    },
  };
}

export type SpendingAlerts = ReturnType<typeof createSpendingAlerts>;
