import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import t from 'tap';
import { systemLookup, type Lookup } from '../../../src/platform/outbound-guard.js';
import { createSipStack, createSipTransport } from '../../../src/telephony/sip/index.js';
import { rawUdpPeer } from '../../telephony/sip/helpers.js';
import { testCert } from '../../telephony/sip/tls-client.js';
import { createWorld, eventually, rawInvite as invite } from './world.js';

/**
 * A TLS supplier endpoint saved by name: the outbound guard resolves the name once and checks the
 * answer, and the TLS connection must go to that checked address (the name kept for SNI and the
 * certificate check), never to a second resolution that a rebinding name could answer differently.
 */
t.test(
  'SIP over TLS to a supplier name connects to the checked address, and a refused answer gets nothing',
  async (t) => {
    const name = 'sip.supplier.test';
    // The test's resolver: the system's resolver has never heard of this name.
    const answers = new Map([[name, '127.0.0.5']]);
    const lookup: Lookup = async (host) => {
      const a = answers.get(host);
      return a ? [{ address: a, family: 4 }] : systemLookup(host);
    };
    // A certificate for the name only: a check against the address would refuse it.
    const cert = await testCert(name);
    const dir = mkdtempSync(join(tmpdir(), 'svc-sip-pin-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const caFile = join(dir, 'supplier-ca.pem');
    writeFileSync(caFile, cert.cert);
    const w = await createWorld(t, { sip: { tls_ca_file: caFile } }, { lookup });

    // The supplier listens on 127.0.0.5 only: the pinned address, nothing on 127.0.0.1.
    const log = pino({ level: 'silent' });
    const far = createSipStack({
      transport: await createSipTransport({ host: '127.0.0.5', port: 0, log, tls: { port: 0, ...cert } }),
      log,
    });
    t.teardown(() => far.close());
    const invites: Array<{ transport: string }> = [];
    far.onRequest((req, tx, src) => {
      if (req.method === 'INVITE') {
        invites.push({ transport: src.transport });
        tx.reply(486, 'Busy Here', { toTag: far.newTag() });
      } else tx.reply(200, 'OK');
    });
    await w.route({ host: name, port: far.transport.tlsPort!, prefix: '441192', rate: '0.013700', transport: 'tls' });
    t.equal((await w.api('POST', '/sip/trunk-ips', w.operator.token, { ip: '127.0.0.1' })).status, 201);

    const caller = await rawUdpPeer();
    t.teardown(() => caller.close());
    caller.send(invite(caller.port, w.sipPort, '441192000001', 'pin-1'), w.sipPort);
    const first = await eventually(async () => caller.got.find((m) => /^SIP\/2\.0 [3-6]\d\d/.test(m)), 15_000);
    t.match(first, /^SIP\/2\.0 486/, "the supplier's answer came back through the TLS leg");
    t.match(
      invites,
      [{ transport: 'tls' }],
      'one INVITE reached the supplier over TLS at the checked address, its certificate checked by name',
    );
    t.equal(invites.length, 1);

    // The name now answers with the cloud metadata address: refused before any connection.
    answers.set(name, '169.254.169.254');
    const before = caller.got.length;
    caller.send(invite(caller.port, w.sipPort, '441192000002', 'pin-2'), w.sipPort);
    const second = await eventually(
      async () => caller.got.slice(before).find((m) => /^SIP\/2\.0 [3-6]\d\d/.test(m) && m.includes('pin-2')),
      15_000,
    );
    t.match(second, /^SIP\/2\.0 [45]\d\d/, 'the call fails: the endpoint is left out of routing');
    t.equal(invites.length, 1, 'no INVITE was sent for the refused answer');
  },
);
