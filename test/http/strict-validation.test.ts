import t from 'tap';
import { startTestDaemon } from '../helpers/daemon.js';

interface Detail {
  path: string;
  message: string;
}

t.test('request bodies are validated as sent; query strings and path parameters are coerced', async (t) => {
  const d = await startTestDaemon(t);
  const { accounts, keys } = d.modules.services;
  const acct = await accounts.createAccount({ email: 'strict@example.com', password: 'correct horse battery' });
  const { accessToken: session } = await accounts.login('strict@example.com', 'correct horse battery', {});
  // A key per call of the 10/s routes: limits are per credential.
  const key = async () => (await keys.create(acct.id, { mode: 'live' })).secret;

  const refused = async (method: string, path: string, body: unknown, token: string, code = 'VALIDATION_ERROR') => {
    const r = await d.https(method, path, { token, body });
    t.equal(r.status, 400, `${method} ${path} ${JSON.stringify(body)}: ${r.text}`);
    t.equal(r.json?.error?.code, code);
    t.ok(Array.isArray(r.json?.error?.details) && r.json.error.details.length > 0, 'details are present');
    return (r.json?.error?.details ?? []) as Detail[];
  };
  const call = { to: '+441234567890', from: '+441234567891' };

  t.same(
    (await refused('POST', '/comms/calls', { ...call, maxDuration: '30' }, await key())).map((x) => x.path),
    ['maxDuration'],
    'a number sent as a string',
  );
  t.same(
    (await refused('POST', '/comms/calls', { ...call, to: 441234567890 }, await key())).map((x) => x.path),
    ['to'],
    'a string sent as a number',
  );
  t.same(
    (await refused('POST', '/comms/calls', { ...call, async: 'true' }, await key())).map((x) => x.path),
    ['async'],
    'a boolean sent as a string',
  );
  t.same(
    (
      await refused('POST', '/account/webhooks', { url: 'https://example.com/hook', events: 'call.completed' }, session)
    ).map((x) => x.path),
    ['events'],
    'a string is not a one-element array',
  );
  t.same(
    (await refused('POST', '/sip/trunk-ips', { ip: '192.0.2.10', label: ['x'] }, session)).map((x) => x.path),
    ['label'],
    'a one-element array is not a string',
  );

  const fax = await refused('POST', '/routes', { type: 'fax', name: 'x' }, session);
  t.same(
    fax,
    [{ path: 'type', message: 'must be one of "voice", "sms"' }],
    'an enum failure is one detail, not one per alternative',
  );
  const lang = await refused('POST', '/comms/calls', { ...call, language: 'xx' }, await key());
  t.same(
    lang.map((x) => x.path),
    ['language'],
    'seven languages, one detail',
  );
  t.match(lang[0]!.message, /^must be one of "en", "es", "fr", "de", "pt", "hi"$/);
  const shape = await refused('POST', '/routes', { type: 'sms', name: 'x', smsDelivery: { kind: 'fax' } }, session);
  t.same(
    shape.map((x) => x.path),
    ['smsDelivery'],
    'alternative object shapes fold into one detail at the field',
  );

  const eleven = Array.from({ length: 11 }, () => ({ pause: 1 }));
  t.same(
    (await refused('POST', '/comms/calls', { ...call, actions: eleven }, await key())).map((x) => x.path),
    ['actions'],
    'at most 10 actions',
  );
  const doc = await d.https('GET', '/docs/json');
  const actions = doc.json.paths['/comms/calls'].post.requestBody.content['application/json'].schema.properties.actions;
  t.equal(actions.maxItems, 10, 'the published schema states the limit the handler enforces');

  const price = await d.https('GET', '/routes/price-number?number=abc');
  t.equal(price.status, 400);
  t.equal(price.json.error.code, 'VALIDATION_ERROR');
  t.same(
    price.json.error.details.map((x: Detail) => x.path),
    ['number'],
  );

  const page = await d.https('GET', '/billing/transactions?limit=2', { token: session });
  t.equal(page.status, 200, 'query strings are still coerced to their types');
  const badLimit = await d.https('GET', '/billing/transactions?limit=abc', { token: session });
  t.equal(badLimit.status, 400);
  t.same(
    badLimit.json.error.details.map((x: Detail) => x.path),
    ['limit'],
  );
});
