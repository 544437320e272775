// Rating look-up benchmark: `npx tsx bench/rating/rating.bench.ts [decks] [prefixesPerDeck]`.
// Prints one line per measure. Defaults: 200 decks × 50,000 prefixes, a 200,000-row sheet rebuild.
import v8 from 'node:v8';
import vm from 'node:vm';
import { createPrefixIndex } from '../../src/rating/prefix-index.js';
import type { DeckRow } from '../../src/rating/prefix-index.js';
import { createDeckRegistry } from '../../src/rating/deck-registry.js';
import { parseRateSheetCsv } from '../../src/rating/sheet.js';
import { requireIncrement } from '../../src/rating/increment.js';
import { Decimal } from 'decimal.js';
import { orderMembers } from '../../src/modules/marketplace/blends/rules.js';
import { lookupPrivateRate, type PrivateRate } from '../../src/modules/marketplace/offers/private-rates.js';
import { callerOrigin } from '../../src/rating/origin.js';

v8.setFlagsFromString('--expose_gc');
const gc = vm.runInNewContext('gc') as () => void;

const DECKS = Number(process.argv[2] ?? 200);
const PER_DECK = Number(process.argv[3] ?? 50_000);
const SHEET_ROWS = 200_000;
const LOOKUPS = 5_000_000;

// Deterministic PRNG (mulberry32) so runs compare.
let seed = 42;
const rnd = (): number => {
  seed = (seed + 0x6d2b79f5) | 0;
  let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
  return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
};
const COUNTRY = [
  '1',
  '7',
  '20',
  '27',
  '30',
  '31',
  '33',
  '34',
  '39',
  '44',
  '49',
  '52',
  '55',
  '61',
  '62',
  '63',
  '81',
  '86',
  '91',
  '92',
  '234',
  '254',
  '351',
  '353',
  '380',
  '880',
  '971',
  '966',
];
const digits = (n: number): string => {
  let s = '';
  for (let i = 0; i < n; i++) s += String(Math.floor(rnd() * 10));
  return s;
};
const RATES = Array.from({ length: 3000 }, (_, i) => `0.${String(1000 + i * 13).padStart(6, '0')}`);
const INCS = ['60/60', '1/1', '6/6', '30/6'];

function deckRows(count: number): DeckRow[] {
  const seen = new Set<string>();
  const rows: DeckRow[] = [];
  for (const c of COUNTRY) {
    seen.add(c);
    rows.push({
      prefix: c,
      destination: `Country ${c}`,
      rate: RATES[Math.floor(rnd() * RATES.length)]!,
      increment: '60/60',
    });
  }
  while (rows.length < count) {
    const c = COUNTRY[Math.floor(rnd() * COUNTRY.length)]!;
    const p = c + digits(1 + Math.floor(rnd() * 6));
    if (seen.has(p)) continue;
    seen.add(p);
    rows.push({
      prefix: p,
      destination: `Country ${c} area ${p.length}`,
      rate: RATES[Math.floor(rnd() * RATES.length)]!,
      increment: INCS[rows.length % 4]!,
    });
  }
  return rows;
}

