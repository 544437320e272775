import dgram from 'node:dgram';
import t from 'tap';
import { ENGINES, startEngine } from '../api-calls/engines.js';
import type { PrivateAsterisk } from '../../helpers/asterisk.js';
import { rawUdpPeer, until } from '../../telephony/sip/helpers.js';
import { fill, fixture, freePort, sipp } from '../../telephony/sip/sipp.js';
import { createWorld, eventually, expectExit, uasFinal } from './world.js';

/**
 * A media-anchored trunk call (a route in proxy media mode) on each engine: the native RTP relay,
 * or two Asterisk channels in one ARI bridge. The first route refuses (503), the call fails over to
 * the second; the caller's audio reaches the supplier, which echoes it, and comes back to the
 * caller from the anchor it was told of; the call bills to the sixth decimal the same way.
 */

const NUMBER = '441230000001';

function invite(port: number, callerSip: number, callerRtp: number, callId: string): string {
  const body = [
    'v=0',
    'o=alice 1 1 IN IP4 127.0.0.1',
    's=-',
    'c=IN IP4 127.0.0.1',
    't=0 0',
    `m=audio ${callerRtp} RTP/AVP 0 101`,
    'a=rtpmap:0 PCMU/8000',
    'a=rtpmap:101 telephone-event/8000',
    'a=fmtp:101 0-16',
    'a=sendrecv',
    '',
  ].join('\r\n');
  return [
    `INVITE sip:${NUMBER}@127.0.0.1:${port} SIP/2.0`,
    `Via: SIP/2.0/UDP 127.0.0.1:${callerSip};branch=z9hG4bK-${callId}-1;rport`,
    'Max-Forwards: 70',
    `From: "Alice" <sip:15550001111@127.0.0.1:${callerSip}>;tag=${callId}`,
    `To: <sip:${NUMBER}@127.0.0.1:${port}>`,
    `Call-ID: ${callId}@test`,
    'CSeq: 1 INVITE',
    `Contact: <sip:alice@127.0.0.1:${callerSip}>`,
    'Content-Type: application/sdp',
    `Content-Length: ${Buffer.byteLength(body)}`,
    '',
    body,
  ].join('\r\n');
}

function inDialog(method: 'ACK' | 'BYE', port: number, callerSip: number, callId: string, toTag: string, cseq: number) {
  return [
    `${method} sip:${NUMBER}@127.0.0.1:${port} SIP/2.0`,
    `Via: SIP/2.0/UDP 127.0.0.1:${callerSip};branch=z9hG4bK-${callId}-${method}${cseq};rport`,
    'Max-Forwards: 70',
    `From: "Alice" <sip:15550001111@127.0.0.1:${callerSip}>;tag=${callId}`,
    `To: <sip:${NUMBER}@127.0.0.1:${port}>;tag=${toTag}`,
    `Call-ID: ${callId}@test`,
    `CSeq: ${cseq} ${method}`,
    'Content-Length: 0',
    '',
    '',
  ].join('\r\n');
}

const ari = (a: PrivateAsterisk, path: string, method = 'GET'): Promise<Response> =>
  fetch(`${a.ariUrl}/ari${path}`, {
    method,
    headers: { authorization: `Basic ${Buffer.from(`${a.username}:${a.password}`).toString('base64')}` },
  });

async function bridges(a: PrivateAsterisk): Promise<{ id: string; channels: string[] }[]> {
  return (await (await ari(a, '/bridges')).json()) as { id: string; channels: string[] }[];
}

