import { uasAnswer, type Tt, type World } from '../sip-trunks/world.js';
import type { SippRun } from '../../telephony/sip/sipp.js';

type Checks = Tt & { ok(value: unknown, message: string): boolean };

/**
 * A Latvian IPRN range (0.120000/min, payout 0.060000/min from any origin) of a new supplier, its
 * numbers `numbers`, and the first one held by the world's operator and forwarded to `target` over
 * the operator's route (the world seller's, 0.013700/min at 6/6) to an answering sipp.
 */
export async function forwardedRevshareNumber(
  w: World,
  t: Checks,
  o: { tag: string; prefix: string; numbers: string[]; target: string; uasTimeout?: string },
): Promise<{
  rangeId: string;
  routeId: string;
  supplierKey: string;
  number: { id: string; number: string };
  uas: SippRun;
}> {
  const { accounts, keys } = w.d.modules.services;
  const admin = await accounts.createAccount({
    email: `${o.tag}-operator@example.com`,
    password: 'correct horse battery',
    role: 'admin',
  });
  const adminKey = (await keys.create(admin.id, { mode: 'live' })).secret;
  const supplier = await accounts.createAccount({
    email: `${o.tag}-supplier@example.com`,
    password: 'correct horse battery',
  });
  const range = await w.api('POST', '/revenue-share/ranges', adminKey, {
    supplierId: supplier.id,
    name: `Latvia IPRN ${o.prefix}`,
    countryCode: 'LV',
    country: 'Latvia',
    prefix: o.prefix,
    numberType: 'iprn',
    ratePerMinute: '0.120000',
    payouts: [{ origin: '', payoutPerMinute: '0.060000' }],
    sourceIps: ['127.0.0.1'],
  });
  t.equal(range.status, 201, range.text, {});
  const rangeId = range.body.data.id as string;
  const supplierKey = (await keys.create(supplier.id, { mode: 'live' })).secret;
  const added = await w.api('POST', `/revenue-share/ranges/${rangeId}/numbers`, supplierKey, { numbers: o.numbers });
  t.ok(added.status < 300, added.text);
  const digits = o.target.replace(/^\+/, '');
  const uas = await uasAnswer(t, digits, 'u1', 0, o.uasTimeout);
  const { routeId } = await w.route({ port: uas.port, prefix: digits.slice(0, 4), rate: '0.013700' });
  const mine = await w.api('POST', '/revenue-share/numbers', w.operator.token, { rangeId, quantity: 1 });
  t.equal(mine.status, 201, mine.text, {});
  const number = mine.body.data[0] as { id: string; number: string };
  const set = await w.api('PATCH', `/revenue-share/numbers/${number.id}`, w.operator.token, {
    answer: { mode: 'forward', target: o.target },
  });
  t.equal(set.status, 200, set.text, {});
  return { rangeId, routeId, supplierKey, number, uas };
}
