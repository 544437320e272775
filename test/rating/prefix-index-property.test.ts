import t from 'tap';
import { createPrefixIndex } from '../../src/rating/prefix-index.js';
import type { DeckRow } from '../../src/rating/prefix-index.js';
import { createDeckRegistry } from '../../src/rating/deck-registry.js';

// Deterministic PRNG (mulberry32) so a failure repeats with its seed.
const prng = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
  return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
};

/** Random decks over few digits, so prefixes nest, share paths and end inside one another. */
function randomDeck(rnd: () => number, size: number, alphabet: number, networks: string[]): DeckRow[] {
  const seen = new Set<string>();
  const rows: DeckRow[] = [];
  const incs = ['60/60', '1/1', '6/6', '30/6'];
  for (let tries = 0; rows.length < size && tries < size * 20; tries++) {
    const len = 1 + Math.floor(rnd() * (rnd() < 0.1 ? 15 : 7));
    let p = '';
    for (let i = 0; i < len; i++) p += String(Math.floor(rnd() * alphabet));
    const mccMnc = rnd() < 0.2 ? networks[Math.floor(rnd() * networks.length)]! : null;
    const key = `${mccMnc ?? ''}/${p}`;
    if (seen.has(key)) continue;
    seen.add(key);
    rows.push({
      prefix: p,
      destination: `d${rows.length % 7}`,
      rate: (Math.floor(rnd() * 1e6) / 1e6).toFixed(6),
      increment: incs[rows.length % 4]!,
      mccMnc,
    });
  }
  return rows;
}

/**
 * The reference answer, independent of the index's structure: every row by its (network, prefix)
 * key, probed with each of the number's leading digit strings from the longest down. Equal to a
 * scan of every row keeping the longest matching prefix (keys are unique within a deck), at a
 * dozen probes a number instead of a check of every row (the large decks made that scan ~149
 * million row checks, most of this file's CPU).
 */
type Reference = (number: string, mccMnc: string | null) => number;
function reference(rows: readonly DeckRow[]): Reference {
  const byKey = new Map<string, number>();
  rows.forEach((r, i) => {
    const key = `${r.mccMnc ?? ''}/${r.prefix}`;
    if (byKey.has(key)) throw new Error(`duplicate deck key ${key}`);
    byKey.set(key, i);
  });
  return (number, mccMnc) => {
    const digits = /^\d*/.exec(number)![0];
    for (let len = digits.length; len >= 0; len--) {
      const i = byKey.get(`${mccMnc ?? ''}/${digits.slice(0, len)}`);
      if (i !== undefined) return i;
    }
    return -1;
  };
}

function randomNumber(rnd: () => number, rows: readonly DeckRow[], alphabet: number): string {
  // Half extend a prefix of the deck (hits, often deeper than it), half are random digits.
  let s =
    rnd() < 0.5 && rows.length > 0
      ? rows[Math.floor(rnd() * rows.length)]!.prefix.slice(0, 1 + Math.floor(rnd() * 15))
      : '';
  const extra = Math.floor(rnd() * 12);
  for (let i = 0; i < extra; i++) s += String(Math.floor(rnd() * Math.max(alphabet, rnd() < 0.2 ? 10 : 1)));
  if (rnd() < 0.05) s = s.slice(0, Math.floor(rnd() * s.length)) + 'x' + s;
  return s;
}

t.test('longest-prefix look-ups equal the reference on random decks', async (t) => {
  const networks = ['234-15', '234-10', '262-01'];
  let checked = 0;
  for (let seed = 1; seed <= 60; seed++) {
    const rnd = prng(seed);
    const alphabet = seed % 10 === 0 ? 10 : 2 + Math.floor(rnd() * 9);
    // Every tenth deck is large enough for the direct table over its first digits (3, 4 or 5 of them).
    const large = [3000, 30_000, 60_000][(seed / 10) % 3]!;
    const rows = randomDeck(rnd, seed % 10 === 0 ? large : Math.floor(rnd() * 200), alphabet, networks);
    const idx = createPrefixIndex(rows);
    const ref = reference(rows);
    t.equal(idx.rowCount, rows.length);
    t.equal(idx.size + idx.networkSize, rows.length);
    let mismatches = 0;
    for (let q = 0; q < 400; q++) {
      const number = randomNumber(rnd, rows, alphabet);
      const want = ref(number, null);
      const got = idx.lookupIndex(number);
      const m = idx.lookup(number);
      if (
        got !== want ||
        (want < 0 ? m !== undefined : m?.row !== want || m.prefix !== rows[want]!.prefix || m !== idx.row(want))
      )
        mismatches++;
      const net = networks[q % networks.length]!;
      const wantNet = ref(number, net);
      const gotNet = idx.lookupNetwork(number, net);
      if ((wantNet < 0 ? -1 : wantNet) !== (gotNet?.row ?? -1)) mismatches++;
      checked++;
    }
    t.equal(mismatches, 0, `seed ${seed}: ${rows.length} rows, digits 0-${alphabet - 1}`);
    // Every row's own prefix finds that row (country rows), and its fields are the row's.
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i]!;
      if (r.mccMnc !== null && r.mccMnc !== undefined) continue;
      const m = idx.lookup(r.prefix);
      if (m?.row !== i || m.destination !== r.destination || m.rate !== r.rate || m.increment.text !== r.increment) {
        t.fail(`seed ${seed}: row ${i} (${r.prefix}) not found as itself`);
        break;
      }
    }
  }
  t.ok(checked >= 24_000, 'look-ups compared');
});

t.test('multi-deck look-ups equal the reference of each deck', async (t) => {
  const rnd = prng(99);
  const reg = createDeckRegistry();
  const decks = new Map<string, DeckRow[]>();
  const refs = new Map<string, Reference>();
  for (let d = 0; d < 25; d++) {
    const rows = randomDeck(rnd, 50 + Math.floor(rnd() * 400), 4, ['234-15']);
    decks.set(`deck-${d}`, rows);
    refs.set(`deck-${d}`, reference(rows));
    reg.set(`deck-${d}`, createPrefixIndex(rows));
  }
  const ids = [...decks.keys(), 'missing'];
  const all = [...decks.values()].flat();
  let mismatches = 0;
  const out: ReturnType<typeof reg.lookupMany> = [];
  for (let q = 0; q < 2000; q++) {
    const number = randomNumber(rnd, all, 4);
    const want = ids.flatMap((id) => {
      const rows = decks.get(id);
      const i = rows === undefined ? -1 : refs.get(id)!(number, null);
      return i < 0 ? [] : [`${id}:${rows![i]!.prefix}`];
    });
    const got = reg.lookupMany(ids, number, out).map((m) => `${m.deckId}:${m.match.prefix}`);
    if (JSON.stringify(got) !== JSON.stringify(want)) mismatches++;
  }
  t.equal(mismatches, 0, 'every deck at its own longest prefix, in the order asked');
});
