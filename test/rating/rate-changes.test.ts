import t from 'tap';
import { effectiveDeckAt, nextTransitionAfter, planRateChanges } from '../../src/rating/rate-changes.js';
import type { DeckEntry, NewSheetEntry } from '../../src/rating/rate-changes.js';
import { requireIncrement } from '../../src/rating/increment.js';
import { createPrefixIndex } from '../../src/rating/prefix-index.js';

const inc = requireIncrement('60/60');
const e = (prefix: string, rate: string, extra: Partial<DeckEntry> = {}): DeckEntry => ({
  prefix,
  destination: `D${prefix}`,
  rate,
  increment: inc,
  mccMnc: null,
  origin: null,
  ...extra,
});
const s = (prefix: string, rate: string, extra: Partial<NewSheetEntry> = {}): NewSheetEntry => ({
  ...e(prefix, rate),
  effectiveAt: null,
  ...extra,
});

const NOW = new Date('2026-11-22T00:00:00Z');
const clock = (): Date => NOW;
const DAY = 86_400_000;
const at = (ms: number): Date => new Date(NOW.getTime() + ms);

const active = [
  e('44', '0.010000'),
  e('447', '0.020000'),
  e('33', '0.010000'),
  e('49', '0.010000'),
  e('1', '0.005000'),
];
const sheet = [
  s('44', '0.012000'), // increase
  s('447', '0.015000'), // decrease
  s('33', '0.010000'), // unchanged
  s('1', '0.005000', { increment: requireIncrement('6/6') }), // cheaper increment: update
  s('34', '0.020000'), // new
  // 49 removed
];

t.test('classification and timing with the notice period', async (t) => {
  const plan = planRateChanges(active, sheet, { now: clock, noticeDays: 7 });
  const by = Object.fromEntries(plan.changes.map((c) => [c.prefix, c]));
  t.equal(by['44']!.kind, 'increase');
  t.equal(by['44']!.effectiveAt.getTime(), NOW.getTime() + 7 * DAY);
  t.equal(by['447']!.kind, 'decrease');
  t.equal(by['447']!.effectiveAt.getTime(), NOW.getTime());
  t.equal(by['33']!.kind, 'unchanged');
  t.equal(by['1']!.kind, 'update');
  t.equal(by['1']!.effectiveAt.getTime(), NOW.getTime());
  t.equal(by['34']!.kind, 'new');
  t.equal(by['34']!.effectiveAt.getTime(), NOW.getTime());
  t.equal(by['49']!.kind, 'removal');
  t.equal(by['49']!.effectiveAt.getTime(), NOW.getTime() + 7 * DAY);
});

t.test('effective deck before and after the increase time', async (t) => {
  const plan = planRateChanges(active, sheet, { now: clock, noticeDays: 7 });
  const rate = (deck: DeckEntry[], p: string): string | undefined => deck.find((x) => x.prefix === p)?.rate;
  const before = effectiveDeckAt(plan, at(7 * DAY - 1));
  t.equal(rate(before, '44'), '0.010000', 'increase not yet in force');
  t.equal(rate(before, '447'), '0.015000', 'decrease in force at once');
  t.equal(rate(before, '34'), '0.020000', 'new destination at once');
  t.equal(rate(before, '49'), '0.010000', 'removed destination still priced during notice');
  const after = effectiveDeckAt(plan, at(7 * DAY));
  t.equal(rate(after, '44'), '0.012000');
  t.equal(rate(after, '49'), undefined);
  t.equal(after.length, 5);
  // The effective deck builds an index that prices numbers as expected.
  t.equal(createPrefixIndex(before).lookup('4420')?.rate, '0.010000');
  t.equal(createPrefixIndex(after).lookup('4420')?.rate, '0.012000');
  t.equal(nextTransitionAfter(plan, NOW)?.getTime(), NOW.getTime() + 7 * DAY);
  t.equal(nextTransitionAfter(plan, at(7 * DAY)), null);
});

t.test('increaseEffectiveAt and per-row dates', async (t) => {
  const plan = planRateChanges(
    active,
    [...sheet.slice(1), s('44', '0.02'), s('35', '0.1', { effectiveAt: at(3 * DAY) })],
    {
      now: clock,
      increaseEffectiveAt: at(2 * DAY),
    },
  );
  const by = Object.fromEntries(plan.changes.map((c) => [c.prefix, c]));
  t.equal(by['44']!.effectiveAt.getTime(), NOW.getTime() + 2 * DAY, 'seller-chosen increase time');
  t.equal(by['49']!.effectiveAt.getTime(), NOW.getTime() + 2 * DAY);
  t.equal(by['35']!.effectiveAt.getTime(), NOW.getTime() + 3 * DAY, 'a later row date wins');
  const past = planRateChanges(active, [s('44', '0.02', { effectiveAt: at(-DAY) })], {
    now: clock,
    increaseEffectiveAt: at(-DAY),
    noticeDays: 0,
  });
  t.equal(past.changes[0]!.effectiveAt.getTime(), NOW.getTime(), 'never earlier than now');
  const costlier = planRateChanges([e('44', '0.01', { increment: requireIncrement('1/1') })], [s('44', '0.01')], {
    now: clock,
  });
  t.equal(costlier.changes[0]!.kind, 'increase', 'a costlier increment at the same rate is an increase');
  t.equal(costlier.changes[0]!.effectiveAt.getTime(), NOW.getTime() + 7 * DAY, 'default notice is 7 days');
  t.throws(() => planRateChanges(active, sheet, { now: clock, noticeDays: -1 }), RangeError);
});

t.test('network rows are planned per prefix and network', async (t) => {
  const plan = planRateChanges(
    [e('44', '0.03'), e('44', '0.02', { mccMnc: '234-15' })],
    [s('44', '0.03'), s('44', '0.025', { mccMnc: '234-15' }), s('44', '0.01', { mccMnc: '234-10' })],
    { now: clock },
  );
  const kinds = plan.changes.map((c) => `${c.prefix}/${c.mccMnc ?? '-'}:${c.kind}`);
  t.same(kinds, ['44/-:unchanged', '44/234-15:increase', '44/234-10:new']);
});

t.test('an origin row is a row of its own: planned beside the default row of the same prefix', async (t) => {
  const plan = planRateChanges(
    [e('33', '0.020000'), e('33', '0.008000', { origin: 'EEA' })],
    [s('33', '0.020000'), s('33', '0.009000', { origin: 'EEA' }), s('33', '0.007000', { origin: '4420' })],
    { now: () => new Date('2026-01-01T00:00:00Z'), noticeDays: 7 },
  );
  t.same(
    plan.changes.map((c) => [c.prefix, c.origin, c.kind]),
    [
      ['33', null, 'unchanged'],
      ['33', 'EEA', 'increase'],
      ['33', '4420', 'new'],
    ],
  );
});
