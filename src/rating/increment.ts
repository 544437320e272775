/**
 * Billing increments written `<first>/<next>` (`60/60`, `1/1`, `6/6`, `30/6`): the first block is
 * charged whole as soon as a call has any billable time, then each started `next` block is charged whole.
 */
export interface BillingIncrement {
  readonly first: number;
  readonly next: number;
  /** Canonical text, e.g. `30/6`. */
  readonly text: string;
}

// Bounds keep absurd sheets out; an hour-long first block is already unusual in wholesale voice.
const MAX_BLOCK_SECONDS = 3600;
const INCREMENT_RE = /^(\d{1,4})\/(\d{1,4})$/;

const cache = new Map<string, BillingIncrement>();

/** Parses `<first>/<next>`; returns null when the text is not a valid increment. */
export function parseIncrement(text: string): BillingIncrement | null {
  const cached = cache.get(text);
  if (cached !== undefined) return cached;
  const m = INCREMENT_RE.exec(text.trim());
  if (m === null) return null;
  const first = Number(m[1]);
  const next = Number(m[2]);
  if (first < 1 || next < 1 || first > MAX_BLOCK_SECONDS || next > MAX_BLOCK_SECONDS) return null;
  const inc: BillingIncrement = Object.freeze({ first, next, text: `${first}/${next}` });
  // Sheets repeat a handful of increments; sharing one frozen object per text keeps decks small.
  if (cache.size < 1000) cache.set(text, inc);
  return inc;
}

/** Like parseIncrement but throws a RangeError naming the bad text. */
export function requireIncrement(text: string): BillingIncrement {
  const inc = parseIncrement(text);
  if (inc === null) throw new RangeError(`invalid billing increment: ${JSON.stringify(text)}`);
  return inc;
}

/**
 * Billable seconds for a call of `durationSeconds` (fractions round up to the next second first):
 * 0 for no time, else the first block, then the rest rounded up to whole `next` blocks.
 */
export function billableSeconds(durationSeconds: number, inc: BillingIncrement): number {
  if (!Number.isFinite(durationSeconds) || durationSeconds <= 0) return 0;
  const secs = Math.ceil(durationSeconds);
  if (secs <= inc.first) return inc.first;
  return inc.first + Math.ceil((secs - inc.first) / inc.next) * inc.next;
}

/** True when `a` never bills less than `b` for any duration (used to call an increment change an increase). */
export function incrementNotCheaper(a: BillingIncrement, b: BillingIncrement): boolean {
  return a.first >= b.first && a.next >= b.next;
}
