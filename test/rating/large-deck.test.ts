import t from 'tap';
import { Decimal } from 'decimal.js';
import { parseRateSheetCsv } from '../../src/rating/sheet.js';
import { createPrefixIndex } from '../../src/rating/prefix-index.js';
import { requireIncrement } from '../../src/rating/increment.js';
import { createPlatformFee, priceCall } from '../../src/rating/pricing.js';
import { toMoney } from '../../src/rating/money.js';

// Row i: prefix = "9" + 6-digit i (unique, 7 digits), rate = (i mod 9973 + 1) / 1e6 per minute.
const ROWS = 200_000;
const prefixOf = (i: number): string => `9${String(i).padStart(6, '0')}`;
const rateOf = (i: number): string => new Decimal((i % 9973) + 1).div(1e6).toFixed(6);

t.test('a 200,000-row CSV sheet parses, indexes and prices correctly', async (t) => {
  const lines = ['prefix,destination,rate,increment'];
  for (let i = 0; i < ROWS; i++)
    lines.push(`${prefixOf(i)},Destination ${i % 500},${rateOf(i)},${i % 2 === 0 ? '60/60' : '6/6'}`);
  // Shorter covering prefixes so that longest-prefix logic is exercised on the big deck too.
  lines.push('9,World,1.000000,1/1', '91,World 1,0.900000,1/1');
  const started = performance.now();
  const sheet = parseRateSheetCsv(lines.join('\n'), { type: 'voice', defaultIncrement: requireIncrement('60/60') });
  const index = createPrefixIndex(sheet.rows);
  const elapsed = performance.now() - started;
  t.same(sheet.errors, []);
  t.equal(sheet.rows.length, ROWS + 2);
  t.equal(index.size, ROWS + 2);
  t.ok(elapsed < 60_000, `parsed and indexed in ${Math.round(elapsed)} ms`);

  const fee = createPlatformFee({ kind: 'percent', percent: '10' });
  for (let i = 0; i < ROWS; i += 997) {
    const m = index.lookup(`${prefixOf(i)}12345`);
    t.equal(m?.prefix, prefixOf(i));
    t.equal(m?.rate, rateOf(i));
  }
  // Prefix 9123456 (row 123456, even → 60/60): 61 s bills 120 s at rate×1.1.
  const m = index.lookup('912345677')!;
  const charge = priceCall(m, 61, fee);
  const expectedRate = new Decimal(rateOf(123456)).times('1.1').toDecimalPlaces(6, Decimal.ROUND_HALF_UP);
  t.equal(charge.billableSeconds, 120);
  t.equal(toMoney(charge.ratePerMinute), expectedRate.toFixed(6));
  t.equal(toMoney(charge.buyerCost), expectedRate.times(2).toFixed(6));
  t.equal(index.lookup('9')?.destination, 'World');
  t.equal(index.lookup('8'), undefined);

  const bad = [...lines];
  bad[100_002] = '9100000,Dup,0.1,60/60'; // row 100001 replaced by a copy of row 100000's prefix
  bad[150_000] = '9149999,Neg,-0.1,60/60';
  const r = parseRateSheetCsv(bad.join('\n'), { type: 'voice', defaultIncrement: requireIncrement('60/60') });
  t.same(
    r.errors.map((e) => e.line),
    [100_003, 150_001],
  );
});
