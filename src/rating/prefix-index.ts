import { Decimal } from 'decimal.js';
import type { BillingIncrement } from './increment.js';
import { requireIncrement } from './increment.js';
import { parseRate } from './money.js';

/** One priced prefix as given to the index builder. */
export interface DeckRow {
  readonly prefix: string;
  readonly destination: string;
  /** Seller rate per minute (voice) or per message (SMS): a Decimal or a string with at most 6 places. */
  readonly rate: Decimal | string;
  readonly increment: BillingIncrement | string;
  /** SMS only: the row prices this network (`<mcc>-<mnc>`); rows without it are country prices. */
  readonly mccMnc?: string | null;
}

/** What a look-up returns; one frozen object per row, created on first use and reused after. */
export interface RateMatch {
  readonly row: number;
  readonly prefix: string;
  readonly destination: string;
  /** 6-place string. */
  readonly rate: string;
  readonly rateDecimal: Decimal;
  readonly increment: BillingIncrement;
  readonly mccMnc: string | null;
}

/** An immutable longest-prefix index over one deck. Rebuild a new one to change a deck, then swap. */
export interface PrefixIndex {
  /** Country rows (no MCC-MNC) in the index. */
  readonly size: number;
  /** Network rows (with MCC-MNC). */
  readonly networkSize: number;
  /** Row number of the longest country prefix of `digits`, or -1. Allocation-free. */
  lookupIndex(digits: string): number;
  /** Longest country prefix of `digits`. */
  lookup(digits: string): RateMatch | undefined;
  /** The network row for `mccMnc` whose prefix is the longest prefix of `digits`, if the deck has one. */
  lookupNetwork(digits: string, mccMnc: string): RateMatch | undefined;
  /** Row by number (country and network rows share one numbering). */
  row(i: number): RateMatch;
  readonly rowCount: number;
}

const DIGIT_0 = 48;
// 10 child slots and the node's own row (padding blocks to 64 bytes was measured: no faster).
const BLOCK = 11;
const PREFIX_RE = /^\d{1,15}$/;

/**
 * Builds a digit trie stored in typed arrays: an internal node is a block of 10 child slots in
 * `children` (0 = none, > 0 = internal node id, < 0 = a leaf holding row `-slot - 1`), followed by an
 * 11th slot holding the row ending exactly at that node or -1 (kept in the same block so a step
 * touches one region of memory: look-ups over many decks are bound by cache misses). Leaves need no block of their own,
 * which keeps a 50,000-prefix deck in about a megabyte and each look-up to one array read per digit.
 * Throws on a bad prefix, rate or increment, or a duplicate: decks reach here already validated.
 */
export function createPrefixIndex(rows: readonly DeckRow[]): PrefixIndex {
  // Built in its own function so the growable build arrays and interning maps are not kept alive
  // by the look-up closures below (they would share one closure context).
  const {
    n, prefixValue, prefixLen, rateIdx, destIdx, incIdx, mccIdx, rateTexts, rateDecimals, dests, incs, mccs, network, kids, countrySize, networkSize,
  } = buildDeck(rows);
  const prefixText = (i: number): string => String(prefixValue[i]!).padStart(prefixLen[i]!, '0');
  const matches: (RateMatch | undefined)[] = new Array<RateMatch | undefined>(n);

  const row = (i: number): RateMatch => {
    let m = matches[i];
    if (m === undefined) {
      if (i < 0 || i >= n) throw new RangeError(`row ${i} out of range`);
      const mi = mccIdx[i]!;
      m = Object.freeze({
        row: i,
        prefix: prefixText(i),
        destination: dests[destIdx[i]!]!,
        rate: rateTexts[rateIdx[i]!]!,
        rateDecimal: rateDecimals[rateIdx[i]!]!,
        increment: incs[incIdx[i]!]!,
        mccMnc: mi < 0 ? null : mccs[mi]!,
      });
      matches[i] = m;
    }
    return m;
  };

  const lookupIndex = (digits: string): number => {
    let node = 0;
    let best = -1;
    const len = digits.length;
    for (let k = 0; k < len; k++) {
      const d = digits.charCodeAt(k) - DIGIT_0;
      if (d < 0 || d > 9) return best;
      const c = kids[node * BLOCK + d]!;
      if (c === 0) return best;
      if (c < 0) return -c - 1;
      node = c;
      const t = kids[node * BLOCK + 10]!;
      if (t >= 0) best = t;
    }
    return best;
  };

  return Object.freeze({
    size: countrySize,
    networkSize,
    rowCount: n,
    lookupIndex,
    lookup(digits: string): RateMatch | undefined {
      const i = lookupIndex(digits);
      return i < 0 ? undefined : row(i);
    },
    lookupNetwork(digits: string, mccMnc: string): RateMatch | undefined {
      const list = network.get(mccMnc);
      if (list === undefined) return undefined;
      for (const i of list) if (digits.startsWith(row(i).prefix)) return row(i);
      return undefined;
    },
    row,
  });
}

