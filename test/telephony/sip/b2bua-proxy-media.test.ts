import t from 'tap';
import dgram from 'node:dgram';
import { createSipTransport } from '../../../src/telephony/sip/transport.js';
import { createSipStack } from '../../../src/telephony/sip/stack.js';
import { createTrunkB2bua, type CallEndedEvent, type TrunkCandidate } from '../../../src/telephony/sip/b2bua/index.js';
import { createMediaPool } from '../../../src/telephony/media/pool.js';
import { createCallMediaRelay } from '../../../src/telephony/media/call-relay.js';
import { systemClock } from '../../../src/platform/clock.js';
import { freePort, fill, fixture, sipp } from './sipp.js';
import { rawUdpPeer, silentLog, until } from './helpers.js';

const NUMBER = '12025550123';
const PORT_MIN = 47000 + (process.pid % 50) * 100;
const pool = createMediaPool({
  workers: 1,
  portMin: PORT_MIN,
  portMax: PORT_MIN + 99,
  bindAddress: '127.0.0.1',
  log: silentLog,
});
t.teardown(() => pool.close());

async function b2bua(t: { teardown(fn: () => unknown): void }, candidates: TrunkCandidate[], relayTimeoutMs: number) {
  const transport = await createSipTransport({ host: '127.0.0.1', port: 0, log: silentLog });
  const stack = createSipStack({ transport, log: silentLog });
  t.teardown(() => stack.close());
  let resolveEnded!: (e: CallEndedEvent) => void;
  const ended = new Promise<CallEndedEvent>((r) => (resolveEnded = r));
  createTrunkB2bua({
    stack,
    log: silentLog,
    clock: systemClock,
    realm: 'sip.exchange.test',
    nonceSecret: 'test-secret',
    policy: {
      resolveByIp: async () => ({ accountId: 'acc_operator' }),
      lookupSipUser: async () => null,
      planCall: async () => ({ callGroupId: 'cg-proxy', maxDurationSeconds: 3600, candidates }),
      onCallEnded: (e) => resolveEnded(e),
    },
    media: { openRelay: async () => createCallMediaRelay(await pool.openRelay({ timeoutMs: relayTimeoutMs })) },
  });
  return { port: transport.port, ended };
}

/** A caller's INVITE whose SDP names port 9: only a relay that latches the real source can answer it. */
const invite = (b2buaPort: number, sipPort: number, callId: string) => {
  const body = [
    'v=0',
    'o=alice 1 1 IN IP4 127.0.0.1',
    's=-',
    'c=IN IP4 127.0.0.1',
    't=0 0',
    'm=audio 9 RTP/AVP 0',
    'a=rtpmap:0 PCMU/8000',
    '',
  ].join('\r\n');
  return `INVITE sip:${NUMBER}@127.0.0.1:${b2buaPort} SIP/2.0
Via: SIP/2.0/UDP 127.0.0.1:${sipPort};branch=z9hG4bK-${callId}-1
From: "Alice" <sip:15550001111@127.0.0.1>;tag=caller1
To: <sip:${NUMBER}@127.0.0.1>
Call-ID: ${callId}
CSeq: 1 INVITE
Contact: <sip:15550001111@127.0.0.1:${sipPort}>
Max-Forwards: 70
Content-Type: application/sdp
Content-Length: ${Buffer.byteLength(body)}

${body}`;
};

const ack = (
  b2buaPort: number,
  sipPort: number,
  callId: string,
  toTag: string,
) => `ACK sip:${NUMBER}@127.0.0.1:${b2buaPort} SIP/2.0
Via: SIP/2.0/UDP 127.0.0.1:${sipPort};branch=z9hG4bK-${callId}-2
From: "Alice" <sip:15550001111@127.0.0.1>;tag=caller1
To: <sip:${NUMBER}@127.0.0.1>;tag=${toTag}
Call-ID: ${callId}
CSeq: 1 ACK
Max-Forwards: 70
Content-Length: 0

`;

