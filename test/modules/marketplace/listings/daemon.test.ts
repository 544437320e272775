import t from 'tap';
import { startTestDaemon } from '../../../helpers/daemon.js';

t.test('the daemon loads decks at start, serves price look-ups over HTTPS and stops cleanly', async (t) => {
  const d = await startTestDaemon(t);
  const accounts = d.modules.services.accounts;
  await accounts.createAccount({ email: 'seller@example.test', password: 'correct horse battery' });
  const { accessToken } = await accounts.login('seller@example.test', 'correct horse battery', {});
  const created = await d.https('POST', '/routes', {
    token: accessToken,
    body: { type: 'voice', name: 'DE', country: 'DE', endpoints: [{ host: '192.0.2.7' }] },
  });
  t.equal(created.status, 201, created.text);
  const id = created.json.data.id as string;
  const up = await d.https('POST', `/routes/${id}/rates`, {
    token: accessToken,
    body: { format: 'csv', csv: 'prefix,destination,rate\n49,Germany,0.004\n4915,Germany Mobile,0.011\n' },
  });
  t.equal(up.status, 200, up.text);
  const pn = await d.https('GET', '/routes/price-number?number=%2B4915112345678');
  t.equal(pn.status, 200, pn.text);
  t.same(
    pn.json.data.routes.map((r: { matchedPrefix: string; rate: string }) => [r.matchedPrefix, r.rate]),
    [['4915', '0.013000']],
  );
});
