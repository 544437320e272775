import t from 'tap';
import { createWebhookSender } from '../../src/webhooks/sender.js';
import { checkEndpointUrl, isPrivateAddress, resolveTarget, TargetRefusedError } from '../../src/webhooks/target.js';
import { signPayload, verifySignature } from '../../src/webhooks/signer.js';
import { startReceiver } from './receiver.js';

const now = () => Date.now();
const send = (sender: ReturnType<typeof createWebhookSender>, url: string) =>
  sender({ url, headers: { 'x-webhook-id': 'd1' }, body: '{"id":"d1"}' });

t.test('addresses that are not public unicast are refused', async (t) => {
  for (const a of [
    '127.0.0.1',
    '10.1.2.3',
    '172.16.0.1',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '::1',
    '::',
    'fe80::1',
    'fd00:ec2::254',
    'fc00::1',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
    '::ffff:8.8.8.8',
    '64:ff9b::a00:1',
  ]) {
    t.ok(isPrivateAddress(a), a);
  }
  for (const a of ['8.8.8.8', '1.1.1.1', '2606:4700::1111']) t.notOk(isPrivateAddress(a), a);
});

t.test('endpoint URLs: https only, no credentials, no private IP literals unless allowed', async (t) => {
  t.throws(() => checkEndpointUrl('http://example.com/hook', false), TargetRefusedError);
  t.throws(() => checkEndpointUrl('https://user:pw@example.com/hook', false), /credentials/);
  t.throws(() => checkEndpointUrl('https://169.254.169.254/latest', false), /not public/);
  t.throws(() => checkEndpointUrl('https://[::1]:8443/', false), /not public/);
  t.throws(() => checkEndpointUrl('https://localhost/', false), /not public/);
  t.equal(checkEndpointUrl('https://hooks.example.com/a?b=1', false).href, 'https://hooks.example.com/a?b=1');
  t.equal(checkEndpointUrl('https://127.0.0.1:9/x', true).port, '9');
});

t.test('DNS answers are checked: one private answer refuses the name', async (t) => {
  const lookup = async () => [
    { address: '93.184.216.34', family: 4 },
    { address: '10.0.0.7', family: 4 },
  ];
  await t.rejects(resolveTarget('https://rebind.example/x', { allowPrivate: false, lookup }), /10\.0\.0\.7/);
  const ok = await resolveTarget('https://public.example:8443/x', {
    allowPrivate: false,
    lookup: async () => [{ address: '93.184.216.34', family: 4 }],
  });
  t.same(
    [ok.address, ok.port, ok.servername, ok.hostHeader],
    ['93.184.216.34', 8443, 'public.example', 'public.example:8443'],
  );
});

t.test('SSRF: the sender refuses a loopback receiver unless private targets are allowed', async (t) => {
  const r = await startReceiver(t, { now });
  const refused = await send(createWebhookSender({ timeoutMs: 2000, allowPrivate: false, ca: r.cert }), r.url());
  t.equal(refused.outcome, 'refused_target');
  const viaDns = await send(
    createWebhookSender({
      timeoutMs: 2000,
      allowPrivate: false,
      ca: r.cert,
      lookup: async () => [{ address: '127.0.0.1', family: 4 }],
    }),
    `https://hooks.test:${r.port}/hook`,
  );
  t.equal(viaDns.outcome, 'refused_target', 'a name resolving to loopback is refused too');
  t.equal(r.received.length, 0, 'nothing reached the receiver');
  const allowed = await send(
    createWebhookSender({
      timeoutMs: 2000,
      allowPrivate: true,
      ca: r.cert,
      lookup: async () => [{ address: '127.0.0.1', family: 4 }],
    }),
    `https://hooks.test:${r.port}/hook`,
  );
  t.equal(allowed.outcome, 'ok', 'connects to the checked address, with SNI and certificate check for the name');
  t.equal(r.received[0]?.headers.host, `hooks.test:${r.port}`);
});

