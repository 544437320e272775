import { createHash } from 'node:crypto';
import { Decimal } from 'decimal.js';
import type { Logger } from 'pino';
import type { Config } from '../../config/schema.js';
import type { Principal } from '../../http/access.js';
import type { Sql } from '../../db/connection.js';
import { forbidden, notFound, ruleError } from '../../http/errors.js';
import type { Ledger, LedgerEventSink } from '../../ledger/ledger.js';
import { Money } from '../../ledger/money.js';
import type { AccountsService } from '../accounts/service.js';
import type { KeysService } from '../keys/service.js';
import type { Clock } from '../../platform/clock.js';
import { newId, randomToken } from '../../platform/ids.js';
import { createApplicationRepo, type SettingsPatch, type SubAccountRow } from './repo.js';
import { createRouteMarkups } from './route-markups.js';
import type { PayerMarkups } from '../cdrs/index.js';

export interface SubAccountInput {
  label: string;
  externalRef?: string | null;
  markupPct?: string | number | null;
  dailySpendCap?: string | number | null;
  maxConcurrentCalls?: number | null;
  creditLimit?: string | number | null;
  currency?: string;
}

/** What the SIP plane needs to check a sub-account's digest (spec "Authentication", SIP trunk). */
export interface SipUser {
  ha1: string;
  accountId: string;
  parentId: string | null;
}

/**
 * Who creates a sub-account: the sub-account's key is never broader than this (same live or test
 * mode, no scope the creator lacks), and a test creator makes a test sub-account. Service callers
 * without one act as the operator's dashboard session.
 */
export type Creator = Pick<Principal, 'kind' | 'mode' | 'scopes' | 'webhooksWrite'>;

const OPERATOR_SESSION: Creator = { kind: 'session', mode: 'live', scopes: null, webhooksWrite: true };

/** The scopes of a sub-account's key: the creator's, `webhooks:write` only when the creator is a key holding it. */
function inheritedScopes(c: Creator): string[] {
  if (c.kind === 'session') return [];
  return [...(c.scopes ?? []), ...(c.webhooksWrite ? ['webhooks:write'] : [])];
}

/** Whether the operator has an active route purchase or own route (the marketplace answers). */
export type RouteRequirement = (operatorId: string) => Promise<boolean>;

const SIP_PREFIX = 'sub_';

/** Digest HA1 = MD5(username:realm:password) (RFC 2617); the password itself is never stored. */
export const sipHa1 = (username: string, realm: string, password: string) =>
  createHash('md5').update(`${username}:${realm}:${password}`).digest('hex');

// Settings and limits come as numbers or strings; they are stored exactly, never through a float.
function decimalText(v: string | number | null | undefined, places: number): string | null {
  if (v === null || v === undefined) return null;
  const d = new Decimal(typeof v === 'number' ? String(v) : v);
  return d.toFixed(places, Decimal.ROUND_HALF_UP);
}

