import t from 'tap';
import { createNetworkLookup, networkFor } from '../../src/messaging/network.js';

t.test('shipped range data', async (t) => {
  t.same(networkFor('+447956123456'), { mccMnc: '234-30', name: 'EE' });
  t.same(networkFor('33612345678'), { mccMnc: '208-08', name: 'SFR' });
  t.same(networkFor('+2348031234567'), { mccMnc: '621-30', name: 'MTN' });
  t.equal(networkFor('+14155550123'), null, 'no range data for the NANP');
  t.equal(networkFor('not a number'), null);
  t.same(
    networkFor('+4915112345678'),
    { mccMnc: '262-01', name: 'T-Mobile' },
    'brand alias: T-Mobile is Telekom in DE',
  );
  t.same(networkFor('+919812345678'), { mccMnc: null, name: 'Idea' }, 'name known even where no MCC-MNC matched');
});

t.test('longest prefix wins', async (t) => {
  const l = createNetworkLookup({
    networks: [
      ['001-01', 'A'],
      ['001-02', 'B'],
    ],
    prefixes: { '447': 0, '4477': 1 },
  });
  t.same(l.networkFor('+447712'), { mccMnc: '001-02', name: 'B' });
  t.same(l.networkFor('447612'), { mccMnc: '001-01', name: 'A' });
  t.equal(l.networkFor('4412'), null);
});
