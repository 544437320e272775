import type { BillingIncrement } from './increment.js';
import { incrementNotCheaper } from './increment.js';
import { Decimal } from 'decimal.js';
import { runToEnd, STEP_ITEMS, type Steps } from '../platform/cooperative.js';

/** A row of a deck as it stands (or will stand): what the prefix index is built from. */
export interface DeckEntry {
  readonly prefix: string;
  readonly destination: string;
  /** 6-place string. */
  readonly rate: string;
  readonly increment: BillingIncrement;
  readonly mccMnc: string | null;
  /** The callers the row prices; null for the default row (see origin.ts). */
  readonly origin: string | null;
}

/** A new sheet's row: a deck entry plus the date the seller asked for, if any. */
export interface NewSheetEntry extends DeckEntry {
  readonly effectiveAt: Date | null;
}

/**
 * - `increase`: higher rate, or same rate with a costlier increment: waits for notice.
 * - `decrease`: lower rate: at once.
 * - `new`: a destination the deck did not have: at once.
 * - `removal`: a destination the new sheet leaves out: waits for notice like an increase, because a
 *   buyer loses the destination (documented choice; the spec names only increases and decreases).
 * - `update`: same rate, different name or an increment that is not costlier: at once.
 * - `unchanged`: nothing to do.
 */
export type RateChangeKind = 'increase' | 'decrease' | 'new' | 'removal' | 'update' | 'unchanged';

export interface PlannedRateChange {
  readonly prefix: string;
  readonly mccMnc: string | null;
  readonly origin: string | null;
  readonly kind: RateChangeKind;
  readonly before: DeckEntry | null;
  readonly after: DeckEntry | null;
  readonly effectiveAt: Date;
}

export interface RatePlan {
  readonly plannedAt: Date;
  readonly changes: readonly PlannedRateChange[];
}

export interface PlanOptions {
  /** Injected clock. */
  readonly now: () => Date;
  /** The route's notice period for increases and removals, in days (default 7). */
  readonly noticeDays?: number;
  /** Seller-chosen time for increases (spec: `increaseEffectiveAt`); never earlier than now. */
  readonly increaseEffectiveAt?: Date | null;
}

const DAY_MS = 86_400_000;
export const DEFAULT_NOTICE_DAYS = 7;

/** A row's identity in a deck: its prefix with its network or its origin (a row has at most one of them). */
export const rowKey = (e: { prefix: string; mccMnc: string | null; origin: string | null }): string =>
  e.mccMnc !== null ? `${e.prefix}|${e.mccMnc}` : e.origin !== null ? `${e.prefix}@${e.origin}` : e.prefix;
const keyOf = rowKey;

const later = (a: Date, b: Date | null): Date => (b !== null && b.getTime() > a.getTime() ? b : a);

function classify(before: DeckEntry, after: DeckEntry): RateChangeKind {
  const cmp = new Decimal(after.rate).cmp(before.rate);
  if (cmp > 0) return 'increase';
  if (cmp < 0) return 'decrease';
  if (after.increment.text !== before.increment.text) {
    return incrementNotCheaper(after.increment, before.increment) ? 'increase' : 'update';
  }
  return after.destination !== before.destination ? 'update' : 'unchanged';
}

/**
 * Compares the active deck with a new sheet and says, per prefix (and network), what changes and
 * when. A row's own effective date can only push its change later, never earlier than the rule allows.
 */
export function planRateChanges(
  active: readonly DeckEntry[],
  sheet: readonly NewSheetEntry[],
  opts: PlanOptions,
): RatePlan {
  return runToEnd(planRateChangesSteps(active, sheet, opts));
}

/** `planRateChanges` as steps, for `runSliced` on decks large enough to stall the event loop. */
export function* planRateChangesSteps(
  active: readonly DeckEntry[],
  sheet: readonly NewSheetEntry[],
  opts: PlanOptions,
): Steps<RatePlan> {
  const now = opts.now();
  const noticeDays = opts.noticeDays ?? DEFAULT_NOTICE_DAYS;
  if (!Number.isFinite(noticeDays) || noticeDays < 0) throw new RangeError('noticeDays must be a non-negative number');
  const increaseAt = later(now, opts.increaseEffectiveAt ?? new Date(now.getTime() + noticeDays * DAY_MS));

  const current = new Map<string, DeckEntry>();
  let step = 0;
  for (const e of active) {
    current.set(keyOf(e), e);
    if (++step % STEP_ITEMS === 0) yield;
  }
  const changes: PlannedRateChange[] = [];
  const kept = new Set<string>();
  for (const s of sheet) {
    if (++step % STEP_ITEMS === 0) yield;
    const key = keyOf(s);
    kept.add(key);
    const after: DeckEntry = {
      prefix: s.prefix,
      destination: s.destination,
      rate: s.rate,
      increment: s.increment,
      mccMnc: s.mccMnc,
      origin: s.origin,
    };
    const before = current.get(key) ?? null;
    const kind = before === null ? 'new' : classify(before, after);
    const base = kind === 'increase' ? increaseAt : now;
    changes.push({
      prefix: s.prefix,
      mccMnc: s.mccMnc,
      origin: s.origin,
      kind,
      before,
      after,
      effectiveAt: kind === 'unchanged' ? now : later(base, s.effectiveAt),
    });
  }
  for (const [key, before] of current) {
    if (++step % STEP_ITEMS === 0) yield;
    if (kept.has(key)) continue;
    changes.push({
      prefix: before.prefix,
      mccMnc: before.mccMnc,
      origin: before.origin,
      kind: 'removal',
      before,
      after: null,
      effectiveAt: increaseAt,
    });
  }
  return { plannedAt: now, changes };
}

/** The deck in force at `at` under a plan: each change's new row from its effective time, the old one before. */
export function effectiveDeckAt(plan: RatePlan, at: Date): DeckEntry[] {
  const t = at.getTime();
  const out: DeckEntry[] = [];
  for (const c of plan.changes) {
    const e = t >= c.effectiveAt.getTime() ? c.after : c.before;
    if (e !== null) out.push(e);
  }
  return out;
}

/** The first time after `after` at which the plan changes the deck, or null: when to rebuild the index next. */
export function nextTransitionAfter(plan: RatePlan, after: Date): Date | null {
  let next: number | null = null;
  const t = after.getTime();
  for (const c of plan.changes) {
    if (c.kind === 'unchanged') continue;
    const e = c.effectiveAt.getTime();
    if (e > t && (next === null || e < next)) next = e;
  }
  return next === null ? null : new Date(next);
}
