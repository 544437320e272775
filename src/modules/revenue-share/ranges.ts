/**
 * Ranges and numbers: the catalogue holders browse, the ranges the operator opens for a supplier and
 * the supplier keeps (payouts by origin, numbers, addresses), allocation to holders, holder settings.
 */
import type { Logger } from 'pino';
import type { Sql } from '../../db/connection.js';
import { conflict, forbidden, notFound, ruleError, validationError, type ErrorDetail } from '../../http/errors.js';
import { Money } from '../../ledger/money.js';
import type { Clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import { checkAnswer, presentAnswer, type AnswerInput, type HostCheck } from './answer-setting.js';
import type { NumberRow, RangeRow, Repo } from './repo.js';

export interface Principal {
  accountId: string;
  role: 'customer' | 'admin';
}

export interface RangeInput {
  supplierId?: string | undefined;
  name: string;
  countryCode: string;
  country: string;
  prefix: string;
  numberType: RangeRow['numberType'];
  ratePerMinute: string;
  payouts: { origin: string; payoutPerMinute: string }[];
  billingIncrement?: string | undefined;
  holdDays?: number | undefined;
  releaseOn?: RangeRow['releaseOn'] | undefined;
  sourceIps: string[];
  maxCallSeconds?: number | undefined;
}

export type RangePatch = Partial<
  Pick<
    RangeInput,
    | 'name'
    | 'ratePerMinute'
    | 'payouts'
    | 'billingIncrement'
    | 'holdDays'
    | 'releaseOn'
    | 'sourceIps'
    | 'maxCallSeconds'
  >
> & { status?: RangeRow['status'] | undefined };

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

/** A range as a holder sees it in the catalogue. */
export function presentRange(r: RangeRow) {
  const best = r.payouts.reduce(
    (m, p) => (Money.parse(p.payoutPerMinute).cmp(m) > 0 ? Money.parse(p.payoutPerMinute) : m),
    Money.zero,
  );
  return {
    id: r.id,
    name: r.name,
    country: r.country,
    countryCode: r.countryCode,
    prefix: r.prefix,
    numberType: r.numberType,
    payouts: r.payouts,
    bestPayoutPerMinute: best.toString(),
    billingIncrement: `${r.billingInitial}/${r.billingIncrement}`,
    holdDays: r.holdDays,
    releaseOn: r.releaseOn,
    maxCallSeconds: r.maxCallSeconds,
    status: r.status,
    available: Number(r.available),
    testNumbers: r.testNumbers,
    createdAt: r.createdAt.toISOString(),
  };
}

/** The supplier's and the operator's view: the rate the supplier owes, its addresses and counts. */
export function presentSupplierRange(r: RangeRow) {
  return {
    ...presentRange(r),
    supplierId: r.supplierId,
    ratePerMinute: Money.parse(r.ratePerMinute).toString(),
    sourceIps: r.sourceIps,
    allocated: Number(r.allocated),
    paidThrough: r.paidThrough,
    fraudRules: r.fraudRules,
  };
}

export function presentNumber(n: NumberRow) {
  return {
    id: n.id,
    number: n.number,
    rangeId: n.rangeId,
    rangeName: n.rangeName,
    country: n.country,
    countryCode: n.countryCode,
    numberType: n.numberType,
    label: n.label,
    maxCallSeconds: n.maxCallSeconds,
    payouts: n.payouts,
    allocatedAt: n.allocatedAt.toISOString(),
    openFlag: n.openFlag,
    answer: presentAnswer(n.answer),
  };
}

const INCREMENT = /^(\d{1,4})\/(\d{1,4})$/;

function parseIncrement(text: string, path: string, errs: ErrorDetail[]): { initial: number; increment: number } {
  const m = INCREMENT.exec(text);
  const initial = Number(m?.[1]);
  const increment = Number(m?.[2]);
  if (!m || initial < 1 || increment < 1 || initial > 3600 || increment > 3600) {
    errs.push({ path, message: 'must be <initial>/<increment> in seconds, each 1 to 3600 (e.g. 1/1 or 60/60)' });
    return { initial: 1, increment: 1 };
  }
  return { initial, increment };
}

/** Payout rows: unique origins, each at most the range's rate (the platform never pays out more than it is owed). */
function checkPayouts(rate: string, payouts: RangeInput['payouts'], errs: ErrorDetail[], base = 'payouts') {
  const seen = new Set<string>();
  payouts.forEach((p, i) => {
    if (seen.has(p.origin)) errs.push({ path: `${base}/${i}/origin`, message: 'origin given twice' });
    seen.add(p.origin);
    if (Money.parse(p.payoutPerMinute).cmp(rate) > 0)
      errs.push({ path: `${base}/${i}/payoutPerMinute`, message: 'must not exceed ratePerMinute' });
  });
}

export function createRanges(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  repo: Repo;
  sourceIps: { permits(ip: string): boolean };
  /** Whether an account id names an existing account. */
  accountExists(id: string): Promise<boolean>;
  /** The outbound guard: a forward's SIP host is checked when set (and its address again at each call). */
  guard: HostCheck;
  /** Called after a change of which numbers are answered here. */
  changed(): void;
}) {
  const { sql, clock, repo } = deps;

  function checkIps(ips: string[], errs: ErrorDetail[]) {
    ips.forEach((ip, i) => {
      if (!deps.sourceIps.permits(ip))
        errs.push({
          path: `sourceIps/${i}`,
          message: 'must be a public unicast address (the supplier’s signalling address)',
        });
    });
  }

  /** The range when the caller is its supplier or the operator; 404 otherwise (a range is not disclosed). */
  async function managed(p: Principal, id: string): Promise<RangeRow> {
    const r = await repo.range(sql, id);
    if (!r || (p.role !== 'admin' && r.supplierId !== p.accountId)) throw notFound('Range');
    return r;
  }

  return {
    managed,

    async catalogue(q: {
      countryCode?: string | undefined;
      numberType?: string | undefined;
      search?: string | undefined;
      limit: number;
      cursor?: string | undefined;
    }) {
      const rows = await repo.catalogue(sql, {
        limit: q.limit,
        ...(q.countryCode ? { countryCode: q.countryCode.toUpperCase() } : {}),
        ...(q.numberType ? { numberType: q.numberType } : {}),
        ...(q.search ? { search: q.search } : {}),
        ...(q.cursor ? { cursor: q.cursor } : {}),
      });
      return rows.map(presentRange);
    },

    async get(p: Principal, id: string) {
      const r = await repo.range(sql, id);
      if (!r) throw notFound('Range');
      const own = p.role === 'admin' || r.supplierId === p.accountId;
      if (!own && r.status !== 'active') throw notFound('Range');
      return own ? presentSupplierRange(r) : presentRange(r);
    },

    async countries() {
      return (await repo.countries(sql)).map((c) => ({
        countryCode: c.countryCode,
        country: c.country,
        ranges: Number(c.ranges),
        available: Number(c.available),
        bestPayoutPerMinute: Money.parse(c.bestPayout).toString(),
      }));
    },

    async supplierRanges(p: Principal, q: { limit: number; cursor?: string | undefined }) {
      const rows = await repo.supplierRanges(sql, p.role === 'admin' ? null : p.accountId, {
        limit: q.limit,
        ...(q.cursor ? { cursor: q.cursor } : {}),
      });
      return rows.map(presentSupplierRange);
    },

    async create(p: Principal, input: RangeInput) {
      if (p.role !== 'admin') throw forbidden('Only the operator opens revenue share ranges');
      const errs: ErrorDetail[] = [];
      const supplierId = input.supplierId ?? p.accountId;
      if (!(await deps.accountExists(supplierId))) errs.push({ path: 'supplierId', message: 'no such account' });
      if (!Money.parse(input.ratePerMinute).isPositive())
        errs.push({ path: 'ratePerMinute', message: 'must be above zero' });
      checkPayouts(input.ratePerMinute, input.payouts, errs);
      const inc = parseIncrement(input.billingIncrement ?? '1/1', 'billingIncrement', errs);
      checkIps(input.sourceIps, errs);
      if (errs.length) throw validationError(errs);
      const id = newId();
      const at = clock.now();
      try {
        await sql.begin(async (tx) => {
          await repo.insertRange(tx, {
            id,
            supplierId,
            name: input.name,
            countryCode: input.countryCode.toUpperCase(),
            country: input.country,
            prefix: input.prefix,
            numberType: input.numberType,
            ratePerMinute: input.ratePerMinute,
            billingInitial: inc.initial,
            billingIncrement: inc.increment,
            holdDays: input.holdDays ?? 30,
            releaseOn: input.releaseOn ?? 'hold_period',
            sourceIps: input.sourceIps,
            maxCallSeconds: input.maxCallSeconds ?? 3600,
            status: 'active',
            fraudRules: {},
            createdAt: at,
          });
          await repo.replacePayouts(tx, id, input.payouts);
        });
      } catch (err) {
        if ((err as { code?: string }).code === '23505')
          throw conflict('The supplier already has a range with this prefix');
        throw err;
      }
      deps.log.info({ rangeId: id, supplierId }, 'revenue share range opened');
      return presentSupplierRange((await repo.range(sql, id))!);
    },

    async update(p: Principal, id: string, patch: RangePatch) {
      const r = await managed(p, id);
      const errs: ErrorDetail[] = [];
      const rate = patch.ratePerMinute ?? r.ratePerMinute;
      if (!Money.parse(rate).isPositive()) errs.push({ path: 'ratePerMinute', message: 'must be above zero' });
      checkPayouts(rate, patch.payouts ?? r.payouts, errs);
      const set: Record<string, unknown> = {};
      if (patch.billingIncrement !== undefined) {
        const inc = parseIncrement(patch.billingIncrement, 'billingIncrement', errs);
        set['billingInitial'] = inc.initial;
        set['billingIncrement'] = inc.increment;
      }
      if (patch.sourceIps !== undefined) {
        checkIps(patch.sourceIps, errs);
        set['sourceIps'] = patch.sourceIps;
      }
      if (errs.length) throw validationError(errs);
      if (r.status === 'retired' && patch.status !== undefined && patch.status !== 'retired')
        throw ruleError('A retired range cannot be reopened');
      for (const k of ['name', 'ratePerMinute', 'holdDays', 'releaseOn', 'maxCallSeconds', 'status'] as const)
        if (patch[k] !== undefined) set[k] = patch[k];
      await sql.begin(async (tx) => {
        await repo.updateRange(tx, id, set, clock.now());
        if (patch.payouts) await repo.replacePayouts(tx, id, patch.payouts);
      });
      deps.changed();
      return presentSupplierRange((await repo.range(sql, id))!);
    },

    /** A range's fraud rule overrides, for whoever may see the range. */
    async fraudRulesOf(p: Principal, id: string) {
      const r = await repo.range(sql, id);
      const own = r && (p.role === 'admin' || r.supplierId === p.accountId);
      if (!r || (!own && r.status !== 'active')) throw notFound('Range');
      return r.fraudRules;
    },

    async setFraudRules(p: Principal, id: string, rules: Record<string, unknown>) {
      await managed(p, id);
      await repo.updateRange(sql, id, { fraudRules: sql.json(rules as never) }, clock.now());
    },

    /** Loads numbers into a range: every number must start with the range's prefix; already known ones are skipped. */
    async addNumbers(p: Principal, id: string, input: { numbers: string[]; test?: boolean | undefined }) {
      const r = await managed(p, id);
      const errs: ErrorDetail[] = [];
      const seen = new Set<string>();
      input.numbers.forEach((n, i) => {
        if (!n.startsWith(r.prefix))
          errs.push({ path: `numbers/${i}`, message: `must start with the range prefix ${r.prefix}` });
        if (seen.has(n)) errs.push({ path: `numbers/${i}`, message: 'given twice' });
        seen.add(n);
      });
      if (errs.length) throw validationError(errs);
      const at = clock.now();
      const rows = input.numbers.map((number) => ({
        id: newId(),
        rangeId: id,
        number,
        isTest: input.test ?? false,
        createdAt: at,
      }));
      const added = await repo.insertNumbers(sql, rows);
      const addedSet = new Set(added.map((a) => a.number));
      if (input.test) deps.changed();
      return { added: added.length, skipped: input.numbers.filter((n) => !addedSet.has(n)) };
    },

    async inventory(
      p: Principal,
      id: string,
      q: { state?: string | undefined; limit: number; cursor?: string | undefined },
    ) {
      await managed(p, id);
      const rows = await repo.inventory(sql, id, {
        limit: q.limit,
        ...(q.state ? { state: q.state } : {}),
        ...(q.cursor ? { cursor: q.cursor } : {}),
      });
      return rows.map((n) => ({ ...n, allocatedAt: iso(n.allocatedAt), createdAt: n.createdAt.toISOString() }));
    },

    /** Allocates numbers of an active range to the caller; all of `quantity` or none (409). */
    async allocate(holderId: string, input: { rangeId: string; quantity: number }) {
      const r = await repo.range(sql, input.rangeId);
      if (!r || r.status !== 'active') throw notFound('Range');
      const settings = await repo.settings(sql, holderId);
      const ids = await sql.begin(async (tx) => {
        const got = await repo.allocate(
          tx,
          r.id,
          holderId,
          input.quantity,
          settings.defaultMaxCallSeconds,
          clock.now(),
        );
        if (got.length < input.quantity)
          throw conflict(`Only ${got.length} number(s) of this range are free; nothing was allocated`);
        return got.map((g) => g.id);
      });
      deps.changed();
      const rows = await repo.numbers(sql, { holderId, ids, limit: ids.length });
      return rows.map(presentNumber);
    },

    async numbers(
      holderId: string,
      q: {
        rangeId?: string | undefined;
        countryCode?: string | undefined;
        search?: string | undefined;
        limit: number;
        cursor?: string | undefined;
      },
    ) {
      const rows = await repo.numbers(sql, {
        holderId,
        limit: q.limit,
        ...(q.rangeId ? { rangeId: q.rangeId } : {}),
        ...(q.countryCode ? { countryCode: q.countryCode.toUpperCase() } : {}),
        ...(q.search ? { search: q.search.replace(/\D/g, '') } : {}),
        ...(q.cursor ? { cursor: q.cursor } : {}),
      });
      return rows.map(presentNumber);
    },

    async number(holderId: string, id: string) {
      const [n] = await repo.numbers(sql, { holderId, ids: [id], limit: 1 });
      if (!n) throw notFound('Number');
      return presentNumber(n);
    },

    async updateNumber(
      holderId: string,
      id: string,
      patch: {
        label?: string | null | undefined;
        maxCallSeconds?: number | null | undefined;
        answer?: AnswerInput | undefined;
      },
    ) {
      const set: Record<string, unknown> = {};
      if (patch.label !== undefined) set['label'] = patch.label === '' ? null : patch.label;
      if (patch.maxCallSeconds !== undefined) set['maxCallSeconds'] = patch.maxCallSeconds;
      if (patch.answer !== undefined) set['answer'] = sql.json(checkAnswer(patch.answer, deps.guard) as never);
      if (Object.keys(set).length) {
        const done = await repo.updateNumber(sql, holderId, id, set, clock.now());
        if (done.length === 0) throw notFound('Number');
        deps.changed();
      }
      return this.number(holderId, id);
    },

    /** Gives the number back to the range; earnings already made stay (held ones are released as usual). */
    async release(holderId: string, id: string) {
      const done = await repo.releaseNumber(sql, holderId, id, clock.now());
      if (done.length === 0) throw notFound('Number');
      deps.changed();
      return { id, released: true as const };
    },

    async settings(accountId: string) {
      return repo.settings(sql, accountId);
    },

    async putSettings(
      accountId: string,
      s: { ringSeconds: number; defaultMaxCallSeconds: number | null; notifyFraud: boolean },
    ) {
      await repo.putSettings(sql, accountId, s, clock.now());
      deps.changed();
      return repo.settings(sql, accountId);
    },
  };
}

export type Ranges = ReturnType<typeof createRanges>;
