import { request } from 'node:http';
import t from 'tap';
import { startTestDaemon } from '../helpers/daemon.js';

function plainHttp(
  port: number,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string; requestId: unknown } | { error: string }> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, headers, timeout: 3000 }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, requestId: res.headers['x-request-id'] }));
    });
    req.on('error', (err) => resolve({ error: err.message }));
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end();
  });
}

t.test('plain HTTP never reaches a handler on the HTTPS port', async (t) => {
  const d = await startTestDaemon(t);
  const res = await plainHttp(d.ports['http']!, '/api/v1/status');
  t.ok('error' in res || (res.status !== 200 && !res.body.includes('"success"')), 'no API answer over plain HTTP');
  const ok = await d.https('GET', '/status');
  t.equal(ok.status, 200);
  // HEAD is routed as GET by the server (src/http/head-as-get.ts): GET's status and headers, no body.
  const head = await d.https('HEAD', '/status');
  t.equal(head.status, 200);
  t.equal(head.text, '', 'no body');
  t.equal(head.headers['content-type'], ok.headers['content-type']);
  t.ok(ok.headers['content-length'], 'GET has a length');
  t.equal(head.headers['content-length'], ok.headers['content-length']);
  t.match(head.headers['x-request-id'], /^[0-9a-f-]{36}$/);
  // Admission runs per route (src/http/app.ts): HEAD, served as GET, is refused without a credential too.
  const anonymous = await d.https('HEAD', '/account');
  t.equal(anonymous.status, 401);
  t.equal(anonymous.text, '');
  t.match(anonymous.headers['x-request-id'], /^[0-9a-f-]{36}$/);
  const missing = await d.https('HEAD', '/no-such-route');
  t.equal(missing.status, 404);
  t.equal(missing.text, '');
});

t.test('behind a trusted TLS proxy: forwarded https only, trusted addresses only', async (t) => {
  const d = await startTestDaemon(t, { http: { tls_mode: 'proxy', trusted_proxies: ['127.0.0.1'] } });
  const port = d.ports['http']!;
  const viaHttps = await plainHttp(port, '/api/v1/status', { 'x-forwarded-proto': 'https' });
  t.match(viaHttps, { status: 200 });
  const viaHttp = await plainHttp(port, '/api/v1/status', { 'x-forwarded-proto': 'http' });
  t.match(viaHttp, { status: 400 });
  t.match((viaHttp as { body: string }).body, /HTTPS is required/);
  const none = await plainHttp(port, '/api/v1/status');
  t.match(none, { status: 400, requestId: /^[0-9a-f-]{36}$/ });
  // Checked before routing: an unknown path over plain HTTP is refused, not answered 404.
  const unknown = await plainHttp(port, '/api/v1/no/such/path', { 'x-forwarded-proto': 'http' });
  t.match(unknown, { status: 400, requestId: /^[0-9a-f-]{36}$/ });
  const unknownViaHttps = await plainHttp(port, '/api/v1/no/such/path', { 'x-forwarded-proto': 'https' });
  t.match(unknownViaHttps, { status: 404, requestId: /^[0-9a-f-]{36}$/ });
});

t.test('behind a proxy, other peers are refused', async (t) => {
  const d = await startTestDaemon(t, { http: { tls_mode: 'proxy', trusted_proxies: ['10.9.9.9'] } });
  const res = await plainHttp(d.ports['http']!, '/api/v1/status', { 'x-forwarded-proto': 'https' });
  t.match(res, { status: 403 });
});
