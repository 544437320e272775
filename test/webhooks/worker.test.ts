import { spawn } from 'node:child_process';
import t from 'tap';
import { emit } from '../../src/webhooks/emit.js';
import { setup } from './setup.js';
import { nodeScriptArgs } from '../helpers/node-script.js';

const MIN = 60_000;

t.test('a delivery is signed, carries its id in body and header, and is recorded once acknowledged', async (t) => {
  const s = await setup(t);
  const ep = await s.addEndpoint(['topup.confirmed']);
  s.receiver.fallback = { status: 204 };
  const { eventId } = await s.sql.begin((tx) =>
    emit(tx, { accountId: s.accountId, event: 'topup.confirmed', data: { amount: '25.000000', topupId: 'x' } }),
  );
  t.equal(await s.worker.runOnce(), 1);
  t.equal(s.receiver.received.length, 1);
  const got = s.receiver.received[0]!;
  t.ok(got.signatureOk, 'v1 signature verifies over "<ts>.<raw body>"');
  t.ok(got.legacyOk, 'legacy sha256= signature verifies over the raw body');
  t.equal(got.headers['x-webhook-event'], 'topup.confirmed');
  t.equal(got.headers['x-svc-timestamp'], String(Math.floor(s.clock.now().getTime() / 1000)));
  t.equal(got.headers['content-type'], 'application/json');
  const body = JSON.parse(got.rawBody.toString('utf8'));
  t.same(Object.keys(body), ['id', 'event', 'data', 'timestamp']);
  t.equal(body.id, got.headers['x-webhook-id'], 'body id equals X-Webhook-Id');
  t.same(body.data, { amount: '25.000000', topupId: 'x' });
  t.equal(body.event, 'topup.confirmed');
  t.match(body.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

  const d = await s.service.getDelivery(s.accountId, body.id);
  t.equal(d.state, 'succeeded');
  t.equal(d.eventId, eventId);
  t.equal(d.endpointId, ep.id);
  t.equal(d.attempts, 1);
  t.equal(d.attemptLog[0]?.outcome, 'ok');
  t.equal(d.attemptLog[0]?.statusCode, 204);
  t.same(d.payload, body);
  t.equal(await s.worker.runOnce(), 0, 'nothing left to deliver');
});

t.test('fail, fail, succeed: attempts at 0, 1 and 5 minutes, one id, processed once', async (t) => {
  const s = await setup(t);
  await s.addEndpoint();
  s.receiver.replies = [{ status: 500, body: 'boom' }, { status: 503 }];
  const start = s.clock.now().getTime();
  await emit(s.sql, { accountId: s.accountId, event: 'balance.low', data: { balance: '1.000000' } });
  for (let m = 0; m <= 40; m++) {
    await s.worker.runOnce();
    s.clock.advance(MIN);
  }
  t.same(
    s.receiver.received.map((r) => (r.at - start) / MIN),
    [0, 1, 5],
  );
  t.equal(
    new Set(s.receiver.received.map((r) => r.headers['x-webhook-id'])).size,
    1,
    'same X-Webhook-Id on every attempt',
  );
  t.ok(s.receiver.received.every((r) => r.signatureOk && r.legacyOk));
  t.equal(s.receiver.processed.length, 1);
  const [d] = await s.service.listDeliveries(s.accountId, { limit: 10 });
  t.equal(d?.state, 'succeeded');
  t.same(
    d?.attemptLog.map((a) => [a.outcome, a.statusCode]),
    [
      ['http_status', 500],
      ['http_status', 503],
      ['ok', 200],
    ],
  );
  t.equal(d?.attemptLog[0]?.responseExcerpt, 'boom');
});

t.test('always failing: 5 attempts at 0, 1, 5, 14 and 30 minutes, then it stops', async (t) => {
  const s = await setup(t);
  await s.addEndpoint();
  s.receiver.fallback = { status: 500 };
  const start = s.clock.now().getTime();
  await emit(s.sql, { accountId: s.accountId, event: 'balance.low', data: {} });
  for (let m = 0; m <= 31; m++) {
    await s.worker.runOnce();
    s.clock.advance(MIN);
  }
  s.clock.advance(24 * 60 * MIN);
  await s.worker.runOnce();
  t.same(
    s.receiver.received.map((r) => (r.at - start) / MIN),
    [0, 1, 5, 14, 30],
  );
  const [d] = await s.service.listDeliveries(s.accountId, { limit: 10 });
  t.equal(d?.state, 'failed');
  t.equal(d?.attempts, 5);
  t.equal(d?.nextAttemptAt, null);
  t.equal(d?.lastStatus, 500);
  const [ep] = await s.service.listEndpoints(s.accountId);
  t.equal(ep?.consecutiveFailures, 1, 'a delivery failed for good counts once against its endpoint');
  t.equal(ep?.status, 'active');
});

t.test('an endpoint is disabled after the threshold of failed deliveries, and its owner notified', async (t) => {
  const s = await setup(t, { webhooks: { disable_after_failures: 2 } });
  const ep = await s.addEndpoint();
  const runFor = async (minutes: number) => {
    for (let m = 0; m <= minutes; m++) {
      await s.worker.runOnce();
      s.clock.advance(MIN);
    }
  };
  const current = async () => (await s.service.listEndpoints(s.accountId))[0]!;
  s.receiver.fallback = { status: 500 };
  await emit(s.sql, { accountId: s.accountId, event: 'sms.sent', data: { i: 1 } });
  await runFor(31);
  t.equal((await current()).consecutiveFailures, 1);
  t.equal((await current()).status, 'active', 'below the threshold');
  s.receiver.fallback = { status: 200 };
  await emit(s.sql, { accountId: s.accountId, event: 'sms.sent', data: { i: 2 } });
  await runFor(0);
  t.equal((await current()).consecutiveFailures, 0, 'an acknowledged delivery resets the count');
  s.receiver.fallback = { status: 500 };
  await emit(s.sql, { accountId: s.accountId, event: 'sms.sent', data: { i: 3 } });
  await emit(s.sql, { accountId: s.accountId, event: 'sms.sent', data: { i: 4 } });
  await runFor(31);
  const cur = await current();
  t.equal(cur?.status, 'disabled');
  t.match(cur?.disabledReason, /2 consecutive deliveries failed/);
  const notes = await s.sql<
    { kind: string; data: { endpointId: string } }[]
  >`select kind, data from notifications where account_id = ${s.accountId}`;
  t.equal(notes.length, 1);
  t.equal(notes[0]?.kind, 'webhook.endpoint_disabled');
  t.equal(notes[0]?.data.endpointId, ep.id);
  const before = s.receiver.received.length;
  const res = await emit(s.sql, { accountId: s.accountId, event: 'sms.sent', data: {} });
  t.equal(res.deliveries, 0, 'a disabled endpoint gets no new deliveries');
  await s.worker.runOnce();
  t.equal(s.receiver.received.length, before);
  const re = await s.service.updateEndpoint(s.accountId, ep.id, { enabled: true });
  t.equal(re.status, 'active');
  t.equal(re.consecutiveFailures, 0);
});

t.test(
  'crash between claim and finish: retried after the lease, never lost, never counted successful twice',
  async (t) => {
    const s = await setup(t);
    await s.addEndpoint();
    await emit(s.sql, { accountId: s.accountId, event: 'call.completed', data: { callId: 'c1' } });
    // A worker claims the delivery and dies before sending or recording anything.
    const dead = await s.worker.claim(10);
    t.equal(dead.length, 1);
    t.equal(await s.worker.runOnce(), 0, 'a leased delivery is not claimed again while its lease runs');
    s.clock.advance(71_000);
    t.equal(await s.worker.runOnce(), 1, 'after the lease, the delivery is reaped and retried at once');
    t.equal(s.receiver.processed.length, 1);
    // The "dead" worker comes back and sends late: the receiver sees the same id; its result is discarded.
    await s.worker.deliver(dead[0]!);
    t.equal(s.receiver.received.length, 2);
    t.equal(s.receiver.received[1]?.duplicate, true, 'the late send carries the same X-Webhook-Id');
    t.equal(s.receiver.processed.length, 1, 'processed once by a de-duplicating receiver');
    const [d] = await s.service.listDeliveries(s.accountId, { limit: 10 });
    t.equal(d?.state, 'succeeded');
    t.same(
      d?.attemptLog.map((a) => a.outcome),
      ['worker_lost', 'ok'],
      'one success recorded',
    );
  },
);

t.test('several workers at once deliver each delivery exactly once', async (t) => {
  const s = await setup(t, { concurrency: 3 });
  await s.addEndpoint();
  await s.sql.begin(async (tx) => {
    for (let i = 0; i < 30; i++) await emit(tx, { accountId: s.accountId, event: 'sms.delivered', data: { i } });
  });
  const a = s.makeWorker();
  const b = s.makeWorker();
  const [na, nb, nc] = await Promise.all([a.runOnce(), b.runOnce(), s.worker.runOnce()]);
  t.equal(na + nb + nc, 30);
  t.equal(s.receiver.received.length, 30);
  t.equal(s.receiver.processed.length, 30);
  t.notOk(s.receiver.received.some((r) => r.duplicate));
  const [c] = await s.sql<{ n: string }[]>`select count(*) as n from webhook_deliveries where state = 'succeeded'`;
  t.equal(c?.n, '30');
});

t.test('a worker process killed mid-delivery: the delivery returns after its lease and succeeds once', async (t) => {
  const s = await setup(t);
  await s.addEndpoint();
  await emit(s.sql, { accountId: s.accountId, event: 'sms.failed', data: { messageId: 'm1' } });
  s.receiver.replies = ['hang'];
  const child = spawn(
    process.execPath,
    [...nodeScriptArgs(import.meta.url, 'crash-worker'), s.url, s.clock.now().toISOString(), s.receiver.cert],
    {
      stdio: 'ignore',
    },
  );
  const exited = new Promise((resolve) => child.once('exit', resolve));
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  await s.receiver.waitFor(1);
  child.kill('SIGKILL');
  await exited;
  const [mid] = await s.sql<{ state: string; attempts: number }[]>`select state, attempts from webhook_deliveries`;
  t.same(mid, { state: 'in_flight', attempts: 1 }, 'the dead worker left its claim');
  t.equal(await s.worker.runOnce(), 0, 'not taken while the lease runs');
  s.clock.advance(70_001);
  t.equal(await s.worker.runOnce(), 1);
  const [d] = await s.service.listDeliveries(s.accountId, { limit: 10 });
  t.equal(d?.state, 'succeeded');
  t.same(
    d?.attemptLog.map((a) => a.outcome),
    ['worker_lost', 'ok'],
  );
  t.equal(s.receiver.received.length, 2);
  t.equal(s.receiver.received[0]?.headers['x-webhook-id'], s.receiver.received[1]?.headers['x-webhook-id']);
  t.equal(s.receiver.processed.length, 1);
});
