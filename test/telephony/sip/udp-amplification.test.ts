import dgram from 'node:dgram';
import t from 'tap';
import { startTestDaemon } from '../../helpers/daemon.js';
import { until } from './helpers.js';

/** A UDP endpoint on its own loopback address (each 127.0.0.x is a separate source to the daemon). */
async function udpFrom(address: string) {
  const sock = dgram.createSocket('udp4');
  const got: string[] = [];
  sock.on('message', (m) => got.push(m.toString('latin1')));
  await new Promise<void>((r) => sock.bind(0, address, () => r()));
  const port = sock.address().port;
  return {
    got,
    send: (text: string, to: number) => sock.send(Buffer.from(text.replace(/\r?\n/g, '\r\n')), to, '127.0.0.1'),
    invite: (
      callId: string,
      branch: string,
      sipPort: number,
      extra = '',
    ) => `INVITE sip:+14155550100@127.0.0.1:${sipPort} SIP/2.0
Via: SIP/2.0/UDP ${address}:${port};branch=z9hG4bK${branch};rport
From: <sip:caller@${address}>;tag=from-${callId}
To: <sip:+14155550100@127.0.0.1>
Call-ID: ${callId}
CSeq: 1 INVITE
Max-Forwards: 70
${extra}Content-Length: 0

`,
    ack: (
      callId: string,
      branch: string,
      toTag: string,
      sipPort: number,
    ) => `ACK sip:+14155550100@127.0.0.1:${sipPort} SIP/2.0
Via: SIP/2.0/UDP ${address}:${port};branch=z9hG4bK${branch};rport
From: <sip:caller@${address}>;tag=from-${callId}
To: <sip:+14155550100@127.0.0.1>;tag=${toTag}
Call-ID: ${callId}
CSeq: 1 ACK
Max-Forwards: 70
Content-Length: 0

`,
    close: () => new Promise<void>((r) => sock.close(() => r())),
  };
}

const challenges = (got: string[], callId: string) =>
  got.filter((m) => /^SIP\/2\.0 401 /.test(m) && m.includes(`Call-ID: ${callId}\r\n`));

t.test('UDP INVITE without auth from an unverified source: one 401, never retransmitted', async (t) => {
  // A small T1 shortens Timer G's schedule (T1, 2T1, 4T1, ... up to 64*T1).
  const d = await startTestDaemon(t, { sip: { t1_ms: 20 } });
  const sipPort = d.ports['sip']!;
  const known = await udpFrom('127.0.0.31');
  const fresh = await udpFrom('127.0.0.32');
  t.teardown(async () => {
    await known.close();
    await fresh.close();
  });

  // The control source completes one challenge round: its ACK echoes our To tag.
  known.send(known.invite('k1', 'k1a', sipPort), sipPort);
  await until(() => challenges(known.got, 'k1').length >= 1, 15_000);
  const toTag = /\r\nTo: [^\r]*;tag=([^;\r]+)/i.exec(challenges(known.got, 'k1')[0]!)?.[1];
  t.ok(toTag, 'the 401 carries our To tag');
  known.send(known.ack('k1', 'k1a', toTag!, sipPort), sipPort);

  // Now both ask at once. The verified source's 401 is retransmitted on Timer G; wait for three
  // retransmissions there, by which time the same timers would have fired for the fresh source.
  known.send(known.invite('k2', 'k2a', sipPort), sipPort);
  fresh.send(fresh.invite('f1', 'f1a', sipPort), sipPort);
  await until(() => challenges(known.got, 'k2').length >= 4, 15_000);
  await until(() => challenges(fresh.got, 'f1').length >= 1, 15_000);
  t.equal(challenges(fresh.got, 'f1').length, 1, 'exactly one 401 to the unverified source');
  const toFresh = fresh.got.filter((m) => m.includes('Call-ID: f1\r\n'));
  t.ok(toFresh.length <= 2, `at most the 401 and a 100 Trying in all (got ${toFresh.length})`);

  // Its own retransmitted INVITE still fetches the challenge (Timer A keeps the exchange reliable).
  fresh.send(fresh.invite('f1', 'f1a', sipPort), sipPort);
  await until(() => challenges(fresh.got, 'f1').length === 2, 15_000);
  t.pass('a retransmitted INVITE is answered from the transaction');
});
