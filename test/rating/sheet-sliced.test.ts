import t from 'tap';
import {
  parseIncrement,
  parseRateSheetCsv,
  parseRateSheetCsvSliced,
  parseRateSheetJson,
  parseRateSheetJsonSliced,
} from '../../src/rating/index.js';

const opts = { type: 'voice' as const, defaultIncrement: parseIncrement('60/60')! };

t.test('the sliced parsers give the same result as the one-go parsers', async (t) => {
  // Quoted names with multi-byte characters, so 64 KiB pieces cut through characters and quotes.
  const lines = ['prefix,destination,rate'];
  for (let i = 0; i < 6000; i++) lines.push(`${100000 + i},"Zürich, Ωmega ${i} ""quoted""",0.0${i % 10}1`);
  lines.push('x12,"bad",0.1');
  const csv = lines.join('\r\n');
  const sliced = await parseRateSheetCsvSliced(csv, opts, { sliceMs: 1 });
  t.same(sliced, parseRateSheetCsv(csv, opts));
  t.same(sliced.errors, [{ line: 6002, reason: 'bad prefix: 1 to 15 digits expected' }]);

  const good = lines.slice(0, -1).join('\n');
  const ok = await parseRateSheetCsvSliced(good, opts, { sliceMs: 1 });
  t.equal(ok.rows.length, 6000);
  t.equal(ok.rows[5999]!.destination, 'Zürich, Ωmega 5999 "quoted"');
  t.same(ok, parseRateSheetCsv(good, opts));

  const unquoted = good.replace(/"/g, '').replace(/, Ωmega/g, ' Ωmega');
  t.same(await parseRateSheetCsvSliced(unquoted, opts, { sliceMs: 1 }), parseRateSheetCsv(unquoted, opts));

  const rows = Array.from({ length: 3000 }, (_, i) => ({
    prefix: String(200000 + i),
    destination: 'X',
    rate: '0.01',
    billingIncrement: '6/6',
  }));
  t.same(await parseRateSheetJsonSliced(rows, opts, { sliceMs: 1 }), parseRateSheetJson(rows, opts));
  t.equal(
    (await parseRateSheetJsonSliced(rows, opts)).rows[0]!.increment.text,
    '6/6',
    'billingIncrement is read as increment',
  );

  const open = 'prefix,destination,rate\n1,"open,0.1\n';
  const unterminated = await parseRateSheetCsvSliced(open, opts);
  t.same(unterminated, parseRateSheetCsv(open, opts), 'an unterminated quote');
  t.match(unterminated.errors, [{ reason: 'malformed CSV' }]);
});

t.test('an aborted parse stops with the signal reason', async (t) => {
  const lines = ['prefix,destination,rate'];
  for (let i = 0; i < 50000; i++) lines.push(`${100000 + i},Zone,0.01`);
  const stop = new AbortController();
  stop.abort(new Error('stopping'));
  await t.rejects(parseRateSheetCsvSliced(lines.join('\n'), opts, { sliceMs: 0, signal: stop.signal }), {
    message: 'stopping',
  });
});
