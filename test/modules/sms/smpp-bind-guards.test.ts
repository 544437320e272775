import { createHook } from 'node:async_hooks';
import { once } from 'node:events';
import net from 'node:net';
import t from 'tap';
import smpp from 'smpp';
import type { PDU, Session } from 'smpp';
import { SMPP_STATUS } from '../../../src/messaging/index.js';
import { useRawMessageCodec } from '../../../src/messaging/smpp-lib.js';
import { startTestDaemon, type TestDaemon } from '../../helpers/daemon.js';

interface Esme {
  session: Session;
  closed: Promise<'closed'>;
  request(command: string, fields?: Record<string, unknown>): Promise<PDU>;
  close(): void;
}

/** An ESME connected from a chosen loopback address (each 127.0.0.x is its own source). */
async function esme(t: { teardown(fn: () => void): void }, port: number, localAddress = '127.0.0.1'): Promise<Esme> {
  useRawMessageCodec();
  const session = smpp.connect({ host: '127.0.0.1', port, localAddress });
  session.on('error', () => undefined);
  // Not events.once: it rejects on the 'error' a reset connection emits before 'close'.
  const closed = new Promise<'closed'>((r) => session.once('close', () => r('closed')));
  await Promise.race([once(session, 'connect'), closed]);
  t.teardown(() => session.socket.destroy());
  return {
    session,
    closed,
    request: (command, fields = {}) => new Promise((resolve) => session.send(new smpp.PDU(command, fields), resolve)),
    close: () => session.socket.destroy(),
  };
}

/** The answer to a request, or 'closed' when the daemon closes the connection first. */
const answerOrClose = (e: Esme, command: string, fields: Record<string, unknown> = {}): Promise<number | 'closed'> =>
  Promise.race([e.request(command, fields).then((p) => p.command_status as number), e.closed]);

async function bind(
  t: { teardown(fn: () => void): void },
  d: TestDaemon,
  systemId: string,
  password: string,
  from = '127.0.0.1',
): Promise<number | 'closed'> {
  const e = await esme(t, d.ports['smpp']!, from);
  const r = await answerOrClose(e, 'bind_transceiver', { system_id: systemId, password });
  e.close();
  return r;
}

async function customer(d: TestDaemon, email: string) {
  const acc = await d.modules.services.accounts.createAccount({ email, password: 'long enough password' });
  return d.modules.services.smppCredentials.issue(acc.id);
}

t.test('a failed bind closes the connection: one password guess per connection', async (t) => {
  const d = await startTestDaemon(t);
  const creds = await customer(d, 'guess@example.test');
  const e = await esme(t, d.ports['smpp']!);
  t.equal(
    await answerOrClose(e, 'bind_transceiver', { system_id: creds.systemId, password: 'wrong1' }),
    SMPP_STATUS.ESME_RBINDFAIL,
  );
  t.equal(
    await answerOrClose(e, 'bind_transceiver', { system_id: creds.systemId, password: 'wrong2' }),
    'closed',
    'no second guess on the connection',
  );
});

t.test('lockout per system_id and per source after bind_lockout_failures, even with the right password', async (t) => {
  const d = await startTestDaemon(t, { smpp: { bind_lockout_failures: 3, bind_lockout_seconds: 300 } });
  const a = await customer(d, 'lock-a@example.test');
  const b = await customer(d, 'lock-b@example.test');

  // Per system_id: three wrong passwords from three addresses lock the id everywhere.
  for (const from of ['127.0.0.4', '127.0.0.5', '127.0.0.6'])
    t.equal(await bind(t, d, a.systemId, 'wrong', from), SMPP_STATUS.ESME_RBINDFAIL);
  t.equal(
    await bind(t, d, a.systemId, a.password, '127.0.0.7'),
    SMPP_STATUS.ESME_RBINDFAIL,
    'the right password is refused while the id is locked',
  );

  // Per source: three unknown ids from one address lock that address for every id.
  for (const id of ['nobody1', 'nobody2', 'nobody3'])
    t.equal(await bind(t, d, id, 'x', '127.0.0.8'), SMPP_STATUS.ESME_RBINDFAIL);
  t.equal(
    await bind(t, d, b.systemId, b.password, '127.0.0.8'),
    SMPP_STATUS.ESME_RBINDFAIL,
    'a locked address cannot bind any id',
  );
  t.equal(await bind(t, d, b.systemId, b.password, '127.0.0.9'), 0, 'the same id binds from another address');
});

