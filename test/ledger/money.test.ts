import { Decimal } from 'decimal.js';
import t from 'tap';
import { Money, MoneyError, money6 } from '../../src/ledger/money.js';

t.test('parses strings and Decimals only, prints 6 places', async (t) => {
  t.equal(Money.parse('1').toString(), '1.000000');
  t.equal(Money.parse('0.1').plus('0.2').toString(), '0.300000', 'no float drift');
  t.equal(Money.parse('-2.5').toString(), '-2.500000');
  t.equal(Money.parse(new Decimal('3.141592')).toString(), '3.141592');
  t.equal(JSON.stringify({ m: Money.parse('12.5') }), '{"m":"12.500000"}');
  t.equal(Money.parse('99999999999999.999999').toString(), '99999999999999.999999', 'the largest numeric(20,6)');
  for (const bad of ['1.0000001', '1e3', 'NaN', '', '1,5', '0x10', '100000000000000']) {
    t.throws(() => Money.parse(bad), MoneyError, `refuses "${bad}"`);
  }
  t.throws(() => Money.parse(1.5 as unknown as string), MoneyError, 'refuses a JS number');
  t.throws(() => Money.parse(new Decimal('0.0000001')), MoneyError);
  t.equal(Money.parse('10').times('0.333333').toString(), '3.333330');
  t.equal(Money.parse('0.000001').times('0.5').toString(), '0.000001', 'half-up rounding');
  t.equal(Money.parse('2').cmp('2.000000'), 0);
  t.ok(Money.parse('-0.000001').isNegative());
  t.equal(money6('5.1'), '5.100000');
  t.equal(money6(null), '0.000000');
});