t.test('proxy media: SDP both ways names the relay, RTP crosses it, and silence ends the call', async (t) => {
  // The supplier checks that the offer it got names a relay port (not the caller's port 9) and echoes RTP.
  const scenario = fill(fixture('uas-answer.xml'), { EXPECT_USER: NUMBER, BEFORE_RING: '' }).replace(
    'regexp="m=audio"',
    'regexp="m=audio [0-9]{4,5} RTP"',
  );
  const mediaPort = await freePort();
  const uas = await sipp(t, scenario, ['-rtp_echo', '-mp', String(mediaPort)]);
  const s = await b2bua(
    t,
    [
      {
        routeId: 'r-proxy',
        mediaMode: 'proxy',
        endpoints: [{ host: '127.0.0.1', port: uas.port, transport: 'udp', priority: 1, weight: 1 }],
      },
    ],
    1500,
  );
  const sip = await rawUdpPeer();
  t.teardown(() => sip.close());
  sip.send(invite(s.port, sip.port, 'proxy-1'), s.port);
  await until(() => sip.got.some((m) => m.startsWith('SIP/2.0 200')), 8000);
  const ok = sip.got.find((m) => m.startsWith('SIP/2.0 200')) ?? '';
  const toTag = /\r\nTo:[^\r]*;tag=([^;\r]+)/i.exec(ok)?.[1] ?? '';
  const relayPort = Number(/m=audio (\d+) /.exec(ok)?.[1]);
  t.match(ok, /c=IN IP4 127\.0\.0\.1/);
  t.ok(relayPort >= PORT_MIN && relayPort < PORT_MIN + 100, `the caller is told the relay's port (${relayPort})`);
  t.not(relayPort, mediaPort, "never the supplier's own media port");
  sip.send(ack(s.port, sip.port, 'proxy-1', toTag), s.port);

  const rtp = dgram.createSocket('udp4');
  t.teardown(() => new Promise<void>((r) => rtp.close(() => r())));
  const echoed: { data: string; port: number }[] = [];
  rtp.on('message', (m, r) => echoed.push({ data: m.subarray(12).toString(), port: r.port }));
  await new Promise<void>((r) => rtp.bind(0, '127.0.0.1', () => r()));
  const header = Buffer.from([0x80, 0x00, 0, 1, 0, 0, 0, 160, 0, 0, 0, 7]);
  for (let i = 0; i < 5; i++) {
    rtp.send(Buffer.concat([header, Buffer.from(`frame ${i}`)]), relayPort, '127.0.0.1');
    await new Promise((r) => setTimeout(r, 20));
  }
  await until(() => echoed.length >= 5, 5000);
  t.same(
    echoed.slice(0, 5).map((e) => e.data),
    ['frame 0', 'frame 1', 'frame 2', 'frame 3', 'frame 4'],
    'the supplier echoed every frame back through the relay',
  );
  t.ok(
    echoed.every((e) => e.port === relayPort),
    'from the port the caller sends to (symmetric RTP)',
  );
  const stats = await pool.stats();
  t.ok((stats[0]?.packetsRelayed ?? 0) >= 10, 'relayed both ways');

  // No more audio either way: the relay times out and the B2BUA hangs up both sides.
  const e = await s.ended;
  t.equal(e.hangupCause, 'media-timeout');
  t.equal(e.routeId, 'r-proxy');
  await until(() => sip.got.some((m) => m.startsWith('BYE ')), 5000);
  const code = await uas.exited;
  t.equal(
    code,
    0,
    'the supplier got its BYE',
    code === 0 ? {} : { diagnostic: true, output: uas.output().slice(-2000) },
  );
  let open = -1;
  for (let i = 0; i < 100 && open !== 0; i++) {
    open = (await pool.stats())[0]?.relays ?? -1;
    if (open !== 0) await new Promise((r) => setTimeout(r, 20));
  }
  t.equal(open, 0, 'the relay closed with the call');
});

t.test('a direct route passes SDP untouched and opens no relay', async (t) => {
  const mediaPort = await freePort();
  const uas = await sipp(
    t,
    fill(fixture('uas-answer.xml'), { EXPECT_USER: NUMBER, BEFORE_RING: '' }).replace(
      'regexp="m=audio"',
      'regexp="m=audio 9 RTP"',
    ),
    ['-mp', String(mediaPort)],
  );
  const s = await b2bua(
    t,
    [
      {
        routeId: 'r-direct',
        endpoints: [{ host: '127.0.0.1', port: uas.port, transport: 'udp', priority: 1, weight: 1 }],
      },
    ],
    1500,
  );
  const sip = await rawUdpPeer();
  t.teardown(() => sip.close());
  sip.send(invite(s.port, sip.port, 'direct-1'), s.port);
  await until(() => sip.got.some((m) => m.startsWith('SIP/2.0 200')), 8000);
  const ok = sip.got.find((m) => m.startsWith('SIP/2.0 200')) ?? '';
  t.match(ok, new RegExp(`m=audio ${mediaPort} RTP`), "the caller gets the supplier's own media port");
  t.equal((await pool.stats())[0]?.relays, 0, 'no relay');
  const toTag = /\r\nTo:[^\r]*;tag=([^;\r]+)/i.exec(ok)?.[1] ?? '';
  sip.send(ack(s.port, sip.port, 'direct-1', toTag), s.port);
  sip.send(
    `BYE sip:${NUMBER}@127.0.0.1:${s.port} SIP/2.0
Via: SIP/2.0/UDP 127.0.0.1:${sip.port};branch=z9hG4bK-direct-1-3
From: "Alice" <sip:15550001111@127.0.0.1>;tag=caller1
To: <sip:${NUMBER}@127.0.0.1>;tag=${toTag}
Call-ID: direct-1
CSeq: 2 BYE
Max-Forwards: 70
Content-Length: 0

`,
    s.port,
  );
  t.equal((await s.ended).hangupCause, 'caller-bye');
  t.equal(await uas.exited, 0);
});

