import t from 'tap';
import tls from 'node:tls';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestDaemon } from '../helpers/daemon.js';
import { testCert } from '../telephony/sip/tls-client.js';

/** The fingerprint of the certificate a TLS listener presents to a new connection. */
async function presented(port: number): Promise<string> {
  const sock = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false });
  await new Promise<void>((resolve, reject) => sock.once('secureConnect', resolve).once('error', reject));
  const fp = sock.getPeerCertificate().fingerprint256;
  sock.destroy();
  return fp;
}

t.test(
  'reload (SIGHUP): new certificate on HTTPS and SIP over TLS, CA file re-read, an unreadable file refused',
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-reload-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const [first, second] = [await testCert(), await testCert()];
    const files = { key: join(dir, 'server.key'), cert: join(dir, 'server.crt'), ca: join(dir, 'supplier-ca.pem') };
    writeFileSync(files.key, first.key);
    writeFileSync(files.cert, first.cert);
    writeFileSync(files.ca, first.cert);
    const d = await startTestDaemon(t, {
      http: { tls_mode: 'files', tls_key: files.key, tls_cert: files.cert },
      sip: { tls_ca_file: files.ca },
    });
    const fp = (pem: string) => new X509Certificate(pem).fingerprint256;
    t.equal(await presented(d.ports['http']!), fp(first.cert));
    t.equal(await presented(d.ports['sip_tls']!), fp(first.cert));

    writeFileSync(files.key, second.key);
    writeFileSync(files.cert, second.cert);
    await d.reload();
    t.equal(await presented(d.ports['http']!), fp(second.cert), 'HTTPS presents the new certificate');
    t.equal(await presented(d.ports['sip_tls']!), fp(second.cert), 'SIP over TLS presents the new certificate');

    rmSync(files.ca);
    await t.rejects(d.reload(), { code: 'ENOENT' }, 'a CA file that cannot be read fails the reload');
    t.equal(await presented(d.ports['sip_tls']!), fp(second.cert), 'the listener keeps serving');
  },
);
