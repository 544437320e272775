import t from 'tap';
import { createSmsWorld } from './world.js';

/**
 * POST /routes/{id}/test on SMS routes: a real bind and unbind with the stored credentials against
 * the Net::SMPP SMSC (nothing sent), a refused bind, the HTTPS form check, and the seller-only rule.
 */
t.test('SMS route delivery checks', async (t) => {
  const w = await createSmsWorld(t);
  const { api, smsc, buyer } = w;
  const [seller] = await w.h.sql<{ sellerId: string }[]>`select seller_id from routes where id = ${w.routeId}`;
  // The world keeps no seller session: log the route's seller in (signUp's password).
  const [acc] = await w.h.sql<{ email: string }[]>`select email from accounts where id = ${seller!.sellerId}`;
  const email = acc!.email;
  const session = (await w.h.services.accounts.login(email, 'correct horse battery', {})).accessToken;
  const make = async (smsDelivery: Record<string, unknown>) => {
    const r = await api('POST', '/routes', session, { type: 'sms', name: 'Checked', smsDelivery });
    t.equal(r.status, 201, JSON.stringify(r.body));
    return r.body.data.id as string;
  };

  t.test('SMPP: bound with the stored credentials, nothing sent', async (t) => {
    const submits = smsc.lines.filter((l) => l.startsWith('SUBMIT')).length;
    const r = await api('POST', `/routes/${w.routeId}/test`, session);
    t.equal(r.status, 200, JSON.stringify(r.body));
    t.match(r.body.data, { pass: true, via: 'smpp' });
    t.same(
      r.body.data.checks.map((c: { label: string; ok: boolean }) => [c.label, c.ok]),
      [
        ['connect', true],
        ['bind', true],
        ['unbind', true],
      ],
    );
    t.equal(smsc.lines.filter((l) => l.startsWith('SUBMIT')).length, submits, 'no submit_sm');
  });

  t.test('SMPP: a wrong password fails the bind check', async (t) => {
    const id = await make({ kind: 'smpp', host: '127.0.0.1', port: smsc.port, systemId: 'sup1', password: 'wrong' });
    const r = await api('POST', `/routes/${id}/test`, session);
    t.match(r.body.data, {
      pass: false,
      via: 'smpp',
      checks: [
        { label: 'connect', ok: true },
        { label: 'bind', ok: false },
      ],
    });
  });

  t.test('HTTPS: a well-formed https URL and a signing secret', async (t) => {
    const good = await make({
      kind: 'http',
      url: 'https://sms.example.test/send',
      signingSecret: 'a-long-enough-secret',
    });
    t.match((await api('POST', `/routes/${good}/test`, session)).body.data, {
      pass: true,
      via: 'http',
      checks: [
        { label: 'url', value: 'https://sms.example.test', ok: true },
        { label: 'signingSecret', ok: true },
      ],
    });
    const bare = await make({ kind: 'http', url: 'https://sms.example.test/send' });
    t.match((await api('POST', `/routes/${bare}/test`, session)).body.data, {
      pass: false,
      via: 'http',
      checks: [{ ok: true }, { label: 'signingSecret', value: 'missing', ok: false }],
    });
  });

  t.test("a buyer cannot test the seller's delivery", async (t) => {
    const r = await api('POST', `/routes/${w.routeId}/test`, buyer.session);
    t.equal(r.status, 400);
  });
});
