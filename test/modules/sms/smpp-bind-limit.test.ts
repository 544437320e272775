import t, { type Test } from 'tap';
import { SMPP_STATUS } from '../../../src/messaging/index.js';
import { startTestDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { connectPeer, type Peer } from '../../messaging/smpp-peer.js';
import { eventually } from '../sip-trunks/world.js';
import { REDIS_URL, redisAnswers } from '../../helpers/redis.js';

/**
 * Throughput is per bind, so a credential's binds are capped (`maxBinds`, else `[smpp]
 * max_binds_per_credential`), across the daemons when they share Redis.
 */
/** A transceiver bind on `d`: the bind's status, and the peer (kept open until the test ends or it is closed). */
async function bind(t: Test, d: TestDaemon, systemId: string, password: string) {
  const peer: Peer = await connectPeer(d.ports['smpp']!);
  t.teardown(() => peer.close());
  const r = await peer.request('bind_transceiver', { system_id: systemId, password });
  return { status: r.command_status as number, peer };
}

/** Binds as soon as a slot is free again (a closed bind gives its slot back asynchronously). */
async function bindOnceFree(t: Test, d: TestDaemon, systemId: string, password: string) {
  return eventually(async () => {
    const b = await bind(t, d, systemId, password);
    if (b.status === 0) return b;
    b.peer.close();
    return null;
  }, 5000);
}

async function signUp(d: TestDaemon, email: string) {
  const accounts = d.modules.services.accounts;
  await accounts.createAccount({ email, password: 'long enough password' });
  return (await accounts.login(email, 'long enough password', {})).accessToken;
}

t.test('a credential holds at most maxBinds binds; one over it is refused without counting as a failure', async (t) => {
  const d = await startTestDaemon(t, { smpp: { max_binds_per_credential: 3 } });
  const token = await signUp(d, 'binds@example.test');
  const bad = await d.https('POST', '/account/smpp-credentials', { token, body: { maxBinds: 0 } });
  t.equal(bad.status, 400);
  t.match(bad.json.error, { code: 'VALIDATION_ERROR', details: [{ path: 'maxBinds' }] });
  const res = await d.https('POST', '/account/smpp-credentials', { token, body: { maxBinds: 2 } });
  t.equal(res.status, 201, res.text);
  const { id, systemId, password, maxBinds } = res.json.data;
  t.equal(maxBinds, 2);

  const first = await bind(t, d, systemId, password);
  const second = await bind(t, d, systemId, password);
  t.same([first.status, second.status], [0, 0], 'two binds open');
  // More refusals than bind_lockout_failures (5): the right password over the cap is not a guess.
  for (let i = 0; i < 7; i++) {
    const over = await bind(t, d, systemId, password);
    t.equal(over.status, SMPP_STATUS.ESME_RBINDFAIL, `bind ${i + 3} refused`);
    await over.peer.closed;
  }
  first.peer.close();
  await first.peer.closed;
  const again = await bindOnceFree(t, d, systemId, password);
  t.ok(again, 'a closed bind frees its slot, and the credential is not locked out');

  const listed = await d.https('GET', `/connections/${id}`, { token });
  t.match(listed.json.data, { kind: 'smpp', maxBinds: 2, binds: [{}, {}] });
  const raised = await d.https('PATCH', `/connections/${id}`, { token, body: { maxBinds: 3 } });
  t.equal(raised.status, 200, raised.text);
  t.equal(raised.json.data.maxBinds, 3);
  t.equal((await bind(t, d, systemId, password)).status, 0, 'a third bind under the raised cap');
  t.equal((await bind(t, d, systemId, password)).status, SMPP_STATUS.ESME_RBINDFAIL, 'and no fourth');
  const reset = await d.https('PATCH', `/connections/${id}`, { token, body: { maxBinds: null } });
  t.equal(reset.json.data.maxBinds, 3, 'null: back to the daemon default');
});

const skip = (await redisAnswers()) ? false : 'Redis is not running on 127.0.0.1:6379';

t.test('two daemons on one database and one Redis share the count', { skip }, async (t) => {
  const a = await startTestDaemon(t, { redis: { url: REDIS_URL } });
  const b = await startTestDaemon(t, { redis: { url: REDIS_URL }, database: { url: a.config.database.url } });
  const token = await signUp(a, 'two-binds@example.test');
  const res = await a.https('POST', '/account/smpp-credentials', { token, body: { maxBinds: 2 } });
  const { systemId, password } = res.json.data;

  const onA = await bind(t, a, systemId, password);
  const onB = await bind(t, b, systemId, password);
  t.same([onA.status, onB.status], [0, 0], 'one bind on each daemon');
  t.equal((await bind(t, a, systemId, password)).status, SMPP_STATUS.ESME_RBINDFAIL, 'a third on A is over the cap');
  t.equal((await bind(t, b, systemId, password)).status, SMPP_STATUS.ESME_RBINDFAIL, 'so is a third on B');
  onA.peer.close();
  await onA.peer.closed;
  const onB2 = await bindOnceFree(t, b, systemId, password);
  t.ok(onB2, "the slot A's closed bind gave back is taken on B");
});
