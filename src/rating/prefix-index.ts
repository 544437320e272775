import { Decimal } from 'decimal.js';
import type { BillingIncrement } from './increment.js';
import { requireIncrement } from './increment.js';
import { parseRate } from './money.js';
import { runSliced, runToEnd, STEP_ITEMS, type Slicing, type Steps } from '../platform/cooperative.js';
import type { CallerOrigin } from './origin.js';

/** One priced prefix as given to the index builder. */
export interface DeckRow {
  readonly prefix: string;
  readonly destination: string;
  /** Seller rate per minute (voice) or per message (SMS): a Decimal or a string with at most 6 places. */
  readonly rate: Decimal | string;
  readonly increment: BillingIncrement | string;
  /** SMS only: the row prices this network (`<mcc>-<mnc>`); rows without it are country prices. */
  readonly mccMnc?: string | null;
  /** The callers the row prices (see origin.ts); null or '' for the default row. */
  readonly origin?: string | null;
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
  /** The row's origin, null for a default row. */
  readonly origin: string | null;
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
  /** Row by number (country and network rows share one numbering); default rows only. */
  row(i: number): RateMatch;
  readonly rowCount: number;
  /** Origins the deck has rows for (empty for most decks: then `lookupFrom` is `lookup`). */
  readonly origins: readonly string[];
  /**
   * The country row pricing a call to `digits` from `caller`: the destination's longest prefix among
   * the default rows and the rows of every origin the caller matches; at that prefix, the most
   * specific matching origin (A-number prefix, longest first; country; EU; EEA), else the default.
   */
  lookupFrom(digits: string, caller: CallerOrigin): RateMatch | undefined;
  /** The index of one origin's rows, if the deck has any. */
  originIndex(origin: string): PrefixIndex | undefined;
}

const DIGIT_0 = 48;
// Build-time trie: 10 child slots and the node's own row per block (see buildDeck).
const BLOCK = 11;
const HAS_ROW = 1 << 10;
const PREFIX_RE = /^\d{1,15}$/;
/** Set bits in a 10-bit child mask: the rank of a child among its siblings. */
const POPCOUNT = new Uint8Array(1024);
for (let i = 1; i < 1024; i++) POPCOUNT[i] = (i & 1) + POPCOUNT[i >> 1]!;

/**
 * Builds a digit trie packed into one Int32Array. A node is a header word (bits 0-9: which digits
 * have a child; bit 10: a row ends here), then that row if any, then one word per present child in
 * digit order: > 0 is the offset of an internal node, < 0 a leaf holding row `-word - 1` (leaves take
 * no node of their own). A step reads the header and the child word, which sit side by side, so a
 * look-up costs about one cache line per digit; look-ups over many decks are bound by cache misses,
 * and the packed nodes (about 3 words instead of a fixed 11) keep far more of the upper levels cached.
 * Nodes are laid out level by level for the same reason: the hot top of a deck is contiguous, and
 * decks of 1,000 rows or more skip the top levels through a direct table (packWithDirect).
 * Throws on a bad prefix, rate or increment, or a duplicate: decks reach here already validated.
 */
export function createPrefixIndex(rows: readonly DeckRow[]): PrefixIndex {
  const { plain, byOrigin } = splitByOrigin(rows);
  const subs = new Map<string, PrefixIndex>();
  for (const [origin, list] of byOrigin) subs.set(origin, indexOver(runToEnd(buildDeck(list)), origin, null));
  return indexOver(runToEnd(buildDeck(plain)), null, subs);
}

/** `createPrefixIndex` that gives the event loop a turn after every slice of work (large decks). */
export async function createPrefixIndexSliced(rows: readonly DeckRow[], slicing: Slicing = {}): Promise<PrefixIndex> {
  const { plain, byOrigin } = splitByOrigin(rows);
  const subs = new Map<string, PrefixIndex>();
  for (const [origin, list] of byOrigin)
    subs.set(origin, indexOver(await runSliced(buildDeck(list), slicing), origin, null));
  return indexOver(await runSliced(buildDeck(plain), slicing), null, subs);
}

/** Default rows, and origin rows grouped by origin; a deck without origin rows is passed on uncopied. */
function splitByOrigin(rows: readonly DeckRow[]): { plain: readonly DeckRow[]; byOrigin: Map<string, DeckRow[]> } {
  const byOrigin = new Map<string, DeckRow[]>();
  let first = -1;
  for (let i = 0; i < rows.length; i++) {
    const o = rows[i]!.origin;
    if (o !== null && o !== undefined && o !== '') {
      first = i;
      break;
    }
  }
  if (first < 0) return { plain: rows, byOrigin };
  const plain: DeckRow[] = rows.slice(0, first);
  for (let i = first; i < rows.length; i++) {
    const r = rows[i]!;
    const o = r.origin;
    if (o === null || o === undefined || o === '') {
      plain.push(r);
      continue;
    }
    if (r.mccMnc !== null && r.mccMnc !== undefined && r.mccMnc !== '')
      throw new RangeError(`row ${i}: an origin prices country rows only`);
    let list = byOrigin.get(o);
    if (list === undefined) byOrigin.set(o, (list = []));
    list.push(r);
  }
  return { plain, byOrigin };
}