export function createApplicationService(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  config: Readonly<Config>;
  ledger: Ledger;
  accounts: AccountsService;
  keys: KeysService;
  events?: LedgerEventSink | null;
  /** The marketplace's check; without one, `billing.require_route_for_sub_accounts` refuses every creation. */
  routeRequirement?: RouteRequirement | null;
}) {
  const { sql, clock, ledger, config } = deps;
  const repo = createApplicationRepo(sql);
  const realm = config.sip.primary_host;

  const present = (r: SubAccountRow, lowThreshold?: string) => ({
    id: r.id,
    label: r.label ?? '',
    externalRef: r.externalRef,
    balance: Money.parse(r.balance).toString(),
    status: r.autoSuspended && r.status === 'active' ? ('suspended' as const) : r.status,
    markupPct: r.markupPct === null ? null : new Decimal(r.markupPct).toFixed(3),
    dailySpendCap: r.dailySpendCap === null ? null : new Decimal(r.dailySpendCap).toFixed(2),
    maxConcurrentCalls: r.maxConcurrentCalls,
    creditLimit: new Decimal(r.creditLimit).toFixed(2),
    currency: r.currency,
    portalEmail: r.portalEmail,
    autoSuspended: r.autoSuspended,
    sipUsername: r.sipUsername ?? '',
    createdAt: r.createdAt.toISOString(),
    updatedAt: r.updatedAt.toISOString(),
    ...(lowThreshold !== undefined
      ? { lowBalance: new Decimal(lowThreshold).gt(0) && new Decimal(r.balance).lt(lowThreshold) }
      : {}),
  });

  async function requireOperator(operatorId: string) {
    const op = await deps.accounts.getAccount(operatorId);
    if (!op) throw notFound('Account');
    if (op.parentId) throw forbidden('A sub-account cannot create sub-accounts');
    if (config.billing.require_route_for_sub_accounts) {
      const ok = deps.routeRequirement ? await deps.routeRequirement(operatorId) : false;
      if (!ok) throw ruleError('Creating a sub-account requires an active route purchase or an active own route');
    }
  }

  async function ownSub(viewerId: string, id: string) {
    const row = await repo.get(id, clock.now());
    if (!row || (row.parentId !== viewerId && row.id !== viewerId)) throw notFound('Sub-account');
    return row;
  }

  async function createOne(operatorId: string, input: SubAccountInput, creator: Creator) {
    const test = creator.mode === 'test';
    const settings = await repo.settings(operatorId);
    const id = newId();
    const username = SIP_PREFIX + randomToken(12).toLowerCase();
    const sipPassword = randomToken(24);
    const dailySpendCap = decimalText(input.dailySpendCap, 6);
    const creditLimit = decimalText(input.creditLimit, 6) ?? '0.000000';
    const effectiveCap = dailySpendCap ?? settings.defaultDailySpendCap;
    const secret = await sql.begin(async (tx) => {
      await deps.accounts.repo.insertAccount(
        {
          id,
          email: null,
          passwordHash: null,
          role: 'customer',
          parentId: operatorId,
          label: input.label,
          externalRef: input.externalRef ?? null,
        },
        tx,
      );
      await repo.insertSub(tx, {
        id,
        parentId: operatorId,
        markupPct: decimalText(input.markupPct, 3),
        dailySpendCap,
        maxConcurrentCalls: input.maxConcurrentCalls ?? settings.defaultMaxConcurrentCalls,
        creditLimit,
        currency: input.currency ?? 'USD',
        test,
        username,
        ha1: sipHa1(username, realm, sipPassword),
      });
      await ledger.setLimits(id, { creditLimit, dailySpendCap: effectiveCap, mode: creator.mode }, tx);
      return deps.keys.create(id, { name: 'sub-account', mode: creator.mode, scopes: inheritedScopes(creator) }, tx);
    });
    const row = (await repo.get(id, clock.now()))!;
    deps.log.info({ operatorId, subAccountId: id, test }, 'sub-account created');
    return { ...present(row), apiKey: secret.secret, apiKeyPrefix: secret.key.keyPrefix, sipPassword };
  }

  const service = {
    /** Markup per route of sub-accounts; `routeMarkups.terms(payer)` is what the billing path charges. */
    routeMarkups: createRouteMarkups({ sql, clock }),
    present,

    async create(operatorId: string, input: SubAccountInput, creator: Creator = OPERATOR_SESSION) {
      await requireOperator(operatorId);
      return createOne(operatorId, input, creator);
    },

    /** Up to 100, each created on its own: one failure does not stop the others. */
    async bulkCreate(operatorId: string, items: SubAccountInput[], creator: Creator = OPERATOR_SESSION) {
      await requireOperator(operatorId);
      const created: Awaited<ReturnType<typeof createOne>>[] = [];
      const failed: { label: string; error: string }[] = [];
      for (const item of items) {
        try {
          created.push(await createOne(operatorId, item, creator));
        } catch (err) {
          deps.log.info({ err, operatorId }, 'bulk sub-account item refused');
          failed.push({ label: item.label, error: (err as Error).message });
        }
      }
      return { created, failed, requested: items.length, createdCount: created.length };
    },

    async list(
      operatorId: string,
      q: {
        cursor?: string | undefined;
        limit?: number | undefined;
        search?: string | undefined;
        status?: string | undefined;
        lowBalanceOnly?: boolean | undefined;
      },
    ) {
      const settings = await repo.settings(operatorId);
      const threshold = settings.subLowBalanceThreshold;
      const limit = q.limit ?? 50;
      const lowBelow = q.lowBalanceOnly ? (new Decimal(threshold).gt(0) ? threshold : null) : null;
      if (q.lowBalanceOnly && lowBelow === null) {
        return { rows: [], total: 0, limit, lowBalanceThreshold: Money.parse(threshold).toString() };
      }
      const { rows, total } = await repo.list(operatorId, clock.now(), {
        cursor: q.cursor,
        limit,
        search: q.search,
        status: q.status,
        lowBelow,
      });
      return {
        rows: rows.map((r) => present(r, threshold)),
        total,
        limit,
        lowBalanceThreshold: Money.parse(threshold).toString(),
      };
    },

    async get(viewerId: string, id: string) {
      const row = await ownSub(viewerId, id);
      const settings = await repo.settings(row.parentId);
      return present(row, settings.subLowBalanceThreshold);
    },

    /** Funds a sub-account from the operator's balance (ledger transfer, idempotent by posting key). */
    async credit(
      operatorId: string,
      id: string,
      input: { amount: string; reference?: string | undefined },
      postingKey: string,
    ) {
      const row = await ownSub(operatorId, id);
      if (row.parentId !== operatorId) throw notFound('Sub-account');
      // Live money in a test sub-account could never be spent: its traffic draws on test credit only.
      if (row.test) throw ruleError('A test sub-account is funded only through its credit limit on test credit');
      const r = await ledger.transfer({
        postingKey: `subcredit:${operatorId}:${postingKey}`,
        fromAccountId: operatorId,
        toAccountId: id,
        amount: input.amount,
        reference: input.reference ?? null,
      });
      return {
        transactionId: r.postingId,
        subAccountId: id,
        amount: r.amount ?? input.amount,
        balance: r.toBalanceAfter,
        operatorBalance: r.balanceAfter ?? '0.000000',
        replayed: r.replayed,
      };
    },

    /** New SIP password, returned once; the old one stops at once (its HA1 is replaced). */
    async rotateSipPassword(operatorId: string, id: string) {
      const row = await ownSub(operatorId, id);
      if (row.parentId !== operatorId) throw notFound('Sub-account');
      const password = randomToken(24);
      const username = row.sipUsername ?? SIP_PREFIX + randomToken(12).toLowerCase();
      await repo.updateHa1(id, username, sipHa1(username, realm, password), clock.now());
      return { id, sipUsername: username, sipPassword: password };
    },

    /** For the SIP plane: the digest secret of a `sub_…` user; null when unknown or closed. */
    async lookupSipUser(username: string): Promise<SipUser | null> {
      if (!username.startsWith(SIP_PREFIX)) return null;
      const row = await repo.lookupSip(username);
      // A test sub-account sends simulated traffic only; SIP would be live calls.
      if (!row || row.status === 'closed' || row.test) return null;
      return { ha1: row.ha1, accountId: row.accountId, parentId: row.parentId };
    },

    /**
     * The reseller markup on an account's traffic: a sub-account's own percentage, else its
     * operator's default; 0 and no operator for an account that is not a sub-account. Every plane
     * that bills a sub-account (calls, messages, route checks, caller-ID tests) prices with it.
     */
    async payerMarkup(accountId: string): Promise<{ operatorId: string | null; pct: Decimal }> {
      const row = await repo.get(accountId, clock.now());
      if (!row) return { operatorId: null, pct: new Decimal(0) };
      const s = await repo.settings(row.parentId);
      return { operatorId: row.parentId, pct: new Decimal(row.markupPct ?? s.defaultMarkupPct ?? 0) };
    },

    /**
     * `payerMarkup` with the sub-account's markups per route (migration 256): what route checks and
     * caller-ID tests price a route with (`markupPctOn`).
     */
    async payerMarkups(accountId: string): Promise<PayerMarkups> {
      const [m, terms] = await Promise.all([service.payerMarkup(accountId), service.routeMarkups.terms(accountId)]);
      return { operatorId: m.operatorId, pct: m.pct, byRoute: m.operatorId ? terms.byRoute : new Map() };
    },

    /** As `payerMarkup`, for a caller whose operator is already known (0 without one). */
    async markupOf(payer: { accountId: string; parentId: string | null }): Promise<Decimal> {
      if (!payer.parentId) return new Decimal(0);
      return (await service.payerMarkup(payer.accountId)).pct;
    },

    async settings(operatorId: string) {
      const s = await repo.settings(operatorId);
      return {
        operatorId: s.operatorId,
        defaultMarkupPct: new Decimal(s.defaultMarkupPct).toFixed(3),
        defaultBillingIncrement: s.defaultBillingIncrement,
        minMarginPct: new Decimal(s.minMarginPct).toFixed(3),
        subLowBalanceThreshold: new Decimal(s.subLowBalanceThreshold).toFixed(2),
        defaultDailySpendCap: s.defaultDailySpendCap === null ? null : new Decimal(s.defaultDailySpendCap).toFixed(2),
        defaultMaxConcurrentCalls: s.defaultMaxConcurrentCalls,
        brandName: s.brandName,
        brandColor: s.brandColor,
        brandLogoUrl: s.brandLogoUrl,
        requireTrunkApproval: s.requireTrunkApproval,
        requireTrunkReadiness: s.requireTrunkReadiness,
      };
    },

    async updateSettings(
      operatorId: string,
      patch: {
        defaultMarkupPct?: string | number;
        subLowBalanceThreshold?: string | number;
        defaultDailySpendCap?: string | number | null;
        defaultMaxConcurrentCalls?: number | null;
        brandName?: string;
        brandColor?: string;
        brandLogoUrl?: string;
      },
    ) {
      const p: SettingsPatch = {
        defaultMarkupPct: patch.defaultMarkupPct === undefined ? undefined : decimalText(patch.defaultMarkupPct, 3)!,
        subLowBalanceThreshold:
          patch.subLowBalanceThreshold === undefined ? undefined : decimalText(patch.subLowBalanceThreshold, 6)!,
        defaultDailySpendCap:
          patch.defaultDailySpendCap === undefined ? undefined : decimalText(patch.defaultDailySpendCap, 6),
        defaultMaxConcurrentCalls: patch.defaultMaxConcurrentCalls,
        brandName: patch.brandName,
        brandColor: patch.brandColor,
        brandLogoUrl: patch.brandLogoUrl,
      };
      await sql.begin(async (tx) => {
        await repo.settings(operatorId, tx);
        await repo.updateSettings(tx, operatorId, p, clock.now());
        // Subs without their own cap follow the operator's default.
        if (p.defaultDailySpendCap !== undefined) {
          for (const s of await repo.subsOnDefaultCap(tx, operatorId)) {
            await ledger.setLimits(
              s.id,
              { creditLimit: s.creditLimit, dailySpendCap: p.defaultDailySpendCap, mode: s.test ? 'test' : 'live' },
              tx,
            );
          }
        }
      });
      return service.settings(operatorId);
    },

    /** Sub-accounts not yet closed: an operator with any cannot delete its own account. */
    openSubAccountCount: (operatorId: string) => repo.openSubCount(operatorId),

    async totals(operatorId: string) {
      const t = await repo.totals(operatorId);
      return {
        subCount: t.subCount,
        activeSubCount: t.activeSubCount,
        aggregateBalance: Money.parse(t.aggregateBalance).toDisplayNumber(),
      };
    },

    /**
     * Reseller analytics from the ledger: revenue is what the subs were charged (net of refunds),
     * margin the part of those charges credited to the operator, carrier cost the rest.
     * Minutes, ASR, ACD and byRoute need call records and stay 0 / empty until CDRs exist.
     */
    async analytics(operatorId: string, days: number) {
      const rows = await repo.analytics(operatorId, clock.now(), days);
      const totals = await repo.totals(operatorId);
      const byDay = new Map<string, { calls: number; sms: number; revenue: Decimal; margin: Decimal }>();
      const bySub = new Map<
        string,
        { subAccountId: string; label: string; calls: number; sms: number; revenue: Decimal; margin: Decimal }
      >();
      const sum = { calls: 0, sms: 0, revenue: new Decimal(0), margin: new Decimal(0) };
      for (const r of rows) {
        const d = byDay.get(r.day) ?? { calls: 0, sms: 0, revenue: new Decimal(0), margin: new Decimal(0) };
        const s = bySub.get(r.subId) ?? {
          subAccountId: r.subId,
          label: r.label ?? '',
          calls: 0,
          sms: 0,
          revenue: new Decimal(0),
          margin: new Decimal(0),
        };
        for (const x of [d, s, sum]) {
          x.calls += r.calls;
          x.sms += r.sms;
          x.revenue = x.revenue.plus(r.revenue);
          x.margin = x.margin.plus(r.margin);
        }
        byDay.set(r.day, d);
        bySub.set(r.subId, s);
      }
      const num = (d: Decimal) => d.toDecimalPlaces(6).toNumber();
      const start = new Date(clock.now().getTime() - (days - 1) * 86400_000);
      const timeseries = Array.from({ length: days }, (_, i) => {
        const date = new Date(start.getTime() + i * 86400_000).toISOString().slice(0, 10);
        const d = byDay.get(date);
        return {
          date,
          calls: d?.calls ?? 0,
          sms: d?.sms ?? 0,
          revenue: d ? num(d.revenue) : 0,
          margin: d ? num(d.margin) : 0,
        };
      });
      return {
        period: { days },
        summary: {
          calls: sum.calls,
          sms: sum.sms,
          minutes: 0,
          revenue: num(sum.revenue),
          margin: num(sum.margin),
          asr: 0,
          acd: 0,
          carrierCost: num(sum.revenue.minus(sum.margin)),
          activeSubs: totals.activeSubCount,
        },
        timeseries,
        bySubAccount: [...bySub.values()]
          .sort((a, b) => b.revenue.cmp(a.revenue))
          .map((s) => ({ ...s, revenue: num(s.revenue), margin: num(s.margin) })),
        byRoute: [] as { routeId: string; calls: number; revenue: number }[],
      };
    },

    /** Announces daily-cap suspensions and their lifting at the next UTC day (run on a timer). */
    async reconcileDailyCaps() {
      const { suspended, resumed } = await repo.capTransitions(clock.now());
      if (deps.events) {
        for (const s of resumed)
          await deps.events.emit(sql, s.parentId, 'sub_account.resumed', {
            subAccountId: s.id,
            reason: 'daily_spend_cap_reset',
          });
      }
      return { suspended: suspended.length, resumed: resumed.length };
    },
  };
  return service;
}

export type ApplicationService = ReturnType<typeof createApplicationService>;
