import t from 'tap';
import { callerOrigin, NO_ORIGIN, parseOrigin } from '../../src/rating/origin.js';
import { createPrefixIndex, createPrefixIndexSliced } from '../../src/rating/prefix-index.js';
import { parseRateSheetCsv } from '../../src/rating/sheet.js';
import { requireIncrement } from '../../src/rating/increment.js';

// A wholesale deck priced by origin: France cheaper from the EEA, cheaper still from Paris numbers
// of one carrier; mobiles have no origin rows (the default applies to every caller).
const deck = [
  { prefix: '33', destination: 'France', rate: '0.090000', increment: '60/60' },
  { prefix: '33', destination: 'France', rate: '0.012000', increment: '60/60', origin: 'EEA' },
  { prefix: '33', destination: 'France', rate: '0.011000', increment: '60/60', origin: 'EU' },
  { prefix: '33', destination: 'France', rate: '0.010000', increment: '60/60', origin: 'FR' },
  { prefix: '33', destination: 'France', rate: '0.009000', increment: '60/60', origin: '3314' },
  { prefix: '336', destination: 'France Mobile', rate: '0.150000', increment: '60/60' },
  { prefix: '44', destination: 'United Kingdom', rate: '0.050000', increment: '60/60', origin: 'GB' },
];

t.test('an origin is an A-number prefix, a country or a region, normalised', async (t) => {
  t.same(parseOrigin('+4420'), { origin: '4420', kind: 'prefix' });
  t.same(parseOrigin('fr'), { origin: 'FR', kind: 'country' });
  t.same(parseOrigin('eea'), { origin: 'EEA', kind: 'region' });
  t.equal(parseOrigin('XX'), null, 'not a country');
  t.equal(parseOrigin('EMEA'), null);
  t.equal(parseOrigin('44a'), null);
});

t.test("a caller's origin: digits, country from the number's ranges, regions narrowest first", async (t) => {
  t.same(callerOrigin('+33142685300'), { digits: '33142685300', country: 'FR', regions: ['EU', 'EEA'] });
  t.same(callerOrigin('4722000000').regions, ['EEA'], 'Norway is in the EEA, not the EU');
  t.equal(callerOrigin('+14165550100').country, 'CA', 'NANP: the country from the area code');
  t.equal(callerOrigin('+14155550100').country, 'US');
  t.equal(callerOrigin('447700900123').country, 'GB', 'a number outside known ranges: the calling code’s main country');
  t.same(callerOrigin('Acme'), NO_ORIGIN, 'an alphanumeric sender has no origin');
  t.same(callerOrigin(null), NO_ORIGIN);
});

t.test(
  "a caller's number in other spellings: separators, a 00 prefix; names and malformed numbers have no origin",
  async (t) => {
    for (const spelled of ['+33 1 42 68 53 00', '0033142685300', '+0033 (1) 42-68.53.00', '33142685300'])
      t.equal(callerOrigin(spelled).digits, '33142685300', spelled);
    for (const bad of ['sipp', 'anonymous', '+', '', '0142685300', '+1234567890123456', '12a45', '+ 0 1'])
      t.same(callerOrigin(bad), NO_ORIGIN, JSON.stringify(bad));
  },
);

t.test('the destination’s longest prefix first, then the most specific origin', async (t) => {
  const idx = createPrefixIndex(deck);
  t.equal(idx.size, 2, 'default rows only in the main index');
  t.same([...idx.origins].sort(), ['3314', 'EEA', 'EU', 'FR', 'GB']);
  const rate = (to: string, from: string | null) => idx.lookupFrom(to, callerOrigin(from))?.rate;
  t.equal(rate('33123456789', '+12125550100'), '0.090000', 'a US caller pays the default');
  t.equal(rate('33123456789', null), '0.090000', 'no caller: the default');
  t.equal(rate('33123456789', '+4722000000'), '0.012000', 'Norway: EEA');
  t.equal(rate('33123456789', '+4930123456'), '0.011000', 'Germany: EU before EEA');
  t.equal(rate('33123456789', '+33299000000'), '0.010000', 'France: the country before its regions');
  t.equal(rate('33123456789', '+33142685300'), '0.009000', 'the A-number prefix is the most specific');
  t.equal(rate('33612345678', '+33142685300'), '0.150000', 'a longer destination prefix wins over any origin');
  t.equal(idx.lookupFrom('33612345678', callerOrigin('+33142685300'))?.origin, null);
  t.equal(idx.lookupFrom('33123456789', callerOrigin('+33142685300'))?.origin, '3314');
  t.equal(rate('442071234567', '+12125550100'), undefined, 'an origin-only destination is not covered for others');
  t.equal(rate('442071234567', '+442071234567'), '0.050000');
  t.equal(idx.lookup('33123456789')?.rate, '0.090000', 'lookup without a caller is the default');
});

t.test('the sliced build gives the same answers; bad origin rows are refused', async (t) => {
  const idx = await createPrefixIndexSliced(deck);
  t.equal(idx.lookupFrom('33123456789', callerOrigin('+33142685300'))?.rate, '0.009000');
  t.throws(() => createPrefixIndex([deck[1]!, deck[1]!]), /duplicate/);
  t.throws(
    () =>
      createPrefixIndex([
        { prefix: '44', destination: 'x', rate: '1', increment: '1/1', mccMnc: '234-15', origin: 'GB' },
      ]),
    /origin/,
  );
});

t.test('sheets carry an origin column; duplicates count per origin', async (t) => {
  const opts = { type: 'voice' as const, defaultIncrement: requireIncrement('60/60') };
  const ok = parseRateSheetCsv(
    'prefix,destination,rate,origin\n33,France,0.09,\n33,France,0.012,eea\n33,France,0.009,+3314\n',
    opts,
  );
  t.same(ok.errors, []);
  t.same(
    ok.rows.map((r) => [r.prefix, r.origin, r.rate]),
    [
      ['33', null, '0.090000'],
      ['33', 'EEA', '0.012000'],
      ['33', '3314', '0.009000'],
    ],
  );
  const bad = parseRateSheetCsv(
    'prefix,destination,rate,origin\n33,France,0.09,EEA\n33,France,0.08,eea\n33,France,0.1,Mars\n',
    opts,
  );
  t.same(
    bad.errors.map((e) => [e.line, e.reason.replace(/:.*/, '')]),
    [
      [3, 'duplicate prefix 33 for origin EEA (first on line 2)'],
      [4, 'bad origin'],
    ],
  );
});
