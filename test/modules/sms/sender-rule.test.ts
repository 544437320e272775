import t from 'tap';
import { startTestDaemon } from '../../helpers/daemon.js';

// A sender is shown to recipients and written into CDR exports: only well-formed sender ids pass.
t.test('POST /comms/sms refuses senders that are not alphanumeric or numeric ids', async (t) => {
  const d = await startTestDaemon(t);
  const { accounts, keys } = d.modules.services;
  const acct = await accounts.createAccount({ email: 'sender@example.com', password: 'correct horse battery' });
  // A key per request: the 10/s send limit is per credential.
  const send = async (from: string) => {
    const key = (await keys.create(acct.id, { mode: 'live', scopes: ['sms:send'] })).secret;
    return d.https('POST', '/comms/sms', { token: key, body: { to: '+12025550123', from, message: 'hi' } });
  };
  for (const from of [
    '=2+5',
    '+1a',
    '-1',
    '@x',
    '\tA',
    'A\rB',
    'Shop.com',
    'A-B',
    'Café',
    'ABCDEFGHIJKL',
    '1234567890123456',
  ]) {
    const r = await send(from);
    t.equal(r.status, 400, `${JSON.stringify(from)} ${r.text}`);
    t.equal(r.json.error.code, 'VALIDATION_ERROR');
    t.same(
      r.json.error.details.map((x: { path: string }) => x.path),
      ['from'],
      `${JSON.stringify(from)}: one detail, on from`,
    );
  }
  for (const from of ['MyShop', 'Shop 24', '+447700900123', '12345']) {
    const r = await send(from);
    t.not(r.json.error?.details?.[0]?.path, 'from', `${from} is a valid sender`);
  }
});
