/**
 * config/kamailio/dispatcher.cfg as shipped, in front of two daemons on one database and Redis:
 * a customer's calls through the proxy spread over both daemons (by Call-ID hash, so a call's
 * challenge and answer meet one daemon), record-routed, completed and billed exactly once.
 */
import { spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Decimal } from 'decimal.js';
import t from 'tap';
import { checkInvariants } from '../ledger/helpers.js';
import { childDaemonConfig, spawnChildDaemon } from '../modules/sip-trunks/child-daemon.js';
import { createWorld, eventually, expectExit, uacScenario } from '../modules/sip-trunks/world.js';
import { fill, fixture, freePort, sipp } from '../telephony/sip/sipp.js';

const KAMAILIO = '/usr/sbin/kamailio';
const CONFIG = new URL('../../config/kamailio/dispatcher.cfg', import.meta.url);
const CALLS = 4;

/** Resolves once something on `port` answers an OPTIONS sent to it over UDP. */
async function answersOptions(port: number, ms: number): Promise<void> {
  const sock = dgram.createSocket('udp4');
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
  const own = sock.address().port;
  let answered = false;
  sock.on('message', (m) => (answered ||= m.toString('latin1').startsWith('SIP/2.0 200')));
  try {
    const until = Date.now() + ms;
    for (let i = 0; !answered; i++) {
      if (Date.now() > until) throw new Error(`nothing answered OPTIONS on ${port}`);
      const msg = [
        `OPTIONS sip:127.0.0.1:${port} SIP/2.0`,
        `Via: SIP/2.0/UDP 127.0.0.1:${own};branch=z9hG4bK-probe${i}`,
        'Max-Forwards: 70',
        `From: <sip:probe@127.0.0.1:${own}>;tag=p${i}`,
        `To: <sip:127.0.0.1:${port}>`,
        `Call-ID: probe-${i}-${own}`,
        'CSeq: 1 OPTIONS',
        'Content-Length: 0',
        '',
        '',
      ].join('\r\n');
      sock.send(msg, port, '127.0.0.1');
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    sock.close();
  }
}

t.test(
  'Kamailio dispatcher in front of two daemons: calls spread, authenticated and billed once',
  { skip: existsSync(KAMAILIO) ? false : 'kamailio is not installed (test/apt-packages.txt installs it)' },
  async (t) => {
    const redis = { redis: { url: 'redis://127.0.0.1:6379' } };
    const w = await createWorld(t, redis);
    const b = await spawnChildDaemon(t, childDaemonConfig(t, w.d.config.database.url, redis));

    const dir = mkdtempSync(join(tmpdir(), 'svc-kamailio-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const port = await freePort();
    writeFileSync(join(dir, 'daemons.list'), `1 sip:127.0.0.1:${w.sipPort}\n1 sip:127.0.0.1:${b.ports['sip']}\n`);
    // The shipped file with only its three site values changed, as an operator installs it.
    const cfg = readFileSync(CONFIG, 'utf8')
      .replace('!udp:0.0.0.0:5060!', `!udp:127.0.0.1:${port}!`)
      .replace('!tcp:0.0.0.0:5060!', `!tcp:127.0.0.1:${port}!`)
      .replace('!/etc/kamailio/svc-exchange-daemons.list!', `!${join(dir, 'daemons.list')}!`)
      .replace('children=8', 'children=2')
      .replace('tcp_children=4', 'tcp_children=1');
    writeFileSync(join(dir, 'dispatcher.cfg'), cfg);
    let log = '';
    const kam = spawn(
      KAMAILIO,
      ['-f', 'dispatcher.cfg', '-DD', '-E', '-m', '64', '-M', '8', '-Y', dir, '-P', join(dir, 'kamailio.pid')],
      { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    kam.stdout.on('data', (d: Buffer) => (log += d.toString()));
    kam.stderr.on('data', (d: Buffer) => (log += d.toString()));
    const gone = new Promise((r) => kam.once('exit', r));
    t.teardown(async () => {
      if (kam.exitCode === null && kam.signalCode === null) kam.kill('SIGTERM');
      await gone;
    });
    await answersOptions(port, 10_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${log.slice(-2000)}`);
    });

    const number = '446500000001';
    const uas = await sipp(t, fill(fixture('uas-answer.xml'), { EXPECT_USER: number, BEFORE_RING: '' }), ['-t', 'u1'], {
      calls: CALLS,
    });
    await w.route({ port: uas.port, prefix: '4465', rate: '0.013700' });
    const sub = await w.sub({ fund: '5.000000', markupPct: '0' });
    const caller = await sipp(
      t,
      uacScenario('uac-tail-answer-routed.xml', { HOLD_MS: '200' }),
      [
        `127.0.0.1:${port}`,
        '-s',
        number,
        '-au',
        sub.sipUsername,
        '-ap',
        sub.sipPassword,
        '-t',
        'u1',
        '-l',
        '1',
        // Call-IDs fixed by call number: the dispatcher hashes them, so which daemon takes which is repeatable.
        '-cid_str',
        'call-%u-kamailio@svc-exchange.test',
      ],
      { calls: CALLS, timeout: '30s' },
    );
    await expectExit(t, caller, `${CALLS} calls through the proxy answered and hung up`);
    await expectExit(t, uas, `the supplier took ${CALLS} calls`);

    const calls = await eventually(async () => {
      const rows = await w.d.sql<{ ownerNode: string; status: string; cost: string; endedAt: Date | null }[]>`
        select owner_node, status, cost::text, ended_at from calls where account_id = ${sub.id}`;
      return rows.length === CALLS && rows.every((r) => r.endedAt) ? rows : null;
    }, 10_000);
    t.ok(
      calls.every((c) => c.status === 'completed'),
      JSON.stringify(calls.map((c) => c.status)),
    );
    t.equal(
      new Set(calls.map((c) => c.ownerNode)).size,
      2,
      `both daemons carried calls: ${calls.map((c) => c.ownerNode.slice(0, 4)).join(',')}`,
    );
    const spent = calls.reduce((s, c) => s.plus(c.cost), new Decimal(0));
    t.ok(spent.gt(0));
    const bal = await w.d.modules.services.ledger.balanceOf(sub.id);
    t.same([bal.balance, bal.held], [new Decimal('5').minus(spent).toFixed(6), '0.000000'], 'each call billed once');
    await checkInvariants(t as never, w.d.sql);
  },
);
