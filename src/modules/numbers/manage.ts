import { isIP } from 'node:net';
import { Decimal } from 'decimal.js';
import type { Logger } from 'pino';
import type { Db, Sql } from '../../db/connection.js';
import { notFound, ruleError, validationError } from '../../http/errors.js';
import { money6 } from '../../ledger/money.js';
import type { Clock } from '../../platform/clock.js';
import { isE164 } from '../../platform/e164.js';
import { TargetRefusedError, type TargetGuard } from '../../platform/outbound-guard.js';
import type { ProbeResult } from '../../telephony/sip/probe.js';
import type { SipPeer, SipTransportName } from '../../telephony/sip/transport.js';
import { emit } from '../../webhooks/emit.js';
import * as dids from './did-repo.js';
import type { DidRow, DidStatus, PointMode } from './did-repo.js';
import * as inv from './inventory-repo.js';
import { presentDid } from './present.js';

export type SipProbe = (target: SipPeer) => Promise<ProbeResult> | null;

const HOST_PORT = /^(?:sip:)?(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]{1,253})(?::(\d{1,5}))?(?:;transport=(udp|tcp|tls))?$/i;

export interface SipTarget {
  host: string;
  port: number;
  transport: SipTransportName;
}

/**
 * A `sip` target: `host[:port]`, optionally `sip:` before it and `;transport=udp|tcp|tls` after it
 * (RFC 3261's URI parameter); the port defaults to 5060, 5061 over TLS. Null when malformed.
 */
export function parseSipTarget(v: string): SipTarget | null {
  const m = HOST_PORT.exec(v.trim());
  if (!m) return null;
  const transport = (m[3]?.toLowerCase() ?? 'udp') as SipTransportName;
  const port = m[2] === undefined ? (transport === 'tls' ? 5061 : 5060) : Number(m[2]);
  if (port < 1 || port > 65535) return null;
  return { host: m[1]!.replace(/^\[|\]$/g, ''), port, transport };
}

export const LIVE: readonly DidStatus[] = ['pending', 'active', 'suspended'];

/** Gives a locked live DID up: number back on sale, history and `number.released` in the caller's transaction. */
export async function releaseNow(tx: Db, d: DidRow, reason: 'by_owner' | 'scheduled', at: Date): Promise<void> {
  await dids.release(tx, d.id, at);
  if (d.numberId) await inv.returnNumber(tx, d.numberId);
  await dids.event(tx, { didId: d.id, accountId: d.accountId, kind: 'released', at, data: { reason } });
  await emit(tx, {
    accountId: d.accountId,
    event: 'number.released',
    data: { didId: d.id, number: d.number, reason },
    at,
  });
}

/** The cdrs module's figures of calls on numbers (`CdrsService.numberUsage`). */
export type CallUsage = (q: {
  accountId: string;
  didIds: readonly string[];
  from: Date;
  to: Date;
}) => Promise<{ period: string; calls: number; answered: number; seconds: number; cost: string }[]>;

/** One month of usage on numbers; money kept exact until shown. */
export interface UsageMonth {
  period: string;
  calls: number;
  answeredCalls: number;
  callSeconds: number;
  callCost: Decimal;
  smsReceived: number;
  smsSent: number;
  smsCost: Decimal;
  voicemails: number;
  voicemailSeconds: number;
}

export const emptyUsage = (period: string): UsageMonth => ({
  period,
  calls: 0,
  answeredCalls: 0,
  callSeconds: 0,
  callCost: new Decimal(0),
  smsReceived: 0,
  smsSent: 0,
  smsCost: new Decimal(0),
  voicemails: 0,
  voicemailSeconds: 0,
});

function addUsage(into: UsageMonth, u: UsageMonth): void {
  into.calls += u.calls;
  into.answeredCalls += u.answeredCalls;
  into.callSeconds += u.callSeconds;
  into.callCost = into.callCost.plus(u.callCost);
  into.smsReceived += u.smsReceived;
  into.smsSent += u.smsSent;
  into.smsCost = into.smsCost.plus(u.smsCost);
  into.voicemails += u.voicemails;
  into.voicemailSeconds += u.voicemailSeconds;
}

/** Connected minutes to two places (seconds / 60): a figure to read, the CDRs carry the billed ones. */
const minutes = (seconds: number) => Math.round((seconds / 60) * 100) / 100;

