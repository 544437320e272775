import t from 'tap';
import { Decimal } from 'decimal.js';
import { affordableSeconds, chargeLeg, holdFor, type PricedRoute } from '../../../src/modules/cdrs/call-charge.js';
import { parseIncrement, toMoney } from '../../../src/rating/index.js';

/** Deterministic pseudo-random numbers, so a failure names its case. */
function rng(seed: number) {
  let x = seed >>> 0;
  return () => {
    x = (x * 1664525 + 1013904223) >>> 0;
    return x / 2 ** 32;
  };
}

const INCREMENTS = ['1/1', '6/6', '30/6', '60/60', '60/1'].map((s) => parseIncrement(s)!);

t.test('holdFor is the dearest candidate as chargeLeg totals it (the split and its strings not made)', async (t) => {
  const r = rng(26);
  const money = (max: number) => new Decimal(Math.floor(r() * max * 1e6)).div(1e6);
  const route = (): PricedRoute => {
    const sellerRate = money(0.5);
    const p: PricedRoute = {
      price: sellerRate.plus(money(0.05)),
      sellerRate,
      increment: INCREMENTS[Math.floor(r() * INCREMENTS.length)]!,
    };
    if (r() < 0.3) p.markupPct = new Decimal(Math.floor(r() * 5000)).div(100);
    if (r() < 0.15) p.sell = { rate: p.price.plus(money(0.1)), increment: INCREMENTS[0]! };
    return p;
  };
  let cases = 0;
  for (let i = 0; i < 2000; i++) {
    const routes = Array.from({ length: 1 + Math.floor(r() * 3) }, route);
    if (r() < 0.2) routes[0]!.alongside = route();
    const seconds = Math.floor(r() * 7200);
    const markup = new Decimal(Math.floor(r() * 3000)).div(100);
    const legs = (p: PricedRoute) => {
      const own = new Decimal(chargeLeg(p, seconds, markup).total);
      return p.alongside ? own.plus(chargeLeg(p.alongside, seconds, markup).total) : own;
    };
    const oracle = toMoney(Decimal.max(0, ...routes.map(legs)));
    if (holdFor(seconds, routes, markup) !== oracle)
      t.fail(`case ${i}: ${holdFor(seconds, routes, markup)} != ${oracle}`);
    // The hold for what a balance affords never exceeds that balance.
    const available = money(50);
    const afford = affordableSeconds(available, routes, markup, 3600);
    if (new Decimal(holdFor(afford, routes, markup)).gt(available)) t.fail(`case ${i}: hold above the balance`);
    cases++;
  }
  t.equal(cases, 2000);
});
