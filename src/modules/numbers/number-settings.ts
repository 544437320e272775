import { Decimal } from 'decimal.js';
import type { Logger } from 'pino';
import type { Sql, TransactionSql } from '../../db/connection.js';
import { ruleError, validationError } from '../../http/errors.js';
import { money6 } from '../../ledger/money.js';
import type { Clock } from '../../platform/clock.js';
import * as dids from './did-repo.js';
import type { DidRow, EmergencyAddress } from './did-repo.js';
import { LIVE, releaseNow, type NumberManagement } from './manage.js';
import { presentDid } from './present.js';
import type { Provisioning } from './provisioning.js';

/** Countries whose numbers carry a CNAM (caller name) listing. */
const CNAM_COUNTRIES = new Set(['US', 'CA']);
const TAG = /^[A-Za-z0-9_.:-]{1,32}$/;
const MAX_TAGS = 20;
const YEAR_MS = 366 * 86_400_000;

type ChargeKind = 'order' | 'renewal' | 'reactivation' | 'sms_sent' | 'sms_received';

/**
 * The owner's settings of a rented number that are not routing: tags, caller name (CNAM),
 * emergency address, a scheduled release, bulk changes, the features read and the charges read.
 */
export function createNumberSettings(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  manage: NumberManagement;
  provisioning: Provisioning;
  /** `[numbers] ported_inbound_trunk` (empty: none). */
  portedInboundTrunk: string;
}) {
  const { sql, clock, log, manage, provisioning } = deps;
  const reread = async (id: string) => presentDid((await dids.byId(sql, id))!);
  const live = (d: DidRow) => {
    if (!LIVE.includes(d.status)) throw ruleError(`The number is ${d.status}`);
  };

  function checkTags(tags: string[], field = 'tags') {
    const kept = [...new Set(tags)];
    if (kept.length > MAX_TAGS) throw validationError([{ path: field, message: `at most ${MAX_TAGS} tags` }]);
    const bad = kept.findIndex((t) => !TAG.test(t));
    if (bad >= 0) throw validationError([{ path: `${field}/${bad}`, message: 'letters, digits, _ . : - (1 to 32)' }]);
    return kept;
  }

  /** One change of one number, under its row lock, with its history row. */
  async function change(
    viewerId: string,
    id: string,
    what: string,
    fn: (tx: TransactionSql, d: DidRow, at: Date) => unknown,
  ) {
    await sql.begin(async (tx) => {
      const d = await manage.own(viewerId, id, { tx });
      live(d);
      const at = clock.now();
      await fn(tx, d, at);
      await dids.event(tx, { didId: id, accountId: d.accountId, kind: 'settings_changed', at, data: { what } });
    });
    return reread(id);
  }

  return {
    setTags: (viewerId: string, id: string, tags: string[]) => {
      const kept = checkTags(tags);
      return change(
        viewerId,
        id,
        'tags',
        (tx, d, at) => tx`update dids set tags = ${kept}, updated_at = ${at} where id = ${d.id}`,
      );
    },

    async setCallerName(viewerId: string, id: string, name: string | null) {
      const d = await manage.own(viewerId, id);
      if (name !== null && !CNAM_COUNTRIES.has(d.countryCode ?? ''))
        throw ruleError('Caller name (CNAM) listings exist for US and Canadian numbers only');
      return change(viewerId, id, 'caller_name', async (tx, row, at) => {
        await tx`update dids set caller_name = ${name}, updated_at = ${at} where id = ${row.id}`;
        await provisioning.request(tx, row.id, 'cnam', name, at);
      });
    },

    async setEmergencyAddress(viewerId: string, id: string, a: EmergencyAddress | null) {
      const d = await manage.own(viewerId, id);
      if (a !== null && d.countryCode === null)
        throw ruleError("The number's country is not in the catalogue: no emergency address can be checked for it");
      if (a !== null && a.countryCode !== d.countryCode)
        throw validationError([{ path: 'countryCode', message: `must be the number's country (${d.countryCode})` }]);
      return change(viewerId, id, 'emergency_address', async (tx, row, at) => {
        await tx`update dids set emergency_address = ${a === null ? null : tx.json(a as never)}, updated_at = ${at}
                 where id = ${row.id}`;
        await provisioning.request(tx, row.id, 'emergency', a, at);
      });
    },

    /**
     * Schedules the number's release; the sweep releases it then. A renewal falling before that
     * time is still charged (the number is kept until the release).
     */
    async scheduleRelease(viewerId: string, id: string, releaseAt: Date) {
      const now = clock.now();
      if (releaseAt.getTime() <= now.getTime() || releaseAt.getTime() > now.getTime() + YEAR_MS)
        throw validationError([{ path: 'releaseAt', message: 'must be in the future, within a year' }]);
      await sql.begin(async (tx) => {
        const d = await manage.own(viewerId, id, { tx });
        live(d);
        await tx`update dids set release_at = ${releaseAt}, updated_at = ${now} where id = ${id}`;
        await dids.event(tx, {
          didId: id,
          accountId: d.accountId,
          kind: 'release_scheduled',
          at: now,
          data: { releaseAt: releaseAt.toISOString() },
        });
      });
      return reread(id);
    },

    async cancelRelease(viewerId: string, id: string) {
      await sql.begin(async (tx) => {
        const d = await manage.own(viewerId, id, { tx });
        live(d);
        if (d.releaseAt === null) throw ruleError('No release is scheduled');
        const at = clock.now();
        await tx`update dids set release_at = null, updated_at = ${at} where id = ${id}`;
        await dids.event(tx, { didId: id, accountId: d.accountId, kind: 'release_cancelled', at });
      });
      return reread(id);
    },

    /** Releases the numbers whose scheduled time has come (each in its own transaction); returns how many. */
    async releaseDue(limit = 200): Promise<number> {
      let done = 0;
      for (;;) {
        const n = await sql.begin(async (tx) => {
          const at = clock.now();
          const ids = await tx<{ id: string }[]>`
            select id from dids where release_at <= ${at} and status in ('pending', 'active', 'suspended')
            order by release_at limit ${limit} for update skip locked`;
          for (const { id } of ids) await releaseNow(tx, (await dids.byId(tx, id))!, 'scheduled', at);
          return ids.length;
        });
        done += n;
        if (n > 0) log.info({ released: n }, 'scheduled number releases carried out');
        if (n < limit) return done;
      }
    },

    /**
     * One change to many numbers of the caller, all or nothing: every id must be a live number of
     * the caller's (the first that is not is named `didIds/<i>`).
     */
    async bulkUpdate(
      viewerId: string,
      b: {
        didIds: string[];
        autoRenew?: boolean | undefined;
        label?: string | null | undefined;
        tags?: string[] | undefined;
      },
    ) {
      const ids = [...new Set(b.didIds)];
      const tags = b.tags === undefined ? undefined : checkTags(b.tags);
      if (b.autoRenew === undefined && b.label === undefined && tags === undefined)
        throw validationError([{ path: 'autoRenew', message: 'give autoRenew, label or tags' }]);
      const label = b.label === '' ? null : b.label;
      await sql.begin(async (tx) => {
        const rows = await tx<{ id: string; accountId: string; status: string }[]>`
          select id, account_id, status from dids
          where id = any (${ids}::uuid[]) and (account_id = ${viewerId} or ordered_by = ${viewerId})
          for update`;
        const found = new Map(rows.map((r) => [r.id, r]));
        const bad = b.didIds.findIndex((i) => !LIVE.includes((found.get(i)?.status ?? 'released') as DidRow['status']));
        if (bad >= 0) throw validationError([{ path: `didIds/${bad}`, message: 'not a live number of yours' }]);
        const at = clock.now();
        await tx`
          update dids set
            auto_renew = ${b.autoRenew === undefined ? tx`auto_renew` : tx`${b.autoRenew}`},
            label = ${label === undefined ? tx`label` : tx`${label}`},
            tags = ${tags === undefined ? tx`tags` : tx`${tags}`},
            updated_at = ${at}
          where id = any (${ids}::uuid[])`;
        const what = { autoRenew: b.autoRenew, label, tags };
        for (const r of rows)
          await dids.event(tx, { didId: r.id, accountId: r.accountId, kind: 'settings_changed', at, data: what });
      });
      return { updated: ids.length, didIds: ids };
    },

    /** What the number can do and what it costs to use, from its group and state. */
    async features(viewerId: string, id: string) {
      const d = await manage.own(viewerId, id);
      // A ported number has no group: free inbound minutes and messages.
      const [g] = d.groupId
        ? await sql<{ inboundRate: string | null; inboundSmsRate: string | null }[]>`
            select inbound_rate::text, inbound_sms_rate::text from did_groups where id = ${d.groupId}`
        : [{ inboundRate: null, inboundSmsRate: null }];
      const usable = d.status === 'active';
      const provisioned = await provisioning.of(d.id);
      return {
        didId: d.id,
        status: d.status,
        voice: {
          // A ported number's calls come in only over a carrier trunk named for it (or the default one).
          inbound:
            usable &&
            d.pointMode !== 'unrouted' &&
            (d.origin === 'rented' || d.inboundCarrierId !== null || deps.portedInboundTrunk !== ''),
          channels: d.channels,
          inboundRatePerMinute: g!.inboundRate === null ? null : money6(g!.inboundRate),
          pointMode: d.pointMode,
        },
        sms: {
          // A ported number's messages come in over its carrier's SMS routes, as its calls.
          inbound: usable && (d.origin === 'rented' || d.inboundCarrierId !== null || deps.portedInboundTrunk !== ''),
          outbound: usable,
          inboundPrice: g!.inboundSmsRate === null ? null : money6(g!.inboundSmsRate),
        },
        callerName: {
          supported: CNAM_COUNTRIES.has(d.countryCode ?? ''),
          value: d.callerName,
          provisioning: provisioned.cnam ?? null,
        },
        emergency: { addressSet: d.emergencyAddress !== null, provisioning: provisioned.emergency ?? null },
        aiAgent: { attached: d.aiAgentId !== null },
        callerId: { usable: usable && d.number !== null },
      };
    },

    /** The number's provisioning state per kind (null: never set). */
    async provisioningOf(viewerId: string, id: string) {
      const d = await manage.own(viewerId, id);
      const p = await provisioning.of(d.id);
      return { didId: d.id, callerName: p.cnam ?? null, emergency: p.emergency ?? null };
    },

    /**
     * Every amount the number has cost its owner, newest first: the order, renewals and
     * reactivations (the number's history) and the prices of messages sent and received on it.
     */
    async charges(viewerId: string, id: string, q: { from?: Date | undefined; to?: Date | undefined; limit: number }) {
      await manage.own(viewerId, id);
      const window = (col: string) =>
        sql`${q.from ? sql`and ${sql(col)} >= ${q.from}` : sql``} ${q.to ? sql`and ${sql(col)} < ${q.to}` : sql``}`;
      const rows = await sql<
        { kind: ChargeKind; amount: string; transactionId: string | null; messageId: string | null; at: Date }[]
      >`
        (select case kind when 'ordered' then 'order' when 'renewed' then 'renewal' else 'reactivation' end as kind,
                amount::text, posting_id as transaction_id, null::uuid as message_id, created_at as at
         from did_events where did_id = ${id} and amount is not null ${window('created_at')})
        union all
        (select case direction when 'in' then 'sms_received' else 'sms_sent' end, cost::text, posting_id, id,
                created_at
         from did_messages where did_id = ${id} and cost > 0 ${window('created_at')})
        order by at desc limit ${q.limit}`;
      const total = rows.reduce((s, r) => s.plus(r.amount), new Decimal(0));
      return {
        items: rows.map((r) => ({ ...r, amount: money6(r.amount), at: r.at.toISOString() })),
        total: money6(total.toFixed(6)),
        truncated: rows.length === q.limit,
      };
    },
  };
}

export type NumberSettings = ReturnType<typeof createNumberSettings>;
