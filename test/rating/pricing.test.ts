import t from 'tap';
import { Decimal } from 'decimal.js';
import { createPrefixIndex } from '../../src/rating/prefix-index.js';
import {
  buyerRate,
  callCost,
  createPlatformFee,
  NO_FEE,
  priceCall,
  priceSms,
  smsCost,
} from '../../src/rating/pricing.js';
import { parseRate, toMoney } from '../../src/rating/money.js';

const d = (s: string): Decimal => new Decimal(s);

t.test('fee forms', async (t) => {
  const abs = createPlatformFee({ kind: 'absolute', perMinute: '0.0015', perMessage: '0.0005' });
  t.equal(toMoney(buyerRate(d('0.010000'), abs, 'min')), '0.011500');
  t.equal(toMoney(buyerRate(d('0.010000'), abs, 'msg')), '0.010500');
  const pct = createPlatformFee({ kind: 'percent', percent: '12.5' });
  t.equal(toMoney(buyerRate(d('0.010000'), pct, 'min')), '0.011250');
  // 0.000013 × 1.1 = 0.0000143 → 0.000014; 0.000015 × 1.1 = 0.0000165 → half-up 0.000017
  const ten = createPlatformFee({ kind: 'percent', percent: '10' });
  t.equal(toMoney(buyerRate(d('0.000013'), ten, 'min')), '0.000014');
  t.equal(toMoney(buyerRate(d('0.000015'), ten, 'min')), '0.000017', 'a tie at the 7th place rounds up');
  t.equal(toMoney(buyerRate(d('0.123456'), NO_FEE, 'min')), '0.123456');
  t.throws(() => createPlatformFee({ kind: 'absolute', perMinute: '-1', perMessage: '0' }), /perMinute/);
  t.throws(() => createPlatformFee({ kind: 'absolute', perMinute: '0.0000001', perMessage: '0' }), /perMinute/);
  t.throws(() => createPlatformFee({ kind: 'percent', percent: 'x' }), /percent/);
  t.throws(() => createPlatformFee({ kind: 'percent', percent: '1001' }), /percent/);
});

t.test('call cost = billable × price / 60, rounded once to 6 places half-up', async (t) => {
  t.equal(toMoney(callCost(60, d('0.012345'))), '0.012345');
  t.equal(toMoney(callCost(0, d('0.5'))), '0.000000');
  t.equal(toMoney(callCost(1, d('0.000030'))), '0.000001', '0.0000005 rounds up');
  t.equal(toMoney(callCost(1, d('0.000029'))), '0.000000', '0.00000048… rounds down');
  t.equal(toMoney(callCost(7, d('0.010000'))), '0.001167', '0.0011666… rounds up');
  t.equal(toMoney(callCost(66, d('0.013333'))), '0.014666', '0.0146663 rounds down');
  t.equal(toMoney(callCost(86400, d('99999.999999'))), '143999999.998560', 'large values stay exact');
  t.throws(() => callCost(1.5, d('1')), RangeError);
});

t.test('price a call at the matched row', async (t) => {
  const idx = createPrefixIndex([{ prefix: '44', destination: 'UK', rate: '0.010000', increment: '30/6' }]);
  const fee = createPlatformFee({ kind: 'absolute', perMinute: '0.002', perMessage: '0' });
  const c = priceCall(idx.lookup('4420')!, 61, fee);
  t.equal(c.billableSeconds, 66);
  t.equal(toMoney(c.ratePerMinute), '0.012000');
  t.equal(toMoney(c.buyerCost), '0.013200');
  t.equal(toMoney(c.sellerCredit), '0.011000');
  const z = priceCall(idx.lookup('4420')!, 0, fee);
  t.equal(toMoney(z.buyerCost), '0.000000');
});

t.test('SMS: network price where the sheet has one, else country, never above country', async (t) => {
  const idx = createPrefixIndex([
    { prefix: '44', destination: 'UK', rate: '0.030000', increment: '1/1' },
    { prefix: '44', destination: 'UK Vodafone', rate: '0.020000', increment: '1/1', mccMnc: '234-15' },
    // A pricier network row cannot arise from a validated sheet, but the ceiling still holds here.
    { prefix: '44', destination: 'UK EE', rate: '0.040000', increment: '1/1', mccMnc: '234-30' },
  ]);
  const fee = createPlatformFee({ kind: 'absolute', perMinute: '0', perMessage: '0.001' });
  const voda = priceSms(idx, '447700900123', '234-15', fee)!;
  t.equal(voda.basis, 'network');
  t.equal(toMoney(voda.sellerRate), '0.020000');
  t.equal(toMoney(voda.buyerRate), '0.021000');
  t.equal(toMoney(smsCost(voda.buyerRate, 3)), '0.063000');
  const unknown = priceSms(idx, '447700900123', null, fee)!;
  t.equal(unknown.basis, 'country');
  t.equal(toMoney(unknown.sellerRate), '0.030000');
  const unpriced = priceSms(idx, '447700900123', '234-10', fee)!;
  t.equal(unpriced.basis, 'country');
  t.equal(toMoney(unpriced.buyerRate), '0.031000');
  const capped = priceSms(idx, '447700900123', '234-30', fee)!;
  t.equal(toMoney(capped.sellerRate), '0.030000', 'capped at the country price');
  t.equal(priceSms(idx, '337700900123', null, fee), undefined);
  t.throws(() => smsCost(d('1'), -1), RangeError);
});

t.test('rate text parsing', async (t) => {
  t.same(parseRate('0.1'), { ok: true, text: '0.100000' });
  t.same(parseRate('007.5'), { ok: true, text: '7.500000' });
  t.same(parseRate(0.25), { ok: true, text: '0.250000' });
  t.same(parseRate(d('1.5')), { ok: true, text: '1.500000' });
  t.same(parseRate('0.1234567'), { ok: false, reason: 'rate has more than 6 decimal places' });
  t.same(parseRate('-0.1'), { ok: false, reason: 'rate is negative' });
  t.same(parseRate('abc'), { ok: false, reason: 'rate is not a number' });
  t.same(parseRate('1e-3'), { ok: false, reason: 'rate is not a number' });
  t.same(parseRate(''), { ok: false, reason: 'rate is missing' });
  t.same(parseRate(null), { ok: false, reason: 'rate is missing' });
  t.same(parseRate(Number.NaN), { ok: false, reason: 'rate is not a number' });
});
