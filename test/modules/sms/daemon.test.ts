import t from 'tap';
import { SMPP_STATUS } from '../../../src/messaging/index.js';
import { startTestDaemon } from '../../helpers/daemon.js';
import { connectPeer } from '../../messaging/smpp-peer.js';

/** The whole daemon: the SMS module's start() opens the customer SMPP listener on [smpp] port (0 here). */
t.test('the daemon listens for customer SMPP binds', async (t) => {
  const d = await startTestDaemon(t);
  const port = d.ports['smpp'];
  t.ok(port && port > 0, 'smpp port reported');
  const acc = await d.modules.services.accounts.createAccount({ email: 'smpp-daemon@example.test', password: 'correct horse battery' });
  const creds = await d.modules.services.smppCredentials.issue(acc.id);
  const p = await connectPeer(port!);
  t.teardown(() => p.close());
  t.equal((await p.request('submit_sm', { destination_addr: '12025550123', short_message: Buffer.from('x') })).command_status, SMPP_STATUS.ESME_RINVBNDSTS, 'no submit before bind');
  t.equal((await p.request('bind_transceiver', { system_id: creds.systemId, password: creds.password })).command_status, 0);
  const r = await p.request('submit_sm', { source_addr: 'MyShop', destination_addr: '12025550123', short_message: Buffer.from('x') });
  t.equal(r.command_status, SMPP_STATUS.ESME_RINVDSTADR, 'no SMS route bought: destination not allowed');
  t.equal((await p.request('unbind')).command_status, 0);
});