t.test("failed binds with a customer's id from elsewhere do not lock it out of its own allowed address", async (t) => {
  const d = await startTestDaemon(t, { smpp: { bind_lockout_failures: 5, bind_lockout_seconds: 300 } });
  const acc = await d.modules.services.accounts.createAccount({
    email: 'own-ip@example.test',
    password: 'long enough password',
  });
  const creds = await d.modules.services.smppCredentials.issue(acc.id, { allowedIps: ['127.0.0.3'] });

  // The attacker, from 127.0.0.2, fails five binds with the customer's id: the id is locked.
  for (let i = 0; i < 5; i++)
    t.equal(await bind(t, d, creds.systemId, `wrong${i}`, '127.0.0.2'), SMPP_STATUS.ESME_RBINDFAIL);
  t.equal(
    await bind(t, d, creds.systemId, creds.password, '127.0.0.14'),
    SMPP_STATUS.ESME_RBINDFAIL,
    'locked from an address the credential does not list',
  );
  t.equal(
    await bind(t, d, creds.systemId, creds.password, '127.0.0.2'),
    SMPP_STATUS.ESME_RBINDFAIL,
    "the attacker's address stays locked",
  );
  t.equal(
    await bind(t, d, creds.systemId, creds.password, '127.0.0.3'),
    0,
    'the customer binds from its allowed address',
  );

  // Its own address is still held by its own source lock.
  for (let i = 0; i < 5; i++)
    t.equal(await bind(t, d, creds.systemId, `bad${i}`, '127.0.0.3'), SMPP_STATUS.ESME_RBINDFAIL);
  t.equal(
    await bind(t, d, creds.systemId, creds.password, '127.0.0.3'),
    SMPP_STATUS.ESME_RBINDFAIL,
    'the allowed address locks itself after its own failures',
  );
});

t.test('a credential open to every address gets no exemption from the id lock', async (t) => {
  const d = await startTestDaemon(t, { smpp: { bind_lockout_failures: 3, bind_lockout_seconds: 300 } });
  const creds = await customer(d, 'open-ip@example.test');
  for (let i = 0; i < 3; i++)
    t.equal(await bind(t, d, creds.systemId, `wrong${i}`, '127.0.0.15'), SMPP_STATUS.ESME_RBINDFAIL);
  t.equal(await bind(t, d, creds.systemId, creds.password, '127.0.0.16'), SMPP_STATUS.ESME_RBINDFAIL);
});

t.test('an unknown system_id costs the same password check as a known one', async (t) => {
  const d = await startTestDaemon(t);
  const creds = await customer(d, 'enum@example.test');
  const creds2 = d.modules.services.smppCredentials;
  const before = creds2.checks();
  t.equal(await bind(t, d, creds.systemId, 'wrong', '127.0.0.10'), SMPP_STATUS.ESME_RBINDFAIL);
  const known = creds2.checks() - before;
  t.equal(await bind(t, d, 'nosuchid', 'wrong', '127.0.0.11'), SMPP_STATUS.ESME_RBINDFAIL);
  const unknown = creds2.checks() - before - known;
  t.equal(known, 1, 'a known id is checked with scrypt');
  t.equal(unknown, 1, 'an unknown id gets the same scrypt check');
});