const DIGIT_ORIGIN_RE = /^\d+$/;
const NO_SUBS: ReadonlyMap<string, PrefixIndex> = new Map();

type BuiltDeck = typeof buildDeck extends (rows: readonly DeckRow[]) => Steps<infer R> ? R : never;

function indexOver(
  built: BuiltDeck,
  origin: string | null,
  subs: ReadonlyMap<string, PrefixIndex> | null,
): PrefixIndex {
  // Built in its own function so the growable build arrays and interning maps are not kept alive
  // by the look-up closures below (they would share one closure context).
  const {
    n,
    prefixValue,
    prefixLen,
    rateIdx,
    destIdx,
    incIdx,
    mccIdx,
    rateTexts,
    rateDecimals,
    dests,
    incs,
    mccs,
    network,
    trie,
    direct,
    directDigits,
    countrySize,
    networkSize,
  } = built;
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
        origin,
      });
      matches[i] = m;
    }
    return m;
  };

  const lookupIndex = (digits: string): number => {
    let node = 0;
    let best = -1;
    let k = 0;
    const len = digits.length;
    if (len >= directDigits && directDigits > 0) {
      // The first digits index the direct table in one read (see packWithDirect).
      let key = 0;
      for (; k < directDigits; k++) {
        const d = digits.charCodeAt(k) - DIGIT_0;
        if (d < 0 || d > 9) break;
        key = key * 10 + d;
      }
      if (k === directDigits) {
        const e = direct![key]!;
        if (e < 0) return -e - 2;
        node = e;
        if ((trie[node]! & HAS_ROW) !== 0) best = trie[node + 1]!;
      } else {
        k = 0;
      }
    }
    for (; k < len; k++) {
      const d = digits.charCodeAt(k) - DIGIT_0;
      if (d < 0 || d > 9) return best;
      const h = trie[node]!;
      if (((h >> d) & 1) === 0) return best;
      const c = trie[node + 1 + ((h >> 10) & 1) + POPCOUNT[h & ((1 << d) - 1)]!]!;
      if (c < 0) return -c - 1;
      node = c;
      if ((trie[node]! & HAS_ROW) !== 0) best = trie[node + 1]!;
    }
    return best;
  };

  const lookup = (digits: string): RateMatch | undefined => {
    const i = lookupIndex(digits);
    return i < 0 ? undefined : row(i);
  };
  const originSubs = subs ?? NO_SUBS;
  const origins = Object.freeze([...originSubs.keys()]);
  // A-number prefix origins by length, longest first, so the walk below meets the most specific first.
  const prefixLengths = [...new Set(origins.filter((o) => DIGIT_ORIGIN_RE.test(o)).map((o) => o.length))].sort(
    (a, b) => b - a,
  );

  const lookupFrom = (digits: string, caller: CallerOrigin): RateMatch | undefined => {
    const base = lookup(digits);
    if (originSubs.size === 0 || caller.digits === '') return base;
    let best = base;
    let bestLen = base === undefined ? -1 : base.prefix.length;
    let fromOrigin = false;
    // Tried from the most specific origin: a later one wins only with a longer destination prefix.
    const consider = (sub: PrefixIndex | undefined): void => {
      const m = sub?.lookup(digits);
      if (m === undefined) return;
      const len = m.prefix.length;
      if (len > bestLen || (len === bestLen && !fromOrigin)) {
        best = m;
        bestLen = len;
        fromOrigin = true;
      }
    };
    for (const len of prefixLengths)
      if (len <= caller.digits.length) consider(originSubs.get(caller.digits.slice(0, len)));
    if (caller.country !== null) consider(originSubs.get(caller.country));
    for (const r of caller.regions) consider(originSubs.get(r));
    return best;
  };

  return Object.freeze({
    size: countrySize,
    networkSize,
    rowCount: n,
    lookupIndex,
    lookup,
    origins,
    lookupFrom,
    originIndex: (o: string) => originSubs.get(o),
    lookupNetwork(digits: string, mccMnc: string): RateMatch | undefined {
      const list = network.get(mccMnc);
      if (list === undefined) return undefined;
      for (const i of list) if (digits.startsWith(row(i).prefix)) return row(i);
      return undefined;
    },
    row,
  });
}

