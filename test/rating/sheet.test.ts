import t from 'tap';
import { parseRateSheetCsv, parseRateSheetJson } from '../../src/rating/sheet.js';
import { requireIncrement } from '../../src/rating/increment.js';

const voice = { type: 'voice' as const, defaultIncrement: requireIncrement('60/60') };
const sms = { type: 'sms' as const, defaultIncrement: requireIncrement('1/1') };

t.test('valid CSV with header aliases, quoting and defaults', async (t) => {
  const csv = [
    '\uFEFFPrefix,Destination Name,Rate,Billing Increment,Effective Date',
    '44,United Kingdom,0.01,60/60,2026-12-01',
    '447,"United Kingdom, Mobile",0.020000,1/1,',
    '',
    '1,USA,0.003,,2026-12-01T10:00:00Z',
  ].join('\r\n');
  const r = parseRateSheetCsv(csv, voice);
  t.same(r.errors, []);
  t.equal(r.rows.length, 3);
  t.match(r.rows[0], { line: 2, prefix: '44', destination: 'United Kingdom', rate: '0.010000', mccMnc: null });
  t.equal(r.rows[0]!.effectiveAt?.toISOString(), '2026-12-01T00:00:00.000Z');
  t.equal(r.rows[1]!.destination, 'United Kingdom, Mobile');
  t.equal(r.rows[1]!.effectiveAt, null);
  t.equal(r.rows[2]!.line, 5, 'line numbers count blank lines');
  t.equal(r.rows[2]!.increment.text, '60/60', 'empty increment takes the route default');
});

t.test('every bad row reported with its line and reason', async (t) => {
  const csv = [
    'prefix,destination,rate,increment,effective_date',
    '44,UK,0.01,60/60,', // 2 ok
    '4a4,Bad prefix,0.01,60/60,', // 3
    '33,France,0.1234567,60/60,', // 4
    '34,Spain,-0.01,60/60,', // 5
    '49,Germany,ten,60/60,', // 6
    '39,Italy,0.01,60,', // 7
    '44,UK again,0.02,60/60,', // 8
    '31,Netherlands,0.01,60/60,2026-02-30', // 9
    ',Empty,0.01,60/60,', // 10
    '32,,0.01,60/60,', // 11
    '41,Switzerland,0.01,60/60,tomorrow', // 12
    '43,Austria,0.01,0/6,', // 13
  ].join('\n');
  const r = parseRateSheetCsv(csv, voice);
  t.same(r.rows, [], 'no rows are applied when any row is bad');
  t.same(
    r.errors.map((e) => e.line),
    [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13],
  );
  const reason = (line: number): string => r.errors.find((e) => e.line === line)!.reason;
  t.match(reason(3), /^bad prefix/);
  t.match(reason(4), /more than 6 decimal places/);
  t.match(reason(5), /negative/);
  t.match(reason(6), /not a number/);
  t.match(reason(7), /^bad increment/);
  t.match(reason(8), /duplicate prefix 44 \(first on line 2\)/);
  t.match(reason(9), /^bad date/);
  t.match(reason(10), /^bad prefix/);
  t.match(reason(11), /^bad destination/);
  t.match(reason(12), /^bad date/);
  t.match(reason(13), /^bad increment/);
});

t.test('structural problems', async (t) => {
  t.match(parseRateSheetCsv('prefix,rate\n44,0.1', voice).errors, [{ line: 1, reason: 'missing column: destination' }]);
  t.match(parseRateSheetCsv('', voice).errors, [{ reason: 'sheet is empty' }]);
  t.match(parseRateSheetCsv('prefix,destination,rate\n', voice).errors, [{ reason: 'sheet has no rows' }]);
  t.match(parseRateSheetCsv('prefix,destination,rate\n44,"UK,0.1\n', voice).errors, [{ reason: 'malformed CSV' }]);
  t.match(parseRateSheetCsv('prefix,destination,rate\n44,UK,0.1\n45,X,0.1\n', { ...voice, maxRows: 1 }).errors, [
    { reason: /more than 1 rows/ },
  ]);
});

t.test('SMS per network: ceiling and country row required; voice refuses MCC-MNC', async (t) => {
  const csv = [
    'prefix,destination,rate,increment,effective date,mcc_mnc',
    '44,UK,0.030,1/1,,', // 2
    '44,UK Vodafone,0.020,1/1,,23415', // 3 ok, normalised
    '447,UK EE,0.031,1/1,,234-30', // 4 above country (44)
    '33,France O,0.01,1/1,,208-01', // 5 no country row
    '44,UK Vodafone again,0.01,1/1,,234-15', // 6 duplicate network row
    '44,UK x,0.01,1/1,,23', // 7 bad mcc
  ].join('\n');
  const r = parseRateSheetCsv(csv, sms);
  const reasons = Object.fromEntries(r.errors.map((e) => [e.line, e.reason]));
  t.same(Object.keys(reasons).map(Number), [4, 5, 6, 7]);
  t.match(reasons[4], /network price above country price \(0\.031000 > 0\.030000 on line 2\)/);
  t.match(reasons[5], /no country price/);
  t.match(reasons[6], /duplicate prefix 44 for network 234-15/);
  t.match(reasons[7], /bad MCC-MNC/);
  const ok = parseRateSheetCsv(csv.split('\n').slice(0, 3).join('\n'), sms);
  t.same(ok.errors, []);
  t.equal(ok.rows[1]!.mccMnc, '234-15');
  t.match(parseRateSheetCsv(csv.split('\n').slice(0, 3).join('\n'), voice).errors, [
    { line: 3, reason: /only SMS sheets/ },
  ]);
});

t.test('JSON sheets', async (t) => {
  const r = parseRateSheetJson(
    {
      rows: [
        {
          prefix: '44',
          destination: 'UK',
          rate: 0.01,
          billingIncrement: '6/6',
          effectiveAt: '2026-12-01T00:00:00+01:00',
        },
        { prefix: 44, destination: 'UK', rate: '0.01' },
      ],
    },
    voice,
  );
  t.match(r.errors, [{ line: 2, reason: /duplicate/ }]);
  const ok = parseRateSheetJson(
    '[{"prefix":"44","destination":"UK","rate":"0.01","increment":"6/6","effectiveDate":"2026-12-01T00:00:00+01:00"}]',
    voice,
  );
  t.same(ok.errors, []);
  t.equal(ok.rows[0]!.effectiveAt?.toISOString(), '2026-11-30T23:00:00.000Z');
  t.equal(ok.rows[0]!.increment.text, '6/6');
  t.match(parseRateSheetJson('{bad', voice).errors, [{ reason: 'malformed JSON' }]);
  t.match(parseRateSheetJson({}, voice).errors, [{ reason: 'expected an array of rows' }]);
  t.match(parseRateSheetJson([null, { prefix: '1', destination: 'US', rate: '1' }], voice).errors, [
    { line: 1, reason: /bad prefix/ },
  ]);
});