t.test('proxy media: a re-INVITE (hold) is rewritten both ways, and holding stops the media timeout', async (t) => {
  // Only a port of this file's relay range passes: the ends' own media ports lie elsewhere.
  const relayPort = `${String(PORT_MIN).slice(0, 3)}[0-9][0-9]`;
  const uasScenario = fill(fixture('uas-reinvite.xml'), { EXPECT_USER: NUMBER })
    .replace('regexp="m=audio"', `regexp="m=audio ${relayPort} RTP"`)
    .replace('regexp="a=recvonly"', `regexp="m=audio ${relayPort} RTP.*a=recvonly"`);
  const uas = await sipp(t, uasScenario, []);
  // A media timeout shorter than the call: only holding the call keeps it up.
  const s = await b2bua(
    t,
    [
      {
        routeId: 'r-proxy',
        mediaMode: 'proxy',
        endpoints: [{ host: '127.0.0.1', port: uas.port, transport: 'udp', priority: 1, weight: 1 }],
      },
    ],
    700,
  );
  const text = fixture('uac-auth.xml').replace('      {{AUTH_HEADER}}\n', '');
  const scenario = fill(text, {
    CHALLENGE_BLOCK: '',
    AUTH_HEADER: '',
    TAIL: fill(fixture('uac-tail-reinvite.xml'), { HOLD_MS: '2000', FINAL_CHECK: '.' }).replace(
      'regexp="a=sendonly"',
      `regexp="m=audio ${relayPort} RTP.*a=sendonly"`,
    ),
  });
  const caller = await sipp(t, scenario, [`127.0.0.1:${s.port}`, '-s', NUMBER]);
  const code = await caller.exited;
  t.equal(
    code,
    0,
    'the caller got the hold through the relay and answered it',
    code === 0 ? {} : { diagnostic: true, output: caller.output().slice(-2500) },
  );
  const uasCode = await uas.exited;
  t.equal(
    uasCode,
    0,
    "the supplier got the caller's answer through the relay",
    uasCode === 0 ? {} : { diagnostic: true, output: uas.output().slice(-2500) },
  );
  if (code !== 0 || uasCode !== 0) return;
  const e = await s.ended;
  t.equal(e.hangupCause, 'caller-bye', 'on hold with no audio past the media timeout: not cut off');
});

t.test(
  "proxy media: a supplier re-INVITE without SDP gets the caller's offer and passes its answer in the ACK, both through the relay",
  async (t) => {
    const relayPort = `${String(PORT_MIN).slice(0, 3)}[0-9][0-9]`;
    const uasScenario = fill(fixture('uas-reinvite-late.xml'), { EXPECT_USER: NUMBER }).replace(
      '<ereg regexp="m=audio" search_in="body" check_it="true" assign_to="answer"/>',
      `<ereg regexp="m=audio ${relayPort} RTP" search_in="body" check_it="true" assign_to="answer"/>`,
    );
    const uas = await sipp(t, uasScenario, []);
    const s = await b2bua(
      t,
      [
        {
          routeId: 'r-proxy',
          mediaMode: 'proxy',
          endpoints: [{ host: '127.0.0.1', port: uas.port, transport: 'udp', priority: 1, weight: 1 }],
        },
      ],
      5000,
    );
    const text = fixture('uac-auth.xml').replace('      {{AUTH_HEADER}}\n', '');
    const scenario = fill(text, {
      CHALLENGE_BLOCK: '',
      AUTH_HEADER: '',
      TAIL: fill(fixture('uac-tail-reinvite-late.xml'), {
        HOLD_MS: '100',
        FINAL_CHECK: '.',
        ANSWER_CHECK: `m=audio ${relayPort} RTP.*a=sendonly`,
      }),
    });
    const caller = await sipp(t, scenario, [`127.0.0.1:${s.port}`, '-s', NUMBER]);
    const code = await caller.exited;
    t.equal(
      code,
      0,
      "the caller got the supplier's answer, through the relay, in the ACK",
      code === 0 ? {} : { diagnostic: true, output: caller.output().slice(-2500) },
    );
    const uasCode = await uas.exited;
    t.equal(
      uasCode,
      0,
      "the supplier got the caller's offer through the relay",
      uasCode === 0 ? {} : { diagnostic: true, output: uas.output().slice(-2500) },
    );
    t.equal((await s.ended).hangupCause, 'caller-bye');
  },
);
