import t from 'tap';
import { Decimal } from 'decimal.js';
import { createWorld, eventually, expectExit, uac, uacScenario, uasAnswer } from '../../sip-trunks/world.js';

// Money (platform fee 0.002000/min absolute, the config default; increment 6/6; a 1.2 s call bills 6 s):
//   default row 0.013700 → buyer 0.015700/min; EEA-origin row 0.007000 → buyer 0.009000/min,
//   6 s: buyer 0.000900, seller 0.000700; A-number 1555 row 0.004000 (the sipp From user is 15550001111).
// The call asserts a French identity (P-Asserted-Identity): the asserted caller, not From, picks the
// EEA row, so the call bills 0.000900 where the same call from a non-EEA caller would bill 0.001570.
const number = '442400000001';
const sheet =
  'prefix,destination,rate,increment,origin\n' +
  '4424,UK test,0.013700,6/6,\n' +
  '4424,UK test,0.007000,6/6,eea\n' +
  '4424,UK test,0.004000,6/6,+1555\n';

t.test('origin-based rates: upload, read back, price look-ups, and a real sipp call rated by its caller', async (t) => {
  const w = await createWorld(t);
  const supplier = await uasAnswer(t, number);
  const { routeId } = await w.route({ port: supplier.port, prefix: '4424', rate: '0.013700' });
  const seller = (method: string, url: string, body?: unknown) => w.api(method, url, w.seller.token, body);
  const buyer = (method: string, url: string) => w.api(method, url, w.operator.token);

  await t.test('the sheet carries an origin column; versions, diff and download carry it', async (t) => {
    const up = await seller('POST', `/routes/${routeId}/rates`, { format: 'csv', csv: sheet });
    t.equal(up.status, 200, up.text);
    t.match(up.body.data, { newDestinations: 2, unchanged: 1 }, 'origin rows are rows of their own');
    const bad = await seller('POST', `/routes/${routeId}/rates/validate`, {
      format: 'csv',
      csv: 'prefix,destination,rate,origin\n4424,UK,0.01,Atlantis\n',
    });
    t.match(bad.body.data, { valid: false, errors: [{ line: 2, reason: /bad origin/ }] });
    const csv = await seller('GET', `/routes/${routeId}/rates/download?format=csv`);
    t.equal(csv.status, 200);
    const lines = csv.text.trim().split('\n');
    t.match(lines[0], /^prefix,destination,rate,increment,mcc_mnc,origin,effective_date/);
    t.same(
      lines
        .slice(1)
        .map((l) => l.split(',').slice(0, 6).join(','))
        .sort(),
      ['4424,UK test,0.004000,6/6,,1555', '4424,UK test,0.007000,6/6,,EEA', '4424,UK test,0.013700,6/6,,'],
    );
    const versions = await seller('GET', `/routes/${routeId}/rates/versions`);
    const latest = versions.body.data.rows[0].number as number;
    const diff = await seller('GET', `/routes/${routeId}/rates/diff?from=${latest - 1}&to=${latest}`);
    t.equal(diff.status, 200, diff.text);
    t.match(diff.body.data.counts, { added: 2, unchanged: 1 });
    t.same(diff.body.data.rows.map((r: { origin: string | null; change: string }) => [r.origin, r.change]).sort(), [
      ['1555', 'added'],
      ['EEA', 'added'],
    ]);
    const removed = await seller('POST', `/routes/${routeId}/rates/rows/remove`, {
      rows: [{ prefix: '4424', origin: 'de' }],
    });
    t.equal(removed.status, 400, 'no DE-origin row to remove');
  });

  await t.test('price look-ups that take the caller’s number', async (t) => {
    const resolve = async (from: string | null) =>
      (await buyer('GET', `/routes/resolve?number=${number}${from === null ? '' : `&from=%2B${from}`}`)).body.data
        .routes[0];
    t.match(await resolve(null), { price: '0.015700', matchedOrigin: null }, 'no caller: the default row');
    t.match(await resolve('12125550100'), { price: '0.015700', matchedOrigin: null }, 'a US caller outside 1555');
    t.match(await resolve('4930123456'), { price: '0.009000', matchedOrigin: 'EEA' }, 'Germany is in the EEA');
    t.match(await resolve('15550009999'), { price: '0.006000', matchedOrigin: '1555' });
    const pick = await buyer('GET', `/purchases/route-for?number=${number}&from=%2B33142685300`);
    t.match(pick.body.data.route, { price: '0.009000', matchedOrigin: 'EEA' });
    const pub = await buyer('GET', `/routes/price-number?number=%2B${number}&from=%2B33142685300`);
    t.match(pub.body.data.routes[0], { rate: '0.009000', matchedOrigin: 'EEA' });
    const look = await buyer('GET', `/routes/${routeId}/rates/lookup?number=%2B${number}&from=%2B4722000000`);
    t.match(look.body.data, { covered: true, row: { prefix: '4424', origin: 'EEA', rate: '0.007000' } });
  });

  await t.test('a real sipp call: P-Asserted-Identity (France) picks the EEA row over From', async (t) => {
    const sub = await w.sub({ markupPct: '0', fund: '10.000000' });
    const sellerBefore = await w.d.modules.services.ledger.balanceOf(w.seller.accountId);
    const caller = await uac(
      t,
      w.sipPort,
      uacScenario('uac-tail-answer.xml', {
        HOLD_MS: '1200',
        EXTRA_HEADERS: 'P-Asserted-Identity: <sip:+33142685300@127.0.0.1>\n',
      }),
      number,
      sub.sipUsername,
      sub.sipPassword,
    );
    await expectExit(t, caller, 'caller completed the call');
    await expectExit(t, supplier, 'supplier answered and got the BYE');
    const [cdr] = await eventually(async () => {
      const rows = await w.d.sql<{ routeId: string; buyerCost: string; sellerCredit: string }[]>`
        select route_id, buyer_cost::text, seller_credit::text from cdrs where account_id = ${sub.id}`;
      return rows.length > 0 ? rows : null;
    });
    t.equal(cdr!.routeId, routeId);
    t.equal(cdr!.buyerCost, '0.000900', '6 s at the EEA buyer price 0.009000/min');
    t.equal(cdr!.sellerCredit, '0.000700', '6 s at the EEA seller rate 0.007000/min');
    const balance = await w.d.modules.services.ledger.balanceOf(sub.id);
    t.equal(balance.balance, '9.999100');
    t.equal(balance.held, '0.000000');
    const sellerAfter = await w.d.modules.services.ledger.balanceOf(w.seller.accountId);
    t.equal(new Decimal(sellerAfter.payable).minus(sellerBefore.payable).toFixed(6), '0.000700');
  });
});