function buildDeck(rows: readonly DeckRow[]) {
  const n = rows.length;
  // Prefixes are kept as numbers (15 digits fit a double exactly) plus their length, not strings:
  // this halves the memory of a large deck; the text is made once per row when first matched.
  const prefixValue = new Float64Array(n);
  const prefixLen = new Uint8Array(n);
  const rateIdx = new Int32Array(n);
  const destIdx = new Int32Array(n);
  const incIdx = new Int32Array(n);
  const mccIdx = new Int32Array(n);
  // Sheets repeat the same rates, names and increments; interning keeps one copy of each.
  const rateTexts: string[] = [];
  const rateDecimals: Decimal[] = [];
  const rateByRaw = new Map<string, number>();
  const rateByText = new Map<string, number>();
  const dests: string[] = [];
  const destByName = new Map<string, number>();
  const incs: BillingIncrement[] = [];
  const incByText = new Map<string, number>();
  const mccs: string[] = [];
  const mccByText = new Map<string, number>();
  const network = new Map<string, number[]>();

  let cap = 1024;
  let children = new Int32Array(cap * BLOCK);
  children[10] = -1; // the root holds no row
  let nodes = 1; // node 0 is the root
  let countrySize = 0;
  let networkSize = 0;

  const newNode = (term: number): number => {
    if (nodes === cap) {
      cap *= 2;
      const c = new Int32Array(cap * BLOCK);
      c.set(children);
      children = c;
    }
    children[nodes * BLOCK + 10] = term;
    return nodes++;
  };

  const prefixText = (i: number): string => String(prefixValue[i]!).padStart(prefixLen[i]!, '0');

  for (let i = 0; i < n; i++) {
    const r = rows[i]!;
    const prefix = r.prefix;
    if (!PREFIX_RE.test(prefix)) throw new RangeError(`row ${i}: invalid prefix`);
    prefixValue[i] = Number(prefix);
    prefixLen[i] = prefix.length;

    const rawRate = typeof r.rate === 'string' ? r.rate : r.rate.toFixed();
    let ri = rateByRaw.get(rawRate);
    if (ri === undefined) {
      const p = parseRate(rawRate);
      if (!p.ok) throw new RangeError(`row ${i}: ${p.reason}`);
      ri = rateByText.get(p.text);
      if (ri === undefined) {
        ri = rateTexts.length;
        rateByText.set(p.text, ri);
        rateTexts.push(p.text);
        rateDecimals.push(new Decimal(p.text));
      }
      rateByRaw.set(rawRate, ri);
    }
    rateIdx[i] = ri;

    let di = destByName.get(r.destination);
    if (di === undefined) {
      di = dests.length;
      dests.push(r.destination);
      destByName.set(r.destination, di);
    }
    destIdx[i] = di;

    const incText = typeof r.increment === 'string' ? r.increment : r.increment.text;
    let ii = incByText.get(incText);
    if (ii === undefined) {
      ii = incs.length;
      incs.push(typeof r.increment === 'string' ? requireIncrement(r.increment) : r.increment);
      incByText.set(incText, ii);
    }
    incIdx[i] = ii;

    const mcc = r.mccMnc ?? null;
    if (mcc !== null && mcc !== '') {
      let mi = mccByText.get(mcc);
      if (mi === undefined) {
        mi = mccs.length;
        mccs.push(mcc);
        mccByText.set(mcc, mi);
      }
      mccIdx[i] = mi;
      let list = network.get(mcc);
      if (list === undefined) network.set(mcc, (list = []));
      for (const j of list) {
        if (prefixText(j) === prefix) throw new RangeError(`row ${i}: duplicate prefix ${prefix} for network ${mcc}`);
      }
      list.push(i);
      networkSize++;
      continue;
    }
    mccIdx[i] = -1;

    let node = 0;
    const last = prefix.length - 1;
    for (let k = 0; k <= last; k++) {
      const slot = node * BLOCK + (prefix.charCodeAt(k) - DIGIT_0);
      const c = children[slot]!;
      if (k === last) {
        if (c > 0) {
          if (children[c * BLOCK + 10] !== -1) throw new RangeError(`row ${i}: duplicate prefix ${prefix}`);
          children[c * BLOCK + 10] = i;
        } else if (c < 0) {
          throw new RangeError(`row ${i}: duplicate prefix ${prefix}`);
        } else {
          children[slot] = -(i + 1);
        }
      } else if (c > 0) {
        node = c;
      } else {
        // An existing leaf becomes an internal node that keeps its row as terminal.
        const child = newNode(c < 0 ? -c - 1 : -1);
        children[slot] = child;
        node = child;
      }
    }
    countrySize++;
  }

  // Longest network prefix first, so the first match wins.
  for (const list of network.values()) list.sort((a, b) => prefixLen[b]! - prefixLen[a]!);
  return {
    n, prefixValue, prefixLen, rateIdx, destIdx, incIdx, mccIdx, rateTexts, rateDecimals, dests, incs, mccs, network,
    kids: children.slice(0, nodes * BLOCK), countrySize, networkSize,
  };
}
