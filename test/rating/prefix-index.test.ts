import t from 'tap';
import { Decimal } from 'decimal.js';
import { createPrefixIndex } from '../../src/rating/prefix-index.js';
import { createDeckRegistry } from '../../src/rating/deck-registry.js';

const rows = [
  { prefix: '44', destination: 'United Kingdom', rate: '0.010000', increment: '60/60' },
  { prefix: '447', destination: 'United Kingdom Mobile', rate: '0.02', increment: '1/1' },
  { prefix: '4477', destination: 'United Kingdom Mobile Premium', rate: new Decimal('0.5'), increment: '6/6' },
  { prefix: '1', destination: 'USA', rate: '0.003', increment: '6/6' },
  { prefix: '1212', destination: 'USA New York', rate: '0.004', increment: '6/6' },
];

t.test('longest prefix wins', async (t) => {
  const idx = createPrefixIndex(rows);
  t.equal(idx.size, 5);
  t.equal(idx.lookup('441234567890')?.prefix, '44');
  t.equal(idx.lookup('447912345678')?.prefix, '447');
  t.equal(idx.lookup('447712345678')?.prefix, '4477');
  t.equal(idx.lookup('4477')?.prefix, '4477', 'exact match of the whole number');
  t.equal(idx.lookup('447')?.destination, 'United Kingdom Mobile');
  t.equal(idx.lookup('12125551234')?.rate, '0.004000');
  t.equal(idx.lookup('12135551234')?.rate, '0.003000');
  t.equal(idx.lookup('4')?.prefix, undefined, 'shorter than every prefix');
  t.equal(idx.lookup('33123'), undefined);
  t.equal(idx.lookup(''), undefined);
  t.equal(idx.lookup('44x7'), idx.lookup('44'), 'stops at a non-digit');
  const m = idx.lookup('447712345678')!;
  t.equal(m.rateDecimal.toFixed(6), '0.500000');
  t.equal(m.increment.text, '6/6');
  t.equal(idx.lookup('447712345678'), m, 'the same object is returned for the same row (no allocation)');
  t.equal(idx.lookupIndex('447912345678'), 1);
  t.equal(idx.lookupIndex('999'), -1);
});

t.test('prefix inserted after a longer one (leaf promoted to node)', async (t) => {
  const idx = createPrefixIndex([
    { prefix: '4477', destination: 'a', rate: '1', increment: '1/1' },
    { prefix: '44', destination: 'b', rate: '2', increment: '1/1' },
    { prefix: '447', destination: 'c', rate: '3', increment: '1/1' },
    { prefix: '4', destination: 'd', rate: '4', increment: '1/1' },
  ]);
  t.equal(idx.lookup('4478')?.destination, 'c');
  t.equal(idx.lookup('4477')?.destination, 'a');
  t.equal(idx.lookup('449')?.destination, 'b');
  t.equal(idx.lookup('45')?.destination, 'd');
});

t.test('rejects duplicates and bad rows', async (t) => {
  t.throws(() => createPrefixIndex([rows[0]!, rows[0]!]), /duplicate/);
  t.throws(
    () =>
      createPrefixIndex([
        rows[1]!,
        { prefix: '44', destination: 'x', rate: '1', increment: '1/1' },
        { prefix: '44', destination: 'y', rate: '1', increment: '1/1' },
      ]),
    /duplicate/,
  );
  t.throws(() => createPrefixIndex([{ prefix: '44a', destination: 'x', rate: '1', increment: '1/1' }]), /prefix/);
  t.throws(() => createPrefixIndex([{ prefix: '44', destination: 'x', rate: '-1', increment: '1/1' }]), /negative/);
  t.throws(() => createPrefixIndex([{ prefix: '44', destination: 'x', rate: '1', increment: '0/1' }]), /increment/);
});

t.test('network rows are kept apart from country rows', async (t) => {
  const idx = createPrefixIndex([
    { prefix: '44', destination: 'UK', rate: '0.03', increment: '1/1' },
    { prefix: '44', destination: 'UK Vodafone', rate: '0.02', increment: '1/1', mccMnc: '234-15' },
    { prefix: '447', destination: 'UK Vodafone mobile', rate: '0.025', increment: '1/1', mccMnc: '234-15' },
  ]);
  t.equal(idx.size, 1);
  t.equal(idx.networkSize, 2);
  t.equal(idx.lookup('447700900000')?.destination, 'UK');
  t.equal(idx.lookupNetwork('447700900000', '234-15')?.destination, 'UK Vodafone mobile', 'longest network prefix');
  t.equal(idx.lookupNetwork('441700900000', '234-15')?.destination, 'UK Vodafone');
  t.equal(idx.lookupNetwork('447700900000', '234-10'), undefined);
});

t.test('registry: overlapping decks, each at its own longest prefix, atomic swap', async (t) => {
  const reg = createDeckRegistry();
  reg.set('a', createPrefixIndex(rows));
  reg.set('b', createPrefixIndex([{ prefix: '4479', destination: 'UK O2', rate: '0.015', increment: '1/1' }]));
  reg.set('c', createPrefixIndex([{ prefix: '33', destination: 'France', rate: '0.01', increment: '60/60' }]));
  const got = reg.lookupMany(['a', 'b', 'c', 'missing'], '447912345678');
  t.same(
    got.map((g) => [g.deckId, g.match.prefix, g.match.rate]),
    [
      ['a', '447', '0.020000'],
      ['b', '4479', '0.015000'],
    ],
  );
  const out: ReturnType<typeof reg.lookupMany> = [];
  t.equal(reg.lookupMany(['c'], '33100', out), out, 'reuses the output array');
  t.equal(out.length, 1);
  const before = reg.get('a')!;
  reg.set('a', createPrefixIndex([{ prefix: '44', destination: 'UK', rate: '0.009', increment: '60/60' }]));
  t.equal(before.lookup('447912345678')?.rate, '0.020000', 'an index already held keeps answering from the old deck');
  t.equal(reg.lookup('a', '447912345678')?.rate, '0.009000', 'new look-ups see the new deck');
  t.equal(reg.size, 3);
  t.ok(reg.delete('c'));
  t.notOk(reg.has('c'));
});
