import { connect as tlsConnect } from 'node:tls';
import t from 'tap';
import { SMPP_STATUS } from '../../../src/messaging/index.js';
import { startTestDaemon } from '../../helpers/daemon.js';
import { connectPeer } from '../../messaging/smpp-peer.js';

/** The SMPP section of an account over HTTPS, and binds to the daemon's own SMPP listeners. */
t.test('issue SMPP credentials over HTTPS and bind to the daemon', async (t) => {
  const d = await startTestDaemon(t);
  const accounts = d.modules.services.accounts;
  await accounts.createAccount({ email: 'esme@example.test', password: 'long enough password' });
  const { accessToken } = await accounts.login('esme@example.test', 'long enough password', {});

  const bad = await d.https('POST', '/account/smpp-credentials', { token: accessToken, body: { throughput: 0 } });
  t.equal(bad.status, 400);
  t.equal(bad.json.error.code, 'VALIDATION_ERROR');

  const res = await d.https('POST', '/account/smpp-credentials', {
    token: accessToken,
    body: { throughput: 20, allowedIps: ['127.0.0.1'] },
  });
  t.equal(res.status, 201, res.text);
  const creds = res.json.data;
  t.match(creds, { systemId: /^[A-Za-z0-9_-]{1,16}$/, password: String, throughput: 20 });

  const port = d.ports['smpp'];
  t.ok(port, 'the plain SMPP listener is up');
  const wrong = await connectPeer(port!);
  t.teardown(() => wrong.close());
  t.equal(
    (await wrong.request('bind_transceiver', { system_id: creds.systemId, password: 'nope' })).command_status,
    SMPP_STATUS.ESME_RBINDFAIL,
  );
  const peer = await connectPeer(port!);
  t.teardown(() => peer.close());
  t.equal(
    (await peer.request('bind_transceiver', { system_id: creds.systemId, password: creds.password })).command_status,
    0,
    'bound',
  );
  t.equal((await peer.request('enquire_link', {})).command_status, 0, 'enquire_link answered');

  const tlsPort = d.ports['smpp_tls'];
  t.ok(tlsPort, 'the SMPP TLS listener is up with the daemon certificate');
  const handshake = await new Promise<boolean>((resolve) => {
    const s = tlsConnect({ host: '127.0.0.1', port: tlsPort!, rejectUnauthorized: false }, () => {
      resolve(s.authorized || s.getPeerCertificate() !== undefined);
      s.end();
    });
    s.on('error', () => resolve(false));
  });
  t.ok(handshake, 'TLS handshake on the SMPP TLS port');
});