t.test('a checked answer is reused for the next deliveries, and looked up again after a failure', async (t) => {
  const r = await startReceiver(t, { now });
  const asked: string[] = [];
  const sender = createWebhookSender({
    timeoutMs: 2000,
    allowPrivate: true,
    ca: r.cert,
    lookup: async (host) => {
      asked.push(host);
      return [{ address: '127.0.0.1', family: 4 }];
    },
  });
  t.teardown(() => sender.close?.());
  const url = `https://hooks.test:${r.port}/hook`;
  for (let i = 0; i < 3; i++) t.equal((await send(sender, url)).outcome, 'ok');
  t.same(asked, ['hooks.test'], 'one lookup served three deliveries');
  const port = r.port;
  await r.close();
  t.equal((await send(sender, url)).outcome, 'connect_error', 'the kept address no longer answers');
  t.same(asked, ['hooks.test'], 'the failed attempt used the kept answer');
  t.equal((await send(sender, `https://hooks.test:${port}/hook`)).outcome, 'connect_error');
  t.same(asked, ['hooks.test', 'hooks.test'], 'after a failed delivery the name is looked up again');
});

t.test('redirects are not followed and count as failures', async (t) => {
  const r = await startReceiver(t, { now });
  r.replies = [{ status: 307, headers: { location: r.url('/elsewhere') } }];
  const res = await send(createWebhookSender({ timeoutMs: 2000, allowPrivate: true, ca: r.cert }), r.url());
  t.equal(res.outcome, 'redirect');
  t.equal(res.statusCode, 307);
  t.match(res.error, /redirect not followed/);
  t.same(
    r.received.map((x) => x.path),
    ['/hook'],
    'the redirect target was never requested',
  );
});

t.test('timeouts, TLS failures, refused connections and big bodies are bounded failures', async (t) => {
  const r = await startReceiver(t, { now });
  const sender = createWebhookSender({ timeoutMs: 300, allowPrivate: true, ca: r.cert, excerptBytes: 64 });
  r.replies = ['hang'];
  const slow = await send(sender, r.url());
  t.equal(slow.outcome, 'timeout');
  r.replies = [{ status: 500, body: Buffer.alloc(2 * 1024 * 1024, 'x') }];
  const big = await send(sender, r.url());
  t.equal(big.outcome, 'http_status');
  t.equal(big.statusCode, 500);
  t.equal(big.responseExcerpt?.length, 64, 'only the excerpt is kept');
  const untrusted = await send(createWebhookSender({ timeoutMs: 2000, allowPrivate: true }), r.url());
  t.equal(untrusted.outcome, 'tls_error', 'certificate verification stays on without the test CA');
  const stuckDns = await send(
    createWebhookSender({ timeoutMs: 200, allowPrivate: true, lookup: () => new Promise(() => undefined) }),
    'https://slow-dns.test/hook',
  );
  t.equal(stuckDns.outcome, 'timeout', 'a lookup that never answers is bounded by the attempt deadline');
  const port = r.port;
  await r.close();
  const closed = await send(sender, `https://127.0.0.1:${port}/hook`);
  t.equal(closed.outcome, 'connect_error');
});

t.test('signatures: verify as a customer would', async (t) => {
  const body = '{"id":"x","event":"ping","data":{},"timestamp":"2026-01-01T00:00:00.000Z"}';
  const h = signPayload('whsec_abc', 1_767_225_600, body);
  t.match(h['x-svc-signature'], /^v1=[0-9a-f]{64}$/);
  t.match(h['x-webhook-signature'], /^sha256=[0-9a-f]{64}$/);
  const base = { secret: 'whsec_abc', rawBody: body, timestamp: h['x-svc-timestamp'], signature: h['x-svc-signature'] };
  t.same(verifySignature({ ...base, nowSeconds: 1_767_225_600 + 299 }), { ok: true });
  t.same(verifySignature({ ...base, nowSeconds: 1_767_225_600 + 301 }), { ok: false, reason: 'stale' });
  t.same(verifySignature({ ...base, rawBody: body.replace('ping', 'pong'), nowSeconds: 1_767_225_600 }), {
    ok: false,
    reason: 'mismatch',
  });
  t.same(verifySignature({ ...base, secret: 'whsec_other', nowSeconds: 1_767_225_600 }), {
    ok: false,
    reason: 'mismatch',
  });
});
