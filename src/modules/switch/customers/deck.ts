import { Decimal } from 'decimal.js';
import { parseIncrement, type BillingIncrement } from '../../../rating/index.js';

/** `inbound`: per minute of a call to one of the customer's rented numbers, by prefix of that number. */
export type SellKind = 'voice' | 'sms' | 'inbound';
export type ChangeKind = 'new' | 'increase' | 'decrease' | 'unchanged';

/** The sell rate a customer's call or message matched: what it is charged instead of base plus markup. */
export interface SellMatch {
  prefix: string;
  /** Per minute (voice, inbound) or per message (SMS). */
  rate: Decimal;
  increment: BillingIncrement;
}

/** One stored version of a prefix's sell rate, as the deck cache keeps it. */
export interface DeckRow {
  kind: SellKind;
  prefix: string;
  rate: string;
  billingIncrement: string;
  effectiveFrom: Date;
}

interface Version {
  at: number;
  match: SellMatch;
}

/** A customer's deck by kind and prefix, each prefix's versions newest first. */
export interface SellDeck {
  byKind: Record<SellKind, Map<string, Version[]>>;
  longest: number;
}

const ONE_BY_ONE = parseIncrement('1/1')!;

/**
 * The deck of `rows` as of `now`: per prefix the version in force at `now` and every later one
 * (older versions can no longer apply as time only moves on); null when there is none.
 */
export function buildDeck(rows: readonly DeckRow[], now: number): SellDeck | null {
  if (rows.length === 0) return null;
  const byKind: SellDeck['byKind'] = { voice: new Map(), sms: new Map(), inbound: new Map() };
  let longest = 0;
  for (const r of rows) {
    const m = byKind[r.kind];
    let list = m.get(r.prefix);
    if (!list) m.set(r.prefix, (list = []));
    list.push({
      at: r.effectiveFrom.getTime(),
      match: {
        prefix: r.prefix,
        rate: new Decimal(r.rate),
        increment: parseIncrement(r.billingIncrement) ?? ONE_BY_ONE,
      },
    });
    longest = Math.max(longest, r.prefix.length);
  }
  for (const m of Object.values(byKind))
    for (const [prefix, list] of m) {
      list.sort((a, b) => b.at - a.at);
      const current = list.findIndex((v) => v.at <= now);
      if (current >= 0) m.set(prefix, list.slice(0, current + 1));
    }
  return { byKind, longest };
}

/** The longest prefix of `number` with a version in force at `at`, or null. */
export function matchDeck(deck: SellDeck | null, kind: SellKind, number: string, at: number): SellMatch | null {
  if (!deck) return null;
  const m = deck.byKind[kind];
  if (m.size === 0) return null;
  const digits = number.startsWith('+') ? number.slice(1) : number;
  for (let len = Math.min(deck.longest, digits.length); len > 0; len--) {
    const list = m.get(digits.slice(0, len));
    if (!list) continue;
    for (const v of list) if (v.at <= at) return v.match;
  }
  return null;
}

/** How a new rate compares with the one in force (null: the prefix has none). */
export function classifyChange(current: string | null, rate: string): ChangeKind {
  if (current === null) return 'new';
  const c = new Decimal(current).comparedTo(rate);
  return c < 0 ? 'increase' : c > 0 ? 'decrease' : 'unchanged';
}

const DAY_MS = 86_400_000;

/**
 * When a change takes effect (spec: "a sell-rate increase for a Switch customer with a notice
 * period takes effect that many days later while decreases and new destinations apply at once").
 */
export const effectiveFrom = (change: ChangeKind, now: Date, noticeDays: number): Date =>
  change === 'increase' ? new Date(now.getTime() + noticeDays * DAY_MS) : now;