// The engines' cases share nothing (each its own daemon, database and peers; RTP binds skip a port
// in use): side by side, the file takes about one engine's time instead of the sum.
t.jobs = ENGINES.length;
for (const engine of ENGINES) {
  t.test(
    `a media-anchored trunk call fails over, carries audio both ways and bills (${engine.name} engine)`,
    {
      skip: engine.skip,
    },
    async (t) => {
      const { asterisk, host } = await startEngine(t, engine.name);
      // A bridge of our application left by a process that died mid-call: nobody owns it any more.
      const stray = `${host?.app}-svcx${'0'.repeat(24)}`;
      if (host) t.equal((await ari(host, `/bridges?type=mixing&bridgeId=${stray}`, 'POST')).status, 200);
      const w = await createWorld(t, asterisk ? { media: { engine: 'asterisk' }, asterisk } : {});
      t.equal((await w.api('POST', '/sip/trunk-ips', w.operator.token, { ip: '127.0.0.1' })).status, 201);

      // Route 1 (cheaper, tried first) refuses; route 2 answers and echoes every RTP packet it gets.
      const refusing = await uasFinal(t, 503, 'Service Unavailable');
      await w.route({ port: refusing.port, prefix: '4412', rate: '0.010000', mediaMode: 'proxy' });
      const supplierMedia = await freePort();
      const answering = await sipp(t, fill(fixture('uas-answer.xml'), { EXPECT_USER: NUMBER, BEFORE_RING: '' }), [
        '-rtp_echo',
        '-mp',
        String(supplierMedia),
      ]);
      const { routeId } = await w.route({ port: answering.port, prefix: '4412', rate: '0.013700', mediaMode: 'proxy' });

      const rtp = dgram.createSocket('udp4');
      t.teardown(() => new Promise<void>((r) => rtp.close(() => r())));
      await new Promise<void>((r) => rtp.bind(0, '127.0.0.1', () => r()));
      const echoed: { payload: string; port: number }[] = [];
      rtp.on('message', (m, from) => echoed.push({ payload: m.subarray(12).toString('latin1'), port: from.port }));

      const sip = await rawUdpPeer();
      t.teardown(() => sip.close());
      const callId = `anchor-${engine.name}-${process.pid}`;
      sip.send(invite(w.sipPort, sip.port, rtp.address().port, callId), w.sipPort);
      await until(() => sip.got.some((m) => m.startsWith('SIP/2.0 200')), 15_000);
      const ok = sip.got.find((m) => m.startsWith('SIP/2.0 200')) ?? '';
      const toTag = /\r\nTo:[^\r]*;tag=([^;\r]+)/i.exec(ok)?.[1] ?? '';
      const anchorPort = Number(/m=audio (\d+) /.exec(ok)?.[1]);
      sip.send(inDialog('ACK', w.sipPort, sip.port, callId, toTag, 1), w.sipPort);
      t.ok(anchorPort > 0, `the caller is told the anchor's port (${anchorPort})`);
      t.not(anchorPort, supplierMedia, "never the supplier's own media port");

      // µ-law frames of 20 ms, each payload distinct, until the echo has come back a second's worth.
      const sent = new Set<string>();
      let seq = 0;
      const header = (n: number): Buffer => {
        const h = Buffer.alloc(12);
        h.writeUInt8(0x80, 0);
        h.writeUInt8(0, 1);
        h.writeUInt16BE(n & 0xffff, 2);
        h.writeUInt32BE(n * 160, 4);
        h.writeUInt32BE(0x5eed, 8);
        return h;
      };
      const pump = setInterval(() => {
        const payload = Buffer.alloc(160, 0x7f);
        payload.write(`frame ${seq} of ${callId}`, 'latin1');
        sent.add(payload.toString('latin1'));
        rtp.send(Buffer.concat([header(seq), payload]), anchorPort, '127.0.0.1');
        seq++;
      }, 20);
      t.teardown(() => clearInterval(pump));
      if (host) {
        // Both legs of the call sit in one bridge of the anchoring Asterisk.
        const bridge = await eventually(
          async () => (await bridges(host)).find((b) => b.id !== stray && b.channels.length === 2),
          10_000,
        );
        t.ok(bridge, 'Asterisk bridges the caller-facing and the supplier-facing channel');
      }
      await until(() => echoed.length >= 50, 15_000);
      clearInterval(pump);
      t.ok(
        echoed.every((e) => sent.has(e.payload)),
        'every frame the caller got back is one it sent, unaltered: caller → anchor → supplier → anchor → caller',
      );
      t.ok(
        echoed.every((e) => e.port === anchorPort),
        'from the port the caller sends to (symmetric RTP)',
      );

      sip.send(inDialog('BYE', w.sipPort, sip.port, callId, toTag, 2), w.sipPort);
      await until(() => sip.got.some((m) => m.startsWith('SIP/2.0 200') && m.includes('CSeq: 2 BYE')), 5000);
      await expectExit(t, refusing, 'the first supplier refused');
      await expectExit(t, answering, 'the second supplier answered, echoed and got the BYE');

      const call = await eventually(async () => {
        const [c] = await w.d.sql<{ status: string; hangupCause: string; cost: string; routeId: string }[]>`
        select status, hangup_cause, cost::text, route_id from calls
        where account_id = ${w.operator.accountId} and ended_at is not null`;
        return c;
      }, 10_000);
      t.equal(call.status, 'completed');
      t.equal(call.hangupCause, 'caller-bye');
      t.equal(call.routeId, routeId, 'connected on the second route');
      t.equal(call.cost, '0.001570', '6 s at the buyer price, as on a direct route');
      const cdrs = await eventually(async () => {
        const rows = await w.d.sql<{ status: string; mediaMode: string }[]>`
        select status, media_mode from cdrs where account_id = ${w.operator.accountId} order by created_at, id`;
        return rows.length === 2 ? rows : null;
      }, 10_000);
      t.same(
        cdrs.map((c) => [c.status, c.mediaMode]),
        [
          ['failed', 'proxy'],
          ['completed', 'proxy'],
        ],
        'a CDR per attempt, both with relayed media',
      );
      if (host) {
        await eventually(async () => (await bridges(host)).length === 0, 5000);
        t.pass("the call's bridge is gone with it, and the stray one was destroyed when the farm connected");
      }
    },
  );
}
