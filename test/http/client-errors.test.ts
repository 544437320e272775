import t from 'tap';
import { startTestDaemon } from '../helpers/daemon.js';

/** Answers Node's HTTP parser gives before a request exists, and bodiless requests, over real HTTPS. */
t.test('oversized query string and bodiless refresh answer in the error envelope', async (t) => {
  const d = await startTestDaemon(t);

  const big = await d.https('GET', `/routes?q=${'a'.repeat(100_000)}`);
  t.equal(big.status, 431);
  t.match(big.headers['content-type'], /application\/json/);
  t.match(big.json, { success: false, error: { code: 'HEADERS_TOO_LARGE', message: /too large/ } });
  t.same(Object.keys(big.json.error), ['code', 'message'], 'the envelope and nothing else');
  t.match(big.headers['x-request-id'], /^[0-9a-f-]{36}$/);

  const longId = await d.https('GET', `/comms/calls/${'1'.repeat(300)}`, { token: d.firstStart!.testKey });
  t.equal(longId.status, 400);
  t.match(longId.json, { success: false, error: { code: 'INVALID_INPUT' } });

  const bare = await d.https('POST', '/auth/refresh');
  t.equal(bare.status, 401, bare.text);
  t.equal(bare.json.error.code, 'MISSING_TOKEN');
  const typedEmpty = await d.https('POST', '/auth/refresh', { headers: { 'content-type': 'application/json' } });
  t.equal(typedEmpty.status, 401, typedEmpty.text);
  t.equal(typedEmpty.json.error.code, 'MISSING_TOKEN');
  const emptyObject = await d.https('POST', '/auth/refresh', { body: {} });
  t.equal(emptyObject.json.error.code, 'MISSING_TOKEN');
});

t.test('a body over the limit answers 413 PAYLOAD_TOO_LARGE in the envelope, a body at it is read', async (t) => {
  const d = await startTestDaemon(t, { http: { body_limit_bytes: 4096 } });
  const login = (pad: number) => {
    const body = JSON.stringify({ email: 'nobody@example.com', password: 'x', pad: '' });
    return d.https('POST', '/auth/login', {
      rawBody: body.replace('"pad":""', `"pad":"${'a'.repeat(pad)}"`),
      headers: { 'content-type': 'application/json' },
    });
  };
  const big = await login(5000);
  t.equal(big.status, 413, big.text);
  t.same(big.json, {
    success: false,
    error: { code: 'PAYLOAD_TOO_LARGE', message: 'Request body is too large' },
  });
  t.match(big.headers['x-request-id'], /^[0-9a-f-]{36}$/);
  const fits = await login(3000);
  t.match(fits.json.error, { code: 'VALIDATION_ERROR' }, 'under the limit the body is parsed and validated');
});
