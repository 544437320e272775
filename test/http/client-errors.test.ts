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
