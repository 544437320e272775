import type { Db, Sql } from '../../../db/connection.js';
import { notFound, ruleError, validationError } from '../../../http/errors.js';
import type { Clock } from '../../../platform/clock.js';
import { newId } from '../../../platform/ids.js';
import type { Actor, SwitchAudit } from './audit.js';
import { staleWrite } from './trunks.js';
import { moneyIn } from './views.js';

export const DisputeStatuses = ['open', 'submitted', 'accepted', 'rejected', 'settled', 'withdrawn'] as const;
export type DisputeStatus = (typeof DisputeStatuses)[number];

/**
 * Dispute status moves (docs/switch.md): `settled` and `withdrawn` are final; a rejected dispute
 * can be reopened. `closedAt` is set on accepted-then-settled, rejected and withdrawn, cleared on reopen.
 */
export const DISPUTE_MOVES: Readonly<Record<DisputeStatus, readonly DisputeStatus[]>> = {
  open: ['submitted', 'accepted', 'rejected', 'withdrawn'],
  submitted: ['accepted', 'rejected', 'withdrawn'],
  accepted: ['settled'],
  rejected: ['open', 'withdrawn'],
  settled: [],
  withdrawn: [],
};
const CLOSED: ReadonlySet<DisputeStatus> = new Set(['rejected', 'settled', 'withdrawn']);

export interface DisputeFields {
  periodStart?: string;
  periodEnd?: string;
  ourAmount?: number | string;
  theirAmount?: number | string;
  currency?: string;
  reason?: string | null;
  resolution?: string | null;
  invoiceRef?: string | null;
  status?: DisputeStatus;
}

const DAY_MS = 86_400_000;

/** An ISO date or timestamp, kept as its UTC date. */
function dateIn(path: string, v: string): string {
  const d = /^\d{4}-\d{2}-\d{2}$/.test(v) ? new Date(`${v}T00:00:00Z`) : new Date(v);
  if (!/^\d{4}-\d{2}-\d{2}/.test(v) || Number.isNaN(d.getTime()))
    throw validationError([{ path, message: 'must be an ISO date (YYYY-MM-DD) or timestamp' }]);
  return d.toISOString().slice(0, 10);
}

function columns(f: DisputeFields): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(f)) {
    if (v === undefined || k === 'status') continue;
    if (k === 'ourAmount' || k === 'theirAmount') out[k] = moneyIn(`/${k}`, v as number | string);
    else if (k === 'periodStart' || k === 'periodEnd') out[k] = dateIn(`/${k}`, v as string);
    else out[k] = v;
  }
  return out;
}

function select(db: Db, supplierId: string, id?: string) {
  return db<(Record<string, unknown> & { id: string; status: DisputeStatus; version: number; respondBy: Date })[]>`
    select id, supplier_id, period_start::text as period_start, period_end::text as period_end,
      our_amount::text as our_amount, their_amount::text as their_amount, currency, status, reason, resolution,
      invoice_ref, opened_at, respond_by, closed_at, version, created_at, updated_at
    from switch_disputes where supplier_id = ${supplierId} ${id ? db`and id = ${id}` : db``}
    order by id desc`;
}

/** Disputes with a provider over a billing period's amounts: money numeric(20,6), six places on the wire. */
export function createDisputeService(deps: { sql: Sql; clock: Clock; audit: SwitchAudit }) {
  const { sql, clock, audit } = deps;

  async function provider(db: Db, accountId: string, id: string) {
    const [p] = await db<{ disputeDays: number; currency: string }[]>`
      select dispute_days, currency from switch_providers where id = ${id} and account_id = ${accountId}`;
    if (!p) throw notFound('Provider');
    return p;
  }

  const checkPeriod = (start: unknown, end: unknown) => {
    if (typeof start === 'string' && typeof end === 'string' && end < start)
      throw validationError([{ path: '/periodEnd', message: 'must not be before periodStart' }]);
  };

  return {
    async list(accountId: string, supplierId: string) {
      await provider(sql, accountId, supplierId);
      const now = clock.now().getTime();
      return (await select(sql, supplierId)).map((d) => ({
        ...d,
        daysLeft: Math.ceil((d.respondBy.getTime() - now) / DAY_MS),
      }));
    },

    async open(
      accountId: string,
      actor: Actor,
      supplierId: string,
      body: DisputeFields & {
        periodStart: string;
        periodEnd: string;
        ourAmount: number | string;
        theirAmount: number | string;
      },
    ) {
      if (body.status !== undefined && body.status !== 'open' && body.status !== 'submitted')
        throw validationError([{ path: '/status', message: 'a new dispute is open or submitted' }]);
      const set = columns(body);
      checkPeriod(set['periodStart'], set['periodEnd']);
      return sql.begin(async (tx) => {
        const p = await provider(tx, accountId, supplierId);
        const now = clock.now();
        const id = newId();
        await tx`insert into switch_disputes ${tx({
          currency: p.currency,
          ...set,
          id,
          accountId,
          supplierId,
          status: body.status ?? 'open',
          openedAt: now,
          respondBy: new Date(now.getTime() + p.disputeDays * DAY_MS),
          createdAt: now,
          updatedAt: now,
        })}`;
        const [after] = await select(tx, supplierId, id);
        await audit.record(tx, actor, {
          accountId,
          providerId: supplierId,
          entity: 'dispute',
          entityId: id,
          action: 'created',
          before: null,
          after,
        });
        return after!;
      });
    },

    async update(
      accountId: string,
      actor: Actor,
      supplierId: string,
      id: string,
      version: number,
      patch: DisputeFields,
    ) {
      const set = columns(patch);
      return sql.begin(async (tx) => {
        await provider(tx, accountId, supplierId);
        const [before] = await select(tx, supplierId, id);
        if (!before) throw notFound('Dispute');
        checkPeriod(set['periodStart'] ?? before['periodStart'], set['periodEnd'] ?? before['periodEnd']);
        const to = patch.status;
        if (to !== undefined && to !== before.status) {
          if (!DISPUTE_MOVES[before.status].includes(to))
            throw ruleError(`A dispute cannot move from ${before.status} to ${to}`);
          set['status'] = to;
          set['closedAt'] = CLOSED.has(to) ? clock.now() : null;
        }
        const rows = await tx`
          update switch_disputes set ${tx({ ...set, version: version + 1, updatedAt: clock.now() })}
          where id = ${id} and version = ${version}`;
        if (rows.count === 0) throw staleWrite();
        const [after] = await select(tx, supplierId, id);
        await audit.record(tx, actor, {
          accountId,
          providerId: supplierId,
          entity: 'dispute',
          entityId: id,
          action: to ? `status:${to}` : 'updated',
          before,
          after,
        });
        return after!;
      });
    },
  };
}

export type DisputeService = ReturnType<typeof createDisputeService>;
