import t from 'tap';
import { billableSeconds, parseIncrement, requireIncrement, incrementNotCheaper } from '../../src/rating/increment.js';

t.test('parses <first>/<next>', async (t) => {
  t.same(parseIncrement('60/60'), { first: 60, next: 60, text: '60/60' });
  t.same(parseIncrement('30/6'), { first: 30, next: 6, text: '30/6' });
  t.same(parseIncrement(' 06/6 '), { first: 6, next: 6, text: '6/6' });
  for (const bad of ['', '60', '60/', '/60', '0/1', '1/0', '60-60', 'a/b', '1.5/1', '-1/1', '3601/1', '60/60/60']) {
    t.equal(parseIncrement(bad), null, `rejects ${JSON.stringify(bad)}`);
  }
  t.throws(() => requireIncrement('x'), RangeError);
});

t.test('billable seconds at the boundaries', async (t) => {
  const expected: Record<string, Record<number, number>> = {
    '60/60': { 0: 0, 1: 60, 59: 60, 60: 60, 61: 120 },
    '1/1': { 0: 0, 1: 1, 59: 59, 60: 60, 61: 61 },
    '6/6': { 0: 0, 1: 6, 59: 60, 60: 60, 61: 66 },
    '30/6': { 0: 0, 1: 30, 59: 60, 60: 60, 61: 66 },
  };
  for (const [text, cases] of Object.entries(expected)) {
    const inc = requireIncrement(text);
    for (const [secs, billed] of Object.entries(cases)) {
      t.equal(billableSeconds(Number(secs), inc), billed, `${text} at ${secs}s bills ${billed}s`);
    }
  }
  const inc = requireIncrement('30/6');
  t.equal(billableSeconds(30.2, inc), 36, 'a fraction of a second counts as a second');
  t.equal(billableSeconds(-5, inc), 0);
  t.equal(billableSeconds(Number.NaN, inc), 0);
});

t.test('costlier increment comparison', async (t) => {
  t.ok(incrementNotCheaper(requireIncrement('60/60'), requireIncrement('1/1')));
  t.notOk(incrementNotCheaper(requireIncrement('1/1'), requireIncrement('60/60')));
  t.notOk(incrementNotCheaper(requireIncrement('60/1'), requireIncrement('30/6')));
});