/** Usage as analytics shows it: counts and minutes as numbers, money as 6-place strings. */
export const presentUsage = (u: UsageMonth) => ({
  calls: u.calls,
  answeredCalls: u.answeredCalls,
  callMinutes: minutes(u.callSeconds),
  callCost: money6(u.callCost.toFixed(6)),
  sms: u.smsReceived + u.smsSent,
  smsReceived: u.smsReceived,
  smsSent: u.smsSent,
  smsCost: money6(u.smsCost.toFixed(6)),
  voicemails: u.voicemails,
  voicemailMinutes: minutes(u.voicemailSeconds),
  cost: money6(u.callCost.plus(u.smsCost).toFixed(6)),
});

/** `count` month keys (YYYY-MM) from `from`'s month on. */
function monthsFrom(from: Date, count: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const p = new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth() + i, 1));
    out.push(`${p.getUTCFullYear()}-${String(p.getUTCMonth() + 1).padStart(2, '0')}`);
  }
  return out;
}

/** A customer's rented numbers: reads, routing, endpoint checks, renewal switch, labels, release, analytics. */
export function createNumberManagement(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  guard: TargetGuard;
  sipProbe: SipProbe;
  probeTimeoutMs: number;
  /** The cdrs module's monthly figures of calls on numbers. */
  callUsage: CallUsage;
}) {
  const { sql, clock, log, guard } = deps;

  /** Calls (from CDRs), messages and voicemails on `didIds` while `accountId` rented them, by month. */
  async function usageByMonth(accountId: string, didIds: readonly string[], from: Date, to: Date) {
    const [calls, msgs, vms] = await Promise.all([
      deps.callUsage({ accountId, didIds, from, to }),
      dids.messageUsage(sql, accountId, didIds, from, to),
      dids.voicemailUsage(sql, accountId, didIds, from, to),
    ]);
    const months = new Map<string, UsageMonth>();
    const month = (period: string) => {
      let m = months.get(period);
      if (!m) months.set(period, (m = emptyUsage(period)));
      return m;
    };
    for (const c of calls) {
      const m = month(c.period);
      m.calls = c.calls;
      m.answeredCalls = c.answered;
      m.callSeconds = c.seconds;
      m.callCost = new Decimal(c.cost);
    }
    for (const r of msgs) {
      const m = month(r.period);
      m.smsReceived = r.received;
      m.smsSent = r.sent;
      m.smsCost = new Decimal(r.cost);
    }
    for (const v of vms) {
      const m = month(v.period);
      m.voicemails = v.voicemails;
      m.voicemailSeconds = Math.round(v.ms / 1000);
    }
    return months;
  }

  /** The DID if the viewer owns it or ordered it for a sub-account; NOT_FOUND otherwise. */
  async function own(viewerId: string, id: string, forUpdate?: { tx: Db }): Promise<DidRow> {
    const d = forUpdate ? await dids.byId(forUpdate.tx, id, { forUpdate: true }) : await dids.byId(sql, id);
    if (!d || (d.accountId !== viewerId && d.orderedBy !== viewerId)) throw notFound('Phone number');
    return d;
  }

  const reread = async (id: string) => presentDid((await dids.byId(sql, id))!);

  function checkTarget(mode: PointMode, field: string, v: string | null) {
    if (v === null) return null;
    if (mode === 'forward') {
      const n = v.replace(/^\+/, '');
      if (!isE164(v)) throw validationError([{ path: field, message: 'must be an E.164 number' }]);
      return n;
    }
    const t = parseSipTarget(v);
    if (!t) throw validationError([{ path: field, message: 'must be host[:port][;transport=udp|tcp|tls]' }]);
    try {
      guard.checkHost(t.host, t.port);
    } catch (err) {
      if (err instanceof TargetRefusedError) throw validationError([{ path: field, message: err.message }]);
      throw err;
    }
    return v.trim();
  }

  return {
    own,
    get: async (viewerId: string, id: string) => presentDid(await own(viewerId, id)),

    async list(
      viewerId: string,
      q: { status?: DidStatus | undefined; tag?: string | undefined; cursor?: string | undefined; limit: number },
    ) {
      return (await dids.list(sql, viewerId, q)).map(presentDid);
    },

    async history(viewerId: string, id: string, q: { cursor?: string | undefined; limit: number }) {
      await own(viewerId, id);
      return (await dids.events(sql, id, q)).map((e) => ({
        id: e.id,
        kind: e.kind,
        amount: e.amount === null ? null : money6(e.amount),
        transactionId: e.postingId,
        data: e.data,
        createdAt: e.createdAt.toISOString(),
      }));
    },

    async setRouting(
      viewerId: string,
      id: string,
      r: {
        pointMode: PointMode;
        pointsTo?: string | null | undefined;
        pointsToBackup?: string | null | undefined;
        ringTimeoutSeconds?: number | undefined;
      },
    ) {
      const pointsTo = r.pointMode === 'unrouted' ? null : checkTarget(r.pointMode, 'pointsTo', r.pointsTo ?? null);
      const backup =
        r.pointMode === 'unrouted' ? null : checkTarget(r.pointMode, 'pointsToBackup', r.pointsToBackup ?? null);
      if (r.pointMode !== 'unrouted' && pointsTo === null)
        throw validationError([{ path: 'pointsTo', message: `is required with pointMode ${r.pointMode}` }]);
      if (r.pointMode === 'unrouted' && (r.pointsTo || r.pointsToBackup))
        throw validationError([{ path: 'pointsTo', message: 'must be empty with pointMode unrouted' }]);
      await sql.begin(async (tx) => {
        const d = await own(viewerId, id, { tx });
        if (!LIVE.includes(d.status)) throw ruleError(`The number is ${d.status}`);
        const at = clock.now();
        const ringTimeoutSeconds = r.ringTimeoutSeconds ?? d.ringTimeoutSeconds;
        const routing = { pointMode: r.pointMode, pointsTo, pointsToBackup: backup, ringTimeoutSeconds };
        await dids.setRouting(tx, id, routing, at);
        await dids.event(tx, {
          didId: id,
          accountId: d.accountId,
          kind: 'routing_changed',
          at,
          data: routing,
        });
      });
      return reread(id);
    },

    /** One OPTIONS to the `sip` target (then the backup): the result is stored on the number. */
    async checkEndpoint(viewerId: string, id: string) {
      const d = await own(viewerId, id);
      if (d.pointMode !== 'sip' || d.pointsTo === null)
        throw ruleError('Only a number pointed at a SIP endpoint can be checked');
      let reachable = false;
      let cause: string | null = null;
      for (const target of [d.pointsTo, d.pointsToBackup]) {
        if (target === null) continue;
        const t = parseSipTarget(target)!;
        try {
          const pinned = await guard.resolve(t.host, t.port);
          const servername = t.transport === 'tls' && isIP(t.host) === 0 ? { servername: t.host } : {};
          const probing = deps.sipProbe({ host: pinned.address, port: t.port, transport: t.transport, ...servername });
          if (probing === null) throw ruleError('The SIP plane is not listening; try again shortly');
          const res = await probing;
          reachable = res.ok;
          cause = res.ok ? null : res.status === null ? 'timeout' : `sip_${res.status}`;
        } catch (err) {
          if (err instanceof TargetRefusedError) cause = 'address_refused';
          else if ((err as { code?: string }).code === 'ENOTFOUND') cause = 'dns_not_found';
          else throw err;
        }
        if (reachable) break;
      }
      await dids.setReachability(sql, id, { reachable, cause }, clock.now());
      log.info({ didId: id, reachable, cause }, 'number endpoint checked');
      return reread(id);
    },

    async setAutoRenew(viewerId: string, id: string, on: boolean) {
      await sql.begin(async (tx) => {
        const d = await own(viewerId, id, { tx });
        if (!LIVE.includes(d.status)) throw ruleError(`The number is ${d.status}`);
        const at = clock.now();
        await dids.setAutoRenew(tx, id, on, at);
        await dids.event(tx, {
          didId: id,
          accountId: d.accountId,
          kind: 'auto_renew_changed',
          at,
          data: { autoRenew: on },
        });
      });
      return reread(id);
    },

    async setLabel(viewerId: string, id: string, label: string | null) {
      await own(viewerId, id);
      await dids.setLabel(sql, id, label === '' ? null : label, clock.now());
      return reread(id);
    },

    /** Until AI voice agents exist the id is validated by shape and stored; inbound calls do not use it yet. */
    async setAiAgent(viewerId: string, id: string, agentId: string | null) {
      const d = await own(viewerId, id);
      if (!LIVE.includes(d.status)) throw ruleError(`The number is ${d.status}`);
      await dids.setAiAgent(sql, id, agentId, clock.now());
      return reread(id);
    },

    /** Gives the number up now: no refund of the month paid; the number goes back on sale. */
    async release(viewerId: string, id: string) {
      await sql.begin(async (tx) => {
        const d = await own(viewerId, id, { tx });
        if (!LIVE.includes(d.status)) throw ruleError(`The number is already ${d.status}`);
        await releaseNow(tx, d, 'by_owner', clock.now());
      });
      log.info({ didId: id }, 'number released by its owner');
      return reread(id);
    },

    /** Active provisioned numbers usable as caller ID (spec "Cli-eligible item"). */
    async cliEligible(viewerId: string) {
      return (await dids.activeNumbers(sql, viewerId)).map((d) => ({
        id: d.id,
        cli: d.number!,
        number: `+${d.number!}`,
        country: d.country,
        countryCode: d.countryCode,
        city: d.city,
        didType: d.didType,
        channels: d.channels,
        label: d.label,
      }));
    },

    usageByMonth,

    /**
     * A number's usage by month for the export: the months from `from` (first day, UTC) to the
     * current one, each present even when nothing happened.
     */
    async usageExport(viewerId: string, id: string, months: number) {
      const d = await own(viewerId, id);
      const now = clock.now();
      const from = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - (months - 1), 1));
      const to = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
      const by = await usageByMonth(d.accountId, [d.id], from, to);
      return {
        number: d.number,
        months: monthsFrom(from, months).map((period) => by.get(period) ?? emptyUsage(period)),
      };
    },

    async overview(viewerId: string) {
      const o = await dids.overview(sql, viewerId);
      const now = clock.now();
      const from = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
      const to = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
      const ids = await dids.idsOf(sql, viewerId);
      const month = ids.length ? (await usageByMonth(viewerId, ids, from, to)).values().next().value : undefined;
      return {
        counts: {
          total: o.total,
          active: o.active,
          pending: o.pending,
          suspended: o.suspended,
          released: o.released,
          failed: o.failed,
        },
        monthlyRecurring: new Decimal(o.monthlyRecurring).toNumber(),
        lifetimeSpend: new Decimal(o.lifetimeSpend).toNumber(),
        // This calendar month (UTC), every number the caller rents.
        usage: presentUsage(month ?? emptyUsage('')),
      };
    },

    async analytics(viewerId: string, id: string, months: number) {
      const d = await own(viewerId, id);
      const now = clock.now();
      const from = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - (months - 1), 1));
      const to = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
      const [totals, rows, usage] = await Promise.all([
        dids.spendTotals(sql, id),
        dids.spendByMonth(sql, id, from),
        usageByMonth(d.accountId, [d.id], from, to),
      ]);
      const spendBy = new Map<string, Decimal>();
      for (const r of rows) spendBy.set(r.period, (spendBy.get(r.period) ?? new Decimal(0)).plus(r.amount));
      const total = emptyUsage('');
      const series = monthsFrom(from, months).map((period) => {
        const u = usage.get(period) ?? emptyUsage(period);
        addUsage(total, u);
        return { period, ...presentUsage(u), spend: (spendBy.get(period) ?? new Decimal(0)).toNumber() };
      });
      const gross = new Decimal(totals.gross);
      const refunded = new Decimal(totals.refunded);
      return {
        number: d.status === 'pending' ? null : d.number,
        status: d.status,
        price: { setup: money6(d.setupPrice), monthly: money6(d.monthlyPrice) },
        spend: {
          gross: gross.toNumber(),
          refunded: refunded.toNumber(),
          net: gross.minus(refunded).toNumber(),
          setup: new Decimal(totals.setup).toNumber(),
          recurring: new Decimal(totals.recurring).toNumber(),
        },
        usage: presentUsage(total),
        window: { months, from: from.toISOString() },
        series,
      };
    },
  };
}

export type NumberManagement = ReturnType<typeof createNumberManagement>;
