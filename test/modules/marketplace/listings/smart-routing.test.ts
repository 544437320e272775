import t from 'tap';
import { Decimal } from 'decimal.js';
import {
  measuredFrom,
  qualityScore,
  rankRoutes,
  STATED_DISCOUNT,
} from '../../../../src/modules/marketplace/routing/smart-routing.js';
import type { WindowStats } from '../../../../src/modules/marketplace/routing/smart-routing.js';

const stats = (window: WindowStats['window'], calls: number, buyers: number): WindowStats => ({
  window,
  calls,
  buyers,
  answered: Math.round(calls / 2),
  networkEffective: Math.round(calls * 0.9),
  totalAnsweredSeconds: Math.round(calls / 2) * 120,
  medianPddMs: 2000,
});

t.test('measured figures need 50 calls from two buyers, 7 days then 30 days then latest', async (t) => {
  t.equal(measuredFrom([stats('7d', 49, 5), stats('30d', 49, 5)]), null, '49 calls is not enough');
  t.equal(measuredFrom([stats('7d', 500, 1)]), null, 'one buyer is not enough');
  t.equal(measuredFrom([stats('7d', 50, 2)])?.window, '7d');
  t.equal(measuredFrom([stats('7d', 10, 2), stats('30d', 60, 3), stats('latest', 90, 3)])?.window, '30d');
  t.equal(measuredFrom([stats('7d', 10, 2), stats('30d', 60, 1), stats('latest', 90, 3)])?.window, 'latest');
  const m = measuredFrom([stats('7d', 100, 2)])!;
  t.equal(m.asr, 0.5);
  t.equal(m.acd, 120);
  t.equal(m.ner, 0.9);
});

t.test('quality score: measured formula, stated discounted', async (t) => {
  const m = measuredFrom([stats('7d', 100, 2)])!;
  // 0.45·0.5 + 0.25·(120/300) + 0.2·0.9 + 0.1·(1 − 0.2) = 0.225 + 0.1 + 0.18 + 0.08
  t.equal(
    Math.round(qualityScore(m, { expectedAsr: 99, expectedAcd: 999, expectedPdd: 0 }) * 1e6) / 1e6,
    0.585,
    'measured wins over stated',
  );
  const stated = qualityScore(null, { expectedAsr: 50, expectedAcd: 120, expectedPdd: 2000 });
  // NER taken as ASR: 0.225 + 0.1 + 0.1 + 0.08 = 0.505, × 0.8
  t.equal(Math.round(stated * 1e6) / 1e6, Math.round(0.505 * STATED_DISCOUNT * 1e6) / 1e6);
  t.ok(
    qualityScore(null, { expectedAsr: null, expectedAcd: null, expectedPdd: null }) > 0,
    'missing figures use defaults',
  );
});

t.test('strategies order hand-made routes as expected', async (t) => {
  const r = (routeId: string, price: string, quality: number, position: number | null = null) => ({
    routeId,
    price: new Decimal(price),
    quality,
    position,
  });
  // A: cheap, poor. B: mid price, good. C: dear, excellent.
  const items = [r('c', '0.020000', 0.9), r('a', '0.010000', 0.3), r('b', '0.012000', 0.7)];
  t.same(
    rankRoutes(items, 'cheapest').map((x) => x.item.routeId),
    ['a', 'b', 'c'],
  );
  t.same(
    rankRoutes(items, 'best_quality').map((x) => x.item.routeId),
    ['c', 'b', 'a'],
  );
  // balanced: a = 0.5·1 + 0.15 = 0.65; b = 0.5·(10/12) + 0.35 = 0.7667; c = 0.5·0.5 + 0.45 = 0.70
  const balanced = rankRoutes(items, 'balanced');
  t.same(
    balanced.map((x) => x.item.routeId),
    ['b', 'c', 'a'],
  );
  t.same(
    balanced.map((x) => x.score),
    [0.7667, 0.7, 0.65],
  );
  const withOrder = rankRoutes([...items, r('d', '0.5', 0.1, 2), r('e', '0.4', 0.1, 1)], 'cheapest');
  t.same(
    withOrder.map((x) => x.item.routeId),
    ['e', 'd', 'a', 'b', 'c'],
    'routing order first',
  );
  t.match(withOrder[0]!.reason, /routing order position 1/);
  t.same(
    rankRoutes([r('y', '0.01', 0.5), r('x', '0.01', 0.5)], 'cheapest').map((x) => x.item.routeId),
    ['x', 'y'],
    'ties by id',
  );
  t.same(
    rankRoutes([r('f', '0', 0.2), r('g', '0.01', 0.9)], 'balanced').map((x) => x.item.routeId),
    ['f', 'g'],
    'a free route counts as the cheapest',
  );
});