t.test('SMPP password checks stay off the thread pool HTTPS logins use', async (t) => {
  const d = await startTestDaemon(t);
  const creds = await customer(d, 'pool@example.test');
  let scrypts = 0;
  // Every crypto.scrypt call on this (the daemon's main) thread queues one of these on libuv's pool.
  const hook = createHook({ init: (_id, type) => void (type === 'SCRYPTREQUEST' && scrypts++) }).enable();
  t.teardown(() => void hook.disable());

  t.equal(await bind(t, d, creds.systemId, 'wrong', '127.0.0.12'), SMPP_STATUS.ESME_RBINDFAIL);
  t.equal(await bind(t, d, 'nosuchid', 'wrong', '127.0.0.12'), SMPP_STATUS.ESME_RBINDFAIL);
  t.equal(await bind(t, d, creds.systemId, creds.password, '127.0.0.13'), 0);
  t.equal(await bind(t, d, creds.systemId, creds.password, '127.0.0.13'), 0, 'a rebind with a verified password');
  t.equal(scrypts, 0, 'no SMPP bind used the shared pool');

  const res = await d.https('POST', '/auth/login', {
    body: { email: 'pool@example.test', password: 'long enough password' },
  });
  t.equal(res.status, 200, 'login answered');
  t.ok(scrypts > 0, 'control: an HTTPS login does (the hook sees it)');
});

t.test(
  'SMPP connections: per-source and total caps, unbound connections closed after bind_timeout_seconds',
  async (t) => {
    const d = await startTestDaemon(t, { smpp: { max_per_source: 3, max_connections: 5, bind_timeout_seconds: 1 } });
    const port = d.ports['smpp']!;
    const creds = await customer(d, 'caps@example.test');

    // Bound connections are not closed by the bind timeout, so they hold their slots for the cap checks.
    const outcomes: Array<number | 'closed'> = [];
    for (let i = 0; i < 4; i++) {
      const e = await esme(t, port, '127.0.0.20');
      outcomes.push(
        await answerOrClose(e, 'bind_transceiver', { system_id: creds.systemId, password: creds.password }),
      );
    }
    t.same(outcomes, [0, 0, 0, 'closed'], 'three per source');
    const more: Array<number | 'closed'> = [];
    for (let i = 0; i < 3; i++) {
      const e = await esme(t, port, '127.0.0.21');
      more.push(await answerOrClose(e, 'bind_transceiver', { system_id: creds.systemId, password: creds.password }));
    }
    t.same(more, [0, 0, 'closed'], 'five in total');
    t.equal((await d.https('GET', '/status')).status, 200, 'HTTPS answers while SMPP is at its cap');
  },
);

t.test('SMPP: a connection that never binds is closed, enquire_links or not', async (t) => {
  const d = await startTestDaemon(t, { smpp: { bind_timeout_seconds: 1 } });
  const silent = await esme(t, d.ports['smpp']!);
  const chatty = await esme(t, d.ports['smpp']!);
  const tlsRaw = net.connect({ host: '127.0.0.1', port: d.ports['smpp_tls']! });
  tlsRaw.on('error', () => undefined);
  t.teardown(() => tlsRaw.destroy());
  let keepAlive = true;
  void (async () => {
    // Twenty a second, well inside the 1 s bind timeout: back to back, the ping-pong kept a core busy.
    while (keepAlive && (await answerOrClose(chatty, 'enquire_link')) !== 'closed')
      await new Promise((r) => setTimeout(r, 50));
  })();
  // The bound only keeps a regression from hanging the run for the old 2-minute idle time.
  let bound: NodeJS.Timeout | undefined;
  const gaveUp = new Promise<'open'>((r) => (bound = setTimeout(() => r('open'), 60_000)));
  const tlsClosed = new Promise<'closed'>((r) => tlsRaw.once('close', () => r('closed')));
  const states = await Promise.all([silent.closed, chatty.closed, tlsClosed].map((c) => Promise.race([c, gaveUp])));
  t.same(states, ['closed', 'closed', 'closed'], 'silent, enquire_link-only and TLS-silent connections closed');
  keepAlive = false;
  clearTimeout(bound);
});
