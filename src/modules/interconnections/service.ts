import { Decimal } from 'decimal.js';
import type { Db, Sql } from '../../db/connection.js';
import { conflict, notFound, ruleError, SqlState, validationError } from '../../http/errors.js';
import type { Clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import { toMoney } from '../../rating/index.js';
import { emit } from '../../webhooks/emit.js';
import type { EventName } from '../../webhooks/events.js';
import type { Candidate } from '../marketplace/index.js';
import * as repo from './repo.js';
import type {
  AgreedRate,
  InterconnectionRow,
  InterconnectionStatus,
  OverCap,
  Period,
  Service,
  Side,
  Terms,
} from './repo.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
export const DEFAULT_EXPIRY_HOURS = 72;
export const DEFAULT_TERM_DAYS = 365;

export interface TermsIn {
  services: Service[];
  requesterDiscountPct: string;
  peerDiscountPct: string;
  termDays?: number;
  note?: string;
  expiresInHours?: number;
  period?: Period;
  caps?: { minutes?: number; messages?: number; amount?: string; overCap?: OverCap };
  rates?: { payer: Side; service: Service; prefix: string; rate: string; destination?: string }[];
}

/** What the interconnections module needs of others: accounts to find the peer, routing to price. */
export interface InterconnectionDeps {
  sql: Sql;
  clock: Clock;
  account(id: string): Promise<{ id: string; parentId: string | null; status: string } | null | undefined>;
  candidatesFor(q: { accountId: string; number: string; type: Service }): Promise<Candidate[]>;
  /** Tells this daemon's terms cache at once (other daemons hear the table's NOTIFY). */
  termsChanged(accountId: string): void;
}

/** The status a reader sees: an open proposal or a term past its time reads as `expired`. */
export type ShownStatus = InterconnectionStatus | 'expired';

/**
 * Interconnections (spec group "Interconnections", designed in docs/interconnections.md): two
 * accounts of the exchange agree bilateral terms. One proposes (the requester) to another (the
 * peer); the side the terms await counters, accepts or declines; the proposer may cancel. Accepted,
 * the interconnection is in force for `termDays`: when either side buys the other's routes, rating
 * takes the agreed percent off the seller's rate (routing/routing.ts `peering`), so the hold, the
 * settlement, the CDR and the seller's credit all follow the terms. Either side may suspend (only
 * it resumes) or terminate.
 */
export function createInterconnectionsService(deps: InterconnectionDeps) {
  const { sql, clock } = deps;

  const sideOf = (r: InterconnectionRow, accountId: string): Side =>
    r.requesterId === accountId ? 'requester' : 'peer';
  const otherOf = (r: InterconnectionRow, side: Side): string => (side === 'requester' ? r.peerId : r.requesterId);
  const sideOfAccount = (r: InterconnectionRow, id: string | null): Side | null => (id === null ? null : sideOf(r, id));

  const statusOf = (r: InterconnectionRow): ShownStatus => {
    const now = clock.now().getTime();
    if (r.status === 'pending' && r.expiresAt.getTime() <= now) return 'expired';
    if ((r.status === 'active' || r.status === 'suspended') && r.validUntil !== null && r.validUntil.getTime() <= now)
      return 'expired';
    return r.status;
  };

  const present = (r: InterconnectionRow, viewerId: string, rates: readonly AgreedRate[]) => {
    const role = sideOf(r, viewerId);
    const status = statusOf(r);
    return {
      id: r.id,
      role,
      counterpartyId: otherOf(r, role),
      status,
      proposedBy: r.proposedBy,
      awaiting: status === 'pending' ? ((r.proposedBy === 'requester' ? 'peer' : 'requester') as Side) : null,
      services: r.services,
      requesterDiscountPct: new Decimal(r.requesterDiscountPct).toFixed(2),
      peerDiscountPct: new Decimal(r.peerDiscountPct).toFixed(2),
      termDays: r.termDays,
      note: r.note,
      rounds: r.rounds,
      expiresAt: r.expiresAt.toISOString(),
      activatedAt: r.activatedAt?.toISOString() ?? null,
      validUntil: r.validUntil?.toISOString() ?? null,
      suspendedBy: r.status === 'suspended' ? sideOfAccount(r, r.suspendedBy) : null,
      suspendedAt: r.status === 'suspended' ? (r.suspendedAt?.toISOString() ?? null) : null,
      endedBy: sideOfAccount(r, r.endedBy),
      endedAt: r.endedAt?.toISOString() ?? null,
      endReason: r.endReason,
      period: r.period,
      caps: {
        minutes: r.capMinutes,
        messages: r.capMessages,
        amount: r.capAmount === null ? null : toMoney(new Decimal(r.capAmount)),
        overCap: r.overCap,
      },
      rates: rates.map((x) => ({ ...x, rate: toMoney(new Decimal(x.rate)) })),
      createdAt: r.createdAt.toISOString(),
      updatedAt: r.updatedAt.toISOString(),
    };
  };
  type Shown = ReturnType<typeof present>;

  /** One interconnection as `viewerId` sees it, with its agreed rates. */
  const show = async (db: Db, r: InterconnectionRow, viewerId: string): Promise<Shown> =>
    present(r, viewerId, (await repo.ratesOf(db, [r.id])).get(r.id)!);

  const termsFrom = (t: TermsIn): Terms => {
    const services = [...new Set(t.services)].sort() as Service[];
    if (services.length === 0) throw validationError([{ path: '/services', message: 'name voice, sms or both' }]);
    return {
      services,
      requesterDiscountPct: t.requesterDiscountPct,
      peerDiscountPct: t.peerDiscountPct,
      termDays: t.termDays ?? DEFAULT_TERM_DAYS,
      note: t.note ?? null,
      expiresAt: new Date(clock.now().getTime() + (t.expiresInHours ?? DEFAULT_EXPIRY_HOURS) * HOUR),
      period: t.period ?? 'month',
      capMinutes: t.caps?.minutes ?? null,
      capMessages: t.caps?.messages ?? null,
      capAmount: t.caps?.amount ?? null,
      overCap: t.caps?.overCap ?? 'list_price',
    };
  };

  /** The agreed rates of proposed terms: each for a service the terms cover, one per side, service and prefix. */
  const ratesFrom = (t: TermsIn, services: readonly Service[]): AgreedRate[] => {
    const seen = new Set<string>();
    return (t.rates ?? []).map((x, i) => {
      if (!services.includes(x.service))
        throw validationError([{ path: `/rates/${i}/service`, message: 'the terms do not cover this service' }]);
      const key = `${x.payer}:${x.service}:${x.prefix}`;
      if (seen.has(key))
        throw validationError([
          { path: `/rates/${i}/prefix`, message: 'a second rate for this side, service and prefix' },
        ]);
      seen.add(key);
      return { payer: x.payer, service: x.service, prefix: x.prefix, rate: x.rate, destination: x.destination ?? null };
    });
  };

  const tell = (tx: Db, r: InterconnectionRow, to: string, event: EventName, extra: Record<string, unknown> = {}) =>
    emit(tx, {
      accountId: to,
      event,
      data: {
        interconnectionId: r.id,
        counterpartyId: r.requesterId === to ? r.peerId : r.requesterId,
        status: statusOf(r),
        services: r.services,
        requesterDiscountPct: new Decimal(r.requesterDiscountPct).toFixed(2),
        peerDiscountPct: new Decimal(r.peerDiscountPct).toFixed(2),
        ...extra,
      },
    });

  /** The interconnection, locked, in one of `allowed` states (as a reader would see it). */
  const lockedIn = async (tx: Db, accountId: string, id: string, allowed: readonly ShownStatus[]) => {
    const r = await repo.find(tx, id, accountId, true);
    if (r === undefined) throw notFound('Interconnection');
    const status = statusOf(r);
    if (!allowed.includes(status)) throw conflict(`The interconnection is ${status}`);
    return { r, side: sideOf(r, accountId) };
  };

  /** Runs a change in one transaction and forgets both sides' cached terms once it commits. */
  const change = async (
    accountId: string,
    id: string,
    fn: (tx: Db, r: InterconnectionRow, side: Side) => Promise<InterconnectionRow>,
    allowed: readonly ShownStatus[],
  ): Promise<Shown> => {
    const r = await sql.begin(async (tx) => {
      const { r, side } = await lockedIn(tx, accountId, id, allowed);
      return fn(tx, r, side);
    });
    deps.termsChanged(r.requesterId);
    deps.termsChanged(r.peerId);
    return show(sql, r, accountId);
  };

  const awaited = (r: InterconnectionRow, side: Side) => {
    if (r.proposedBy === side) throw conflict('The other side has not answered your last proposal yet');
  };

  /**
   * One decision on an interconnection: allowed from the states `from` (and by `check`), it writes
   * the new state `to` and tells the other side with `event`, in one transaction.
   */
  const step =
    (o: {
      from: readonly ShownStatus[];
      check?: (r: InterconnectionRow, side: Side) => void;
      to: (r: InterconnectionRow, by: string, at: Date, reason?: string) => repo.StatusChange;
      event: EventName;
      data?: (next: InterconnectionRow, reason?: string) => Record<string, unknown>;
    }) =>
    (accountId: string, id: string, reason?: string): Promise<Shown> =>
      change(
        accountId,
        id,
        async (tx, r, side) => {
          o.check?.(r, side);
          const at = clock.now();
          const next = await repo.setStatus(tx, r.id, { ...o.to(r, accountId, at, reason), at });
          await tell(tx, next, otherOf(r, side), o.event, o.data?.(next, reason) ?? {});
          return next;
        },
        o.from,
      );

  return {
    async propose(
      requester: { accountId: string; parentId: string | null },
      peerId: string,
      t: TermsIn,
    ): Promise<Shown> {
      if (requester.parentId !== null) throw ruleError('A sub-account interconnects through its reseller');
      if (peerId === requester.accountId)
        throw validationError([{ path: '/peerAccountId', message: 'an account cannot interconnect with itself' }]);
      const peer = await deps.account(peerId);
      // Sub-accounts and closed accounts are not peers; they are not told apart from unknown ids.
      if (!peer || peer.parentId !== null || peer.status !== 'active') throw notFound('Account');
      const terms = termsFrom(t);
      const rates = ratesFrom(t, terms.services);
      const at = clock.now();
      try {
        const r = await sql.begin(async (tx) => {
          const r = await repo.insert(tx, { ...terms, id: newId(), requesterId: requester.accountId, peerId, at });
          await repo.replaceRates(tx, r.id, rates);
          await tell(tx, r, peerId, 'interconnection.requested', {
            kind: 'request',
            expiresAt: r.expiresAt.toISOString(),
          });
          return r;
        });
        return present(r, requester.accountId, rates);
      } catch (err) {
        if ((err as { code?: unknown }).code === SqlState.UNIQUE_VIOLATION)
          throw conflict('An interconnection between these accounts is already pending or in force');
        throw err;
      }
    },

    async list(
      accountId: string,
      q: { role?: Side; status?: InterconnectionStatus; cursor?: string; limit: number },
    ): Promise<Shown[]> {
      const rows = await repo.list(sql, accountId, q);
      const rates = await repo.ratesOf(
        sql,
        rows.map((r) => r.id),
      );
      return rows.map((r) => present(r, accountId, rates.get(r.id)!));
    },

    async get(accountId: string, id: string): Promise<Shown> {
      const r = await repo.find(sql, id, accountId);
      if (r === undefined) throw notFound('Interconnection');
      return show(sql, r, accountId);
    },

    counter: (accountId: string, id: string, t: TermsIn) =>
      change(
        accountId,
        id,
        async (tx, r, side) => {
          awaited(r, side);
          const terms = termsFrom(t);
          const next = await repo.counter(tx, r.id, side, terms, clock.now());
          await repo.replaceRates(tx, r.id, ratesFrom(t, terms.services));
          await tell(tx, next, otherOf(r, side), 'interconnection.requested', {
            kind: 'counter',
            expiresAt: next.expiresAt.toISOString(),
          });
          return next;
        },
        ['pending'],
      ),

    accept: step({
      from: ['pending'],
      check: awaited,
      to: (r, _by, at) => ({
        status: 'active',
        activatedAt: at,
        validUntil: new Date(at.getTime() + r.termDays * DAY),
      }),
      event: 'interconnection.accepted',
      data: (next) => ({ validUntil: next.validUntil!.toISOString() }),
    }),
    decline: step({
      from: ['pending'],
      check: awaited,
      to: (_r, by, _at, reason) => ({ status: 'declined', endedBy: by, endReason: reason ?? null }),
      event: 'interconnection.declined',
      data: (_next, reason) => ({ reason: reason ?? null }),
    }),
    cancel: step({
      from: ['pending'],
      check: (r, side) => {
        if (r.proposedBy !== side) throw conflict('Only the side whose proposal is on the table can withdraw it');
      },
      to: (_r, by) => ({ status: 'cancelled', endedBy: by }),
      event: 'interconnection.ended',
      data: () => ({ reason: 'cancelled' }),
    }),
    suspend: step({
      from: ['active'],
      to: (_r, by) => ({ status: 'suspended', suspendedBy: by }),
      event: 'interconnection.suspended',
      data: (_next, reason) => ({ reason: reason ?? null }),
    }),
    resume: step({
      from: ['suspended'],
      check: (r, side) => {
        if (sideOfAccount(r, r.suspendedBy) !== side)
          throw conflict('Only the side that suspended the interconnection resumes it');
      },
      to: () => ({ status: 'active', suspendedBy: null }),
      event: 'interconnection.resumed',
    }),
    terminate: step({
      from: ['active', 'suspended'],
      to: (_r, by, _at, reason) => ({ status: 'terminated', endedBy: by, endReason: reason ?? null }),
      event: 'interconnection.ended',
      data: (_next, reason) => ({ reason: 'terminated', note: reason ?? null }),
    }),

    /**
     * What the caller pays for a number on the counterparty's routes it uses, priced by the same
     * routing as live traffic: only routes the interconnection priced are listed.
     */
    async prices(accountId: string, id: string, number: string, type: Service) {
      const shown = await this.get(accountId, id);
      if (!shown.services.includes(type)) throw ruleError(`The interconnection does not cover ${type}`);
      const inForce = shown.status === 'active';
      const routes = inForce
        ? (await deps.candidatesFor({ accountId, number, type })).filter((c) => c.interconnectionId === id)
        : [];
      return {
        interconnectionId: id,
        status: shown.status,
        inForce,
        discountPct: shown.role === 'requester' ? shown.requesterDiscountPct : shown.peerDiscountPct,
        routes: routes.map((c) => ({
          routeId: c.routeId,
          routeName: c.routeName,
          matchedPrefix: c.matchedPrefix,
          destination: c.destination,
          sellerRate: toMoney(c.sellerRate),
          price: toMoney(c.price),
          increment: c.increment.text,
        })),
      };
    },

    /** Each side's traffic at the agreed prices in the running period, against the caps. */
    async usage(accountId: string, id: string) {
      const r = await repo.find(sql, id, accountId);
      if (r === undefined) throw notFound('Interconnection');
      const sides = await repo.usage(sql, r, clock.now());
      const capAmount = r.capAmount === null ? null : new Decimal(r.capAmount);
      return {
        interconnectionId: r.id,
        period: r.period,
        periodStart: sides[0]!.periodStart.toISOString(),
        periodEnd: sides[0]!.periodEnd.toISOString(),
        overCap: r.overCap,
        sides: sides.map((u) => {
          const reached = {
            minutes: r.capMinutes !== null && u.seconds >= r.capMinutes * 60,
            messages: r.capMessages !== null && u.messages >= r.capMessages,
            amount: capAmount !== null && new Decimal(u.amount).gte(capAmount),
          };
          return {
            payer: u.payer,
            minutes: new Decimal(u.seconds).div(60).toFixed(2),
            messages: u.messages,
            amount: toMoney(new Decimal(u.amount)),
            capReached: reached,
          };
        }),
      };
    },

    /**
     * The sweep: marks pending proposals past their expiry, and terms past `validUntil`, expired,
     * and tells both sides with `interconnection.expired` (`kind`: `proposal` or `term`). Returns
     * how many it marked.
     */
    async expireDue(): Promise<number> {
      const rows = await sql.begin(async (tx) => {
        const rows = await repo.expireDue(tx, clock.now());
        for (const r of rows)
          for (const to of [r.requesterId, r.peerId])
            await tell(tx, r, to, 'interconnection.expired', {
              kind: r.activatedAt === null ? 'proposal' : 'term',
              expiresAt: r.expiresAt.toISOString(),
              validUntil: r.validUntil?.toISOString() ?? null,
            });
        return rows;
      });
      for (const r of rows) {
        deps.termsChanged(r.requesterId);
        deps.termsChanged(r.peerId);
      }
      return rows.length;
    },

    /**
     * The cap job: tells both sides of each cap a side reached (recorded by the CDR that crossed
     * it, migration 265) with `interconnection.cap_reached`, once per side, period and cap; the
     * events and the rows' told mark commit together. Returns how many crossings it told.
     */
    async tellCapsReached(): Promise<number> {
      return sql.begin(async (tx) => {
        const crossings = await repo.untoldCapCrossings(tx, 200);
        for (const c of crossings) {
          const r = c.interconnection;
          const payerAccountId = c.payer === 'requester' ? r.requesterId : r.peerId;
          const limit =
            c.cap === 'minutes' ? String(r.capMinutes) : c.cap === 'messages' ? String(r.capMessages) : r.capAmount;
          for (const to of [r.requesterId, r.peerId])
            await tell(tx, r, to, 'interconnection.cap_reached', {
              payer: c.payer,
              payerAccountId,
              cap: c.cap,
              limit: c.cap === 'amount' ? new Decimal(limit ?? 0).toFixed(6) : limit,
              period: r.period,
              periodStart: c.periodStart.toISOString(),
              periodEnd: c.periodEnd.toISOString(),
              overCap: r.overCap,
              crossedAt: c.crossedAt.toISOString(),
              usage: {
                minutes: new Decimal(c.seconds).div(60).toFixed(2),
                messages: Number(c.messages),
                amount: new Decimal(c.amount).toFixed(6),
              },
            });
        }
        await repo.capCrossingsTold(tx, crossings, clock.now());
        return crossings.length;
      });
    },
  };
}

export type InterconnectionsService = ReturnType<typeof createInterconnectionsService>;