function* buildDeck(rows: readonly DeckRow[]) {
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
    if (i % STEP_ITEMS === STEP_ITEMS - 1) yield;
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
    n,
    prefixValue,
    prefixLen,
    rateIdx,
    destIdx,
    incIdx,
    mccIdx,
    rateTexts,
    rateDecimals,
    dests,
    incs,
    mccs,
    network,
    ...packWithDirect(children, nodes, countrySize),
    countrySize,
    networkSize,
  };
}

/** Packs the build-time block trie into the look-up layout described at createPrefixIndex. */
function packTrieWithOffsets(
  blocks: Int32Array,
  nodes: number,
  inherited: Int32Array | null,
): { trie: Int32Array; offset: Int32Array } {
  // Breadth-first order, so each level sits together; the first pass sizes nodes and assigns offsets.
  const order = new Int32Array(nodes);
  const offset = new Int32Array(nodes);
  let head = 0;
  let tail = 1; // order[0] = 0, the root
  let size = 0;
  while (head < tail) {
    const b = order[head++]!;
    offset[b] = size;
    let words = 1;
    if (blocks[b * BLOCK + 10]! >= 0 || (inherited !== null && inherited[b]! >= 0)) words++;
    for (let d = 0; d < 10; d++) {
      const c = blocks[b * BLOCK + d]!;
      if (c === 0) continue;
      words++;
      if (c > 0) order[tail++] = c;
    }
    size += words;
  }
  const trie = new Int32Array(size);
  for (let i = 0; i < nodes; i++) {
    const b = order[i]!;
    let o = offset[b]!;
    const own = blocks[b * BLOCK + 10]!;
    const row = own >= 0 || inherited === null ? own : inherited[b]!;
    let header = row >= 0 ? HAS_ROW : 0;
    for (let d = 0; d < 10; d++) if (blocks[b * BLOCK + d]! !== 0) header |= 1 << d;
    trie[o++] = header;
    if (row >= 0) trie[o++] = row;
    for (let d = 0; d < 10; d++) {
      const c = blocks[b * BLOCK + d]!;
      if (c > 0) trie[o++] = offset[c]!;
      else if (c < 0) trie[o++] = c;
    }
  }
  return { trie, offset };
}

function packTrie(blocks: Int32Array, nodes: number, inherited: Int32Array | null): Int32Array {
  return packTrieWithOffsets(blocks, nodes, inherited).trie;
}

/**
 * Decks this large get a direct table over their first digits: 10^k entries for k = log10(2 × rows),
 * 3 to 5, so at most 8 bytes a row. One read of it replaces the first k steps of a look-up, which
 * over many decks are cache misses too. An entry is the trie node at depth k (>= 0; look-ups go on
 * from there) or the answer for every number starting with those digits: -1 none, else -(row + 2).
 */
const DIRECT_MIN_ROWS = 1000;

function packWithDirect(
  blocks: Int32Array,
  nodes: number,
  countryRows: number,
): { trie: Int32Array; direct: Int32Array | null; directDigits: number } {
  if (countryRows < DIRECT_MIN_ROWS) return { trie: packTrie(blocks, nodes, null), direct: null, directDigits: 0 };
  const k = Math.min(5, Math.max(3, Math.floor(Math.log10(2 * countryRows))));
  const span = 10 ** k;
  // A depth-k node without a row of its own takes its nearest ancestor's row, so arriving there
  // from the table carries the longest match so far (any walk reaching it would hold that row too).
  const inherited = new Int32Array(nodes).fill(-1);
  const direct = new Int32Array(span).fill(-1);
  const code = (row: number): number => (row < 0 ? -1 : -row - 2);
  // Depth-first over the build trie: node, depth, digits so far, best row so far.
  const stack: [number, number, number, number][] = [[0, 0, 0, -1]];
  const fills: [number, number, number][] = [];
  const atDepth: [number, number][] = [];
  while (stack.length > 0) {
    const [b, depth, value, bestAbove] = stack.pop()!;
    const own = blocks[b * BLOCK + 10]!;
    const best = own >= 0 ? own : bestAbove;
    if (depth === k) {
      if (own < 0 && best >= 0) inherited[b] = best;
      atDepth.push([b, value]);
      continue;
    }
    const width = 10 ** (k - depth - 1);
    for (let d = 0; d < 10; d++) {
      const c = blocks[b * BLOCK + d]!;
      const v = value * 10 + d;
      if (c === 0) fills.push([v * width, width, code(best)]);
      else if (c < 0) fills.push([v * width, width, code(-c - 1)]);
      else stack.push([c, depth + 1, v, best]);
    }
  }
  for (const [from, width, e] of fills) direct.fill(e, from, from + width);
  const { trie, offset } = packTrieWithOffsets(blocks, nodes, inherited);
  for (const [b, v] of atDepth) direct[v] = offset[b]!;
  return { trie, direct, directDigits: k };
}
