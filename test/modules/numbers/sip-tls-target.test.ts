/**
 * A number pointed at a SIP target over TLS, delivered to a real TLS SIP server: Kamailio with its
 * TLS module, holding a certificate of a private CA the daemon is told to trust, relays the call to
 * the renter's sipp endpoint. The call completes, is billed at the inbound rate, and its BYE
 * follows the route Kamailio recorded.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import * as trunk from '../sip-trunks/world.js';
import { freePort } from '../../telephony/sip/sipp.js';
import { testCert } from '../../telephony/sip/tls-client.js';
import { rentedNumber } from './rented.js';

const KAMAILIO = '/usr/sbin/kamailio';
const TLS_MODULE = '/usr/lib/x86_64-linux-gnu/kamailio/modules/tls.so';

/** A stateful relay: TLS in, everything to the renter's endpoint over UDP, in-dialog by its route. */
function relayConfig(dir: string, tlsPort: number, udpPort: number, uasPort: number): string {
  return `#!KAMAILIO
debug=2
log_stderror=yes
children=1
tcp_children=1
enable_tls=yes
listen=tls:127.0.0.1:${tlsPort}
listen=udp:127.0.0.1:${udpPort}
loadmodule "tls.so"
loadmodule "sl.so"
loadmodule "tm.so"
loadmodule "rr.so"
loadmodule "pv.so"
loadmodule "siputils.so"
loadmodule "textops.so"
modparam("tls", "config", "${join(dir, 'tls.cfg')}")
request_route {
  if (has_totag()) {
    if (loose_route()) { t_relay(); exit; }
    if (is_method("ACK")) { if (t_check_trans()) { t_relay(); } exit; }
    sl_send_reply("404", "Not here");
    exit;
  }
  if (is_method("OPTIONS")) { sl_send_reply("200", "OK"); exit; }
  if (is_method("CANCEL")) { if (t_check_trans()) { t_relay(); } exit; }
  record_route();
  $du = "sip:127.0.0.1:${uasPort}";
  if (!t_relay()) { sl_reply_error(); }
}
`;
}

t.test(
  'an inbound call is delivered to a number target over TLS, to a real TLS SIP server',
  {
    skip:
      existsSync(KAMAILIO) && existsSync(TLS_MODULE)
        ? false
        : 'kamailio with its TLS module is not installed (test/apt-packages.txt installs both)',
  },
  async (t) => {
    const cert = await testCert();
    const dir = mkdtempSync(join(tmpdir(), 'svc-number-tls-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, 'cert.pem'), cert.cert);
    writeFileSync(join(dir, 'key.pem'), cert.key);
    writeFileSync(
      join(dir, 'tls.cfg'),
      [
        '[server:default]',
        'method = TLSv1.2+',
        'verify_certificate = no',
        'require_certificate = no',
        `private_key = ${join(dir, 'key.pem')}`,
        `certificate = ${join(dir, 'cert.pem')}`,
        '',
        '[client:default]',
        'method = TLSv1.2+',
        'verify_certificate = no',
        'require_certificate = no',
        '',
      ].join('\n'),
    );
    const caFile = join(dir, 'ca.pem');
    writeFileSync(caFile, cert.cert);

    const w = await trunk.createWorld(t, { sip: { tls_ca_file: caFile } });
    const did = await rentedNumber(w, t, { first: 5558101, inboundRate: '0.012000' });
    const uas = await trunk.uasAnswer(t, did.digits, 'u1');

    const tlsPort = await freePort();
    const udpPort = await freePort();
    writeFileSync(join(dir, 'relay.cfg'), relayConfig(dir, tlsPort, udpPort, uas.port));
    let log = '';
    const kam = spawn(
      KAMAILIO,
      ['-f', 'relay.cfg', '-DD', '-E', '-m', '64', '-M', '8', '-Y', dir, '-P', join(dir, 'kamailio.pid')],
      { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    kam.stdout.on('data', (d: Buffer) => (log += d.toString()));
    kam.stderr.on('data', (d: Buffer) => (log += d.toString()));
    const exited = new Promise<void>((r) => kam.once('exit', () => r()));
    t.teardown(async () => {
      kam.kill('SIGTERM');
      await exited;
    });

    const target = `sip:127.0.0.1:${tlsPort};transport=tls`;
    const set = await w.api('PUT', `/dids/${did.id}/routing`, w.operator.token, { pointMode: 'sip', pointsTo: target });
    t.equal(set.status, 200, set.text);
    t.equal(set.body.data.pointsTo, target, 'kept as written');
    // Kamailio answers OPTIONS itself: reachable once it listens and the daemon trusts its certificate.
    const checked = await trunk
      .eventually(async () => {
        const r = await w.api('POST', `/dids/${did.id}/check-endpoint`, w.operator.token, {});
        return r.status === 200 && r.body.data.endpointReachable === true ? r : undefined;
      }, 30_000)
      .catch((e: unknown) => {
        t.comment(log.slice(-3000));
        throw e;
      });
    t.equal(checked.body.data.endpointReachable, true, 'the OPTIONS check over TLS is answered');

    const run = await trunk.uac(
      t,
      w.sipPort,
      trunk.uacScenario('uac-tail-answer.xml', { HOLD_MS: '300' }, false),
      did.digits,
    );
    await trunk.expectExit(t, run, 'the seller trunk (UDP) completed the call');
    await trunk.expectExit(t, uas, 'the renter endpoint behind the TLS server answered and got the BYE');
    const call = await trunk.eventually(async () => {
      const [c] = await w.d.sql<{ id: string; status: string; cost: string }[]>`
        select id, status, cost::text from calls where account_id = ${w.operator.accountId} and ended_at is not null`;
      return c;
    });
    t.match(call, { status: 'completed', cost: '0.012000' });
    const [cdr] = await w.d.sql<{ direction: string; buyerCost: string; sellerCredit: string }[]>`
      select direction, buyer_cost::text, seller_credit::text from cdrs where call_group_id = ${call.id}`;
    t.match(cdr, { direction: 'inbound', buyerCost: '0.012000', sellerCredit: '0.010800' });
  },
);