const mem = (): number => {
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};
const pct = (sorted: Float64Array, p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

const registry = createDeckRegistry();
const ids: string[] = [];
const memBefore = mem();
let buildMs = 0;
// One deck in ten is priced by origin as wholesale decks are: an EEA-origin and a UK A-number
// row beside the default for each country row (the call path's lookupFrom walks them).
const withOrigins = (rows: DeckRow[]): DeckRow[] => [
  ...rows,
  ...COUNTRY.flatMap((c) => [
    { prefix: c, destination: `Country ${c}`, rate: RATES[0]!, increment: '60/60', origin: 'EEA' },
    { prefix: c, destination: `Country ${c}`, rate: RATES[1]!, increment: '60/60', origin: '44' },
  ]),
];
for (let d = 0; d < DECKS; d++) {
  const rows = d % 10 === 0 ? withOrigins(deckRows(PER_DECK)) : deckRows(PER_DECK);
  const t0 = performance.now();
  registry.set(`deck-${d}`, createPrefixIndex(rows));
  buildMs += performance.now() - t0;
  ids.push(`deck-${d}`);
}
const memAfter = mem();
const totalPrefixes = DECKS * PER_DECK;
console.log(`decks=${DECKS} prefixes_per_deck=${PER_DECK} total_prefixes=${totalPrefixes}`);
console.log(`index_build_ms_per_deck=${(buildMs / DECKS).toFixed(1)}`);
console.log(
  `memory_mb_per_million_prefixes=${((((memAfter - memBefore) / totalPrefixes) * 1e6) / 1048576).toFixed(1)}`,
);

// Numbers: a country code then 10 random digits; most hit a longer prefix, some only the country.
const NUMBERS = Array.from({ length: 100_000 }, () => COUNTRY[Math.floor(rnd() * COUNTRY.length)]! + digits(10));
const decks = ids.map((id) => registry.get(id)!);
let hits = 0;
// CPU time is reported beside wall time because the bench machine is shared: wall time there
// includes time the process spent waiting for a core. Rates below are per CPU-second unless named wall.
const measure = (label: string, count: number, body: () => void): number => {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  body();
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const rate = count / ((cpu.user + cpu.system) / 1e6);
  console.log(`${label} wall=${Math.round(count / (ms / 1000))} cpu=${Math.round(rate)}`);
  return rate;
};
// Warm up (JIT), then the anchor: the same look-ups confined to two decks, whose tries stay in cache;
// the ratio to it shows what spreading look-ups over every deck costs in cache misses.
for (let i = 0; i < 1_000_000; i++) if (decks[i % 2]!.lookup(NUMBERS[i % NUMBERS.length]!) !== undefined) hits++;
const anchor = measure('anchor_lookups_per_second_2_decks', LOOKUPS, () => {
  for (let i = 0; i < LOOKUPS; i++) if (decks[i % 2]!.lookup(NUMBERS[i % NUMBERS.length]!) !== undefined) hits++;
});
const spreadLookups = (): void => {
  for (let i = 0; i < LOOKUPS; i++)
    if (decks[(i * 7) % DECKS]!.lookup(NUMBERS[i % NUMBERS.length]!) !== undefined) hits++;
};
hits = 0;
// First pass over every deck: most matched rows get their RateMatch object made here (once per row).
let rate = measure('lookups_per_second_one_core_first_pass', LOOKUPS, spreadLookups);
console.log(`hit_ratio=${(hits / LOOKUPS).toFixed(3)} first_pass_vs_anchor=${(rate / anchor).toFixed(2)}`);
// Steady state: the same look-ups again, every matched row's object already made.
rate = measure('lookups_per_second_one_core', LOOKUPS, spreadLookups);
console.log(`lookups_vs_anchor=${(rate / anchor).toFixed(2)}`);
let sink = 0;
measure('lookup_index_per_second_one_core', LOOKUPS, () => {
  for (let i = 0; i < LOOKUPS; i++) sink += decks[(i * 7) % DECKS]!.lookupIndex(NUMBERS[i % NUMBERS.length]!);
});
measure('registry_lookups_per_second_by_deck_id', LOOKUPS, () => {
  for (let i = 0; i < LOOKUPS; i++)
    if (registry.lookup(ids[(i * 7) % DECKS]!, NUMBERS[i % NUMBERS.length]!) !== undefined) hits++;
});

// Latency: each sample times one look-up with hrtime (the timer's own ~30-60 ns are included).
const SAMPLES = 200_000;
const lat = new Float64Array(SAMPLES);
for (let i = 0; i < SAMPLES; i++) {
  const deck = decks[(i * 13) % DECKS]!;
  const num = NUMBERS[(i * 31) % NUMBERS.length]!;
  const a = process.hrtime.bigint();
  deck.lookup(num);
  lat[i] = Number(process.hrtime.bigint() - a);
}
lat.sort();
console.log(`lookup_latency_ns p50=${pct(lat, 0.5)} p99=${pct(lat, 0.99)} p999=${pct(lat, 0.999)}`);

// Multi-deck: one number priced in each of many decks (a buyer's purchases); rates count deck look-ups.
const out: ReturnType<typeof registry.lookupMany> = [];
for (const width of [10, DECKS]) {
  const list = ids.slice(0, width);
  const calls = Math.max(1, Math.floor(2_000_000 / width));
  const pass = (): void => {
    for (let i = 0; i < calls; i++) registry.lookupMany(list, NUMBERS[i % NUMBERS.length]!, out);
  };
  // The first pass makes most matched rows' objects; the measured second pass is the steady state.
  pass();
  measure(`multi_deck_lookups_per_second_${width}_decks`, calls * width, pass);
}
if (sink === 0.5) console.log('unreachable');

// Rebuild from a 200,000-row CSV sheet: parse + validate, then index.
const lines = ['prefix,destination,rate,increment,effective_date'];
const sheetRows = deckRows(SHEET_ROWS);
for (const r of sheetRows)
  lines.push(`${r.prefix},${r.destination},${String(r.rate)},${String(r.increment)},2026-12-01`);
const csv = lines.join('\n');
const cpu1 = process.cpuUsage();
let t0 = performance.now();
const sheet = parseRateSheetCsv(csv, { type: 'voice', defaultIncrement: requireIncrement('60/60') });
const parseMs = performance.now() - t0;
t0 = performance.now();
const idx = createPrefixIndex(sheet.rows);
const indexMs = performance.now() - t0;
const rebuildCpu = process.cpuUsage(cpu1);
if (sheet.errors.length > 0 || idx.size !== SHEET_ROWS) throw new Error('sheet did not parse cleanly');
console.log(
  `rebuild_200k_rows_ms parse_validate=${parseMs.toFixed(0)} index=${indexMs.toFixed(0)} total=${(parseMs + indexMs).toFixed(0)} cpu_total=${((rebuildCpu.user + rebuildCpu.system) / 1000).toFixed(0)}`,
);

// Buyer pricing with blends and offers in the decks: each buyer prices a number over its 10 usable
// routes, as routing does. One route in ten is a least-cost blend of 3 member decks (margin added),
// and 20% of buyers hold private offer rates (50 prefixes) on 2 of their routes, looked up before
// the deck's rate. Each number has a caller (its origin worked out once, as the call path does)
// and decks are read with lookupFrom, one in ten having origin rows. The anchor is the same buyers
// over plain routes with plain look-ups; rates count priced numbers.
{
  const BUYERS = 1000;
  const ROUTES_PER_BUYER = 10;
  const NUMBERS_PRICED = 200_000;
  const margin = new Decimal('0.001000');
  const now = new Date();
  const until = new Date(now.getTime() + 30 * 86_400_000);
  interface BuyerRoute {
    deck: number;
    members: number[] | null;
    privates: Map<string, PrivateRate> | undefined;
  }
  const buyers: BuyerRoute[][] = [];
  for (let b = 0; b < BUYERS; b++) {
    const withOffers = b % 5 === 0;
    const routes: BuyerRoute[] = [];
    for (let k = 0; k < ROUTES_PER_BUYER; k++) {
      const deck = Math.floor(rnd() * DECKS);
      const members = k === 0 ? [deck, (deck + 1) % DECKS, (deck + 2) % DECKS] : null;
      let privates: Map<string, PrivateRate> | undefined;
      if (withOffers && (k === 1 || k === 2)) {
        privates = new Map();
        for (let i = 0; i < 50; i++) {
          const c = COUNTRY[Math.floor(rnd() * COUNTRY.length)]!;
          const prefix = c + digits(Math.floor(rnd() * 3));
          privates.set(prefix, {
            prefix,
            rate: new Decimal(RATES[i]!),
            offerId: 'o',
            validFrom: now,
            validUntil: until,
          });
        }
      }
      routes.push({ deck, members, privates });
    }
    buyers.push(routes);
  }
  const CALLERS = ['33142685300', '442071234567', '12125550100', '4930123456', '81312345678'];
  const priceOne = (r: BuyerRoute, num: string, caller: ReturnType<typeof callerOrigin>): Decimal | undefined => {
    if (r.members !== null) {
      const covering = [];
      for (const [i, d] of r.members.entries()) {
        const m = decks[d]!.lookupFrom(num, caller);
        if (m !== undefined)
          covering.push({
            routeId: `m${d}`,
            position: i + 1,
            percent: 0,
            price: m.rateDecimal.plus(margin),
            quality: 0.5,
          });
      }
      return orderMembers('least_cost', covering, rnd)[0]?.price;
    }
    const m = decks[r.deck]!.lookupFrom(num, caller);
    if (m === undefined) return undefined;
    return lookupPrivateRate(r.privates, num, now)?.rate ?? m.rateDecimal;
  };
  let priced = 0;
  const run = (withExtras: boolean) => () => {
    for (let i = 0; i < NUMBERS_PRICED; i++) {
      const num = NUMBERS[i % NUMBERS.length]!;
      const caller = withExtras ? callerOrigin(CALLERS[i % CALLERS.length]!) : null;
      for (const r of buyers[i % BUYERS]!) {
        const p = caller !== null ? priceOne(r, num, caller) : decks[r.deck]!.lookup(num)?.rateDecimal;
        if (p !== undefined) priced++;
      }
    }
  };
  run(false)();
  run(true)();
  const base = measure('buyer_pricing_numbers_per_second_10_routes_plain', NUMBERS_PRICED, run(false));
  const mixed = measure(
    'buyer_pricing_numbers_per_second_10_routes_blends_offers_20pct_origins',
    NUMBERS_PRICED,
    run(true),
  );
  console.log(`buyer_pricing_blends_offers_vs_plain=${(mixed / base).toFixed(2)} priced=${priced}`);
}
