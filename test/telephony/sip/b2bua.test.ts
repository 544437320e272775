import t from 'tap';
import pino, { type Logger } from 'pino';
import { createSipTransport } from '../../../src/telephony/sip/transport.js';
import { createSipStack } from '../../../src/telephony/sip/stack.js';
import { answerChallenge, computeHa1 } from '../../../src/telephony/sip/digest.js';
import {
  createTrunkB2bua,
  orderEndpoints,
  type AttemptRecord,
  type CallEndedEvent,
  type TrunkCandidate,
  type TrunkPolicy,
} from '../../../src/telephony/sip/b2bua/index.js';
import { systemClock } from '../../../src/platform/clock.js';
import { createFakeTimers, rawUdpPeer, silentLog, until } from './helpers.js';
import { fill, fixture, sipp, type SippRun } from './sipp.js';

const REALM = 'sip.exchange.test';
const NUMBER = '12025550123';

interface Setup {
  port: number;
  ended: Promise<CallEndedEvent>;
  attempts: AttemptRecord[];
  answered: Promise<void>;
  timers: ReturnType<typeof createFakeTimers>;
  planned: Array<{ to: string; from: string; accountId: string }>;
}

/** The parts of a tap test the helpers use. */
interface TestT {
  teardown(fn: () => void | Promise<void>): void;
  equal(found: unknown, wanted: unknown, message: string, extra: { diagnostic?: boolean; output?: string }): boolean;
}

async function setup(
  t: TestT,
  o: {
    candidates: TrunkCandidate[];
    maxDurationSeconds?: number;
    whitelist?: boolean;
    transport?: 'udp' | 'tcp';
    log?: Logger;
  },
): Promise<Setup> {
  const timers = createFakeTimers();
  const transport = await createSipTransport({ host: '127.0.0.1', port: 0, log: silentLog });
  const stack = createSipStack({ transport, log: silentLog, timers });
  t.teardown(() => stack.close());
  let resolveEnded!: (e: CallEndedEvent) => void;
  let resolveAnswered!: () => void;
  const ended = new Promise<CallEndedEvent>((r) => (resolveEnded = r));
  const answered = new Promise<void>((r) => (resolveAnswered = r));
  const attempts: AttemptRecord[] = [];
  const planned: Setup['planned'] = [];
  const policy: TrunkPolicy = {
    resolveByIp: async (ip) => (o.whitelist && ip === '127.0.0.1' ? { accountId: 'acc_operator' } : null),
    lookupSipUser: async (username) => {
      if (username === 'sub_abc')
        return { ha1: computeHa1('sub_abc', REALM, 'pw'), accountId: 'acc_reseller', subAccountId: 'sub_abc' };
      if (username === 'pur_route7')
        return { ha1: computeHa1('pur_route7', REALM, 'pw7'), accountId: 'acc_reseller', purchaseId: 'pur_7' };
      return null;
    },
    planCall: async (input) => {
      planned.push({ to: input.to, from: input.from, accountId: input.accountId });
      return { callGroupId: 'cg-1', maxDurationSeconds: o.maxDurationSeconds ?? 3600, candidates: o.candidates };
    },
    onAttemptEnded: (a) => void attempts.push(a),
    onAnswered: () => resolveAnswered(),
    onCallEnded: (e) => resolveEnded(e),
  };
  createTrunkB2bua({
    stack,
    log: o.log ?? silentLog,
    clock: systemClock,
    realm: REALM,
    nonceSecret: 'test-secret',
    policy,
    setupTimeoutMs: 4000,
  });
  return { port: transport.port, ended, attempts, answered, timers, planned };
}

const route = (routeId: string, port: number, techPrefix = ''): TrunkCandidate => ({
  routeId,
  endpoints: [{ host: '127.0.0.1', port, transport: 'udp', techPrefix, priority: 1, weight: 1 }],
});

function uac(tail: string, vars: Record<string, string> = {}, challenge = true): string {
  // Without a challenge the header line goes entirely: left blank it would end sipp's header block.
  const text = challenge ? fixture('uac-auth.xml') : fixture('uac-auth.xml').replace('      {{AUTH_HEADER}}\n', '');
  return fill(text, {
    CHALLENGE_BLOCK: challenge ? fixture('uac-challenge.block') : '',
    AUTH_HEADER: challenge ? '[authentication]' : '',
    TAIL: fill(fixture(tail), { HOLD_MS: '100', FINAL_CHECK: '.', ...vars }),
  });
}

const uasAnswer = (t: TestT, expectUser = NUMBER) =>
  sipp(t, fill(fixture('uas-answer.xml'), { EXPECT_USER: expectUser }), []);
const uasFinal = (t: TestT, code: number, text: string, ring = false) =>
  sipp(
    t,
    fill(fixture('uas-final.xml'), {
      CODE: String(code),
      TEXT: text,
      PROVISIONAL_BLOCK: ring ? fixture('uas-180.block') : '',
    }),
    [],
  );

const caller = (
  t: TestT,
  b2buaPort: number,
  scenario: string,
  user = 'sub_abc',
  pass = 'pw',
  tp = 'u1',
): Promise<SippRun> => sipp(t, scenario, [`127.0.0.1:${b2buaPort}`, '-s', NUMBER, '-au', user, '-ap', pass, '-t', tp]);

async function expectExit(t: TestT, run: SippRun, what: string): Promise<void> {
  const code = await run.exited;
  t.equal(code, 0, what, code === 0 ? {} : { diagnostic: true, output: run.output().slice(-2000) });
}

for (const tp of ['u1', 't1'] as const) {
  t.test(
    `digest over ${tp === 'u1' ? 'UDP' : 'TCP'}: answered call, tech prefix, caller ID and SDP passed through`,
    async (t) => {
      const uas = await uasAnswer(t, `999${NUMBER}`);
      const s = await setup(t, { candidates: [route('r1', uas.port, '999')] });
      const uacRun = await caller(t, s.port, uac('uac-tail-answer.xml'), 'sub_abc', 'pw', tp);
      await expectExit(t, uacRun, 'caller completed the call');
      await expectExit(t, uas, 'supplier saw the prefixed number, caller ID and SDP');
      const e = await s.ended;
      t.equal(e.hangupCause, 'caller-bye');
      t.equal(e.sipCode, 200);
      t.same(e.attribution, { accountId: 'acc_reseller', via: 'digest', username: 'sub_abc', subAccountId: 'sub_abc' });
      t.equal(e.routeId, 'r1');
      t.ok(e.answeredAt);
      t.same(s.planned, [{ to: NUMBER, from: '15550001111', accountId: 'acc_reseller' }]);
    },
  );
}

/** A logger at `level` whose lines are kept, parsed. */
function keptLog(level: string): { log: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const log = pino({ level }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) });
  return { log, lines };
}

/** One answered call through a daemon logging at `level`: its kept lines and its end. */
async function answeredCallLogged(t: TestT, level: string) {
  const kept = keptLog(level);
  const uas = await uasAnswer(t);
  const s = await setup(t, { candidates: [route('r1', uas.port)], log: kept.log });
  await expectExit(t, await caller(t, s.port, uac('uac-tail-answer.xml')), 'caller completed the call');
  const e = await s.ended;
  await until(() => kept.lines.some((l) => l['msg'] === 'trunk call ended'));
  return { lines: kept.lines, e };
}

t.test('an answered call writes one line at info, at its end: ids, route, cause, no full number', async (t) => {
  const { lines, e } = await answeredCallLogged(t, 'info');
  t.same(
    lines.map((l) => l['msg']),
    ['trunk call ended'],
    'no line for the leg started or the answer at info',
  );
  t.match(lines[0], {
    callId: e.callId,
    callGroupId: 'cg-1',
    to: `${NUMBER.slice(0, 5)}…`,
    routeId: 'r1',
    hangupCause: 'caller-bye',
    sipCode: 200,
    attempts: 1,
  });
  t.notOk(JSON.stringify(lines).includes(NUMBER), 'the called number only masked');
});

t.test('at debug the leg and the answer are logged too, under the ids of the call', async (t) => {
  const { lines, e } = await answeredCallLogged(t, 'debug');
  const leg = lines.find((l) => l['msg'] === 'trunk leg started');
  const answered = lines.find((l) => l['msg'] === 'trunk call answered');
  t.match(leg, { callId: e.callId, callGroupId: 'cg-1', routeId: 'r1', attempt: 1, host: '127.0.0.1' });
  t.match(answered, { callId: e.callId, callGroupId: 'cg-1', routeId: 'r1', attempt: 1 });
  t.notOk(JSON.stringify(lines).includes(NUMBER), 'the called number only masked');
});

t.test('wrong password is refused with 403 and no call is planned', async (t) => {
  const s = await setup(t, { candidates: [] });
  const run = await caller(t, s.port, uac('uac-tail-final.xml', { FINAL: '403' }), 'sub_abc', 'nope');
  await expectExit(t, run, 'caller got 403');
  t.equal(s.planned.length, 0);
});

t.test('another realm is challenged again with the same nonce', async (t) => {
  const s = await setup(t, { candidates: [] });
  const peer = await rawUdpPeer();
  t.teardown(() => peer.close());
  const invite = (auth: string) => `INVITE sip:${NUMBER}@127.0.0.1:${s.port} SIP/2.0
Via: SIP/2.0/UDP 127.0.0.1:${peer.port};branch=z9hG4bK${Math.random().toString(36).slice(2)}
From: <sip:1555@127.0.0.1>;tag=a1
To: <sip:${NUMBER}@127.0.0.1>
Call-ID: realm-test
CSeq: ${auth ? 2 : 1} INVITE
Contact: <sip:1555@127.0.0.1:${peer.port}>
${auth}Content-Length: 0

`;
  peer.send(invite(''), s.port);
  await until(() => peer.got.some((m) => m.startsWith('SIP/2.0 401')));
  const nonce = /nonce="([^"]+)"/.exec(peer.got.find((m) => m.startsWith('SIP/2.0 401')) ?? '')?.[1];
  t.ok(nonce);
  peer.send(
    invite(
      `Authorization: Digest username="sub_abc", realm="elsewhere", nonce="${nonce}", uri="sip:127.0.0.1", response="00000000000000000000000000000000"\n`,
    ),
    s.port,
  );
  await until(() => peer.got.filter((m) => m.startsWith('SIP/2.0 401')).length === 2);
  const second = peer.got.filter((m) => m.startsWith('SIP/2.0 401'))[1] ?? '';
  t.match(second, `nonce="${nonce}"`);
  t.match(second, `realm="${REALM}"`);
});

t.test(
  "one To tag for a call: the 401 and the 200 share it, so a BYE carrying the challenge's tag still hangs up",
  async (t) => {
    // A UA that takes the tag of the last response it saw (sipp does) uses the 401's tag when a
    // retransmitted 401 overtakes our 200 under load; that BYE must not get 481 and leave the call up.
    const uas = await uasAnswer(t);
    const s = await setup(t, { candidates: [route('r1', uas.port)] });
    const peer = await rawUdpPeer();
    t.teardown(() => peer.close());
    const sdp = 'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 9 RTP/AVP 0\r\n';
    const request = (
      method: string,
      cseq: number,
      extra = '',
      toTag = '',
    ) => `${method} sip:${NUMBER}@127.0.0.1:${s.port} SIP/2.0
Via: SIP/2.0/UDP 127.0.0.1:${peer.port};branch=z9hG4bK${Math.random().toString(36).slice(2)}
From: "Alice" <sip:15550001111@127.0.0.1>;tag=a1
To: <sip:${NUMBER}@127.0.0.1>${toTag ? `;tag=${toTag}` : ''}
Call-ID: one-tag-test
CSeq: ${cseq} ${method}
Contact: <sip:15550001111@127.0.0.1:${peer.port}>
${extra}Content-Type: application/sdp
Content-Length: ${Buffer.byteLength(sdp)}

${sdp}`;
    const tagIn = (m: string) => /\r\nTo:[^\r]*;tag=([^;\r]+)/i.exec(m)?.[1];
    peer.send(request('INVITE', 1), s.port);
    await until(() => peer.got.some((m) => m.startsWith('SIP/2.0 401')));
    const challenge = peer.got.find((m) => m.startsWith('SIP/2.0 401')) ?? '';
    const challengeTag = tagIn(challenge);
    t.ok(challengeTag);
    const www = /\r\nWWW-Authenticate: ([^\r]+)/i.exec(challenge)?.[1] ?? '';
    const auth = answerChallenge({
      challenge: www,
      method: 'INVITE',
      uri: `sip:${NUMBER}@127.0.0.1:${s.port}`,
      username: 'sub_abc',
      password: 'pw',
    });
    peer.send(request('INVITE', 2, `Authorization: ${auth}\n`), s.port);
    await until(() => peer.got.some((m) => m.startsWith('SIP/2.0 200')), 8000);
    const ok = peer.got.find((m) => m.startsWith('SIP/2.0 200')) ?? '';
    t.equal(tagIn(ok), challengeTag, 'the 200 carries the tag the 401 did');
    peer.send(request('ACK', 2, '', challengeTag).replace(/Content-Type[^]*$/, 'Content-Length: 0\n\n'), s.port);
    peer.send(request('BYE', 3, '', challengeTag).replace(/Content-Type[^]*$/, 'Content-Length: 0\n\n'), s.port);
    const e = await s.ended;
    t.equal(e.hangupCause, 'caller-bye');
    await until(() => peer.got.some((m) => /^SIP\/2\.0 200[^]*CSeq: 3 BYE/.test(m)));
    await expectExit(t, uas, 'the supplier got its BYE');
  },
);

t.test('purchase username; 486 is passed back and never retried', async (t) => {
  const busy = await uasFinal(t, 486, 'Busy Here');
  const spare = await rawUdpPeer();
  t.teardown(() => spare.close());
  const s = await setup(t, { candidates: [route('r1', busy.port), route('r2', spare.port)] });
  const run = await caller(t, s.port, uac('uac-tail-final.xml', { FINAL: '486' }), 'pur_route7', 'pw7');
  await expectExit(t, run, 'caller got 486');
  const e = await s.ended;
  t.equal(e.attribution.purchaseId, 'pur_7');
  t.equal(e.sipCode, 486);
  t.same(
    e.attempts.map((a) => a.routeId),
    ['r1'],
  );
  t.equal(spare.got.length, 0, 'second route never tried');
});

t.test('whitelisted IP needs no digest', async (t) => {
  const uas = await uasAnswer(t);
  const s = await setup(t, { candidates: [route('r1', uas.port)], whitelist: true });
  const run = await caller(t, s.port, uac('uac-tail-answer.xml', {}, false));
  await expectExit(t, run, 'call completed without a challenge');
  const e = await s.ended;
  t.same(e.attribution, { accountId: 'acc_operator', via: 'ip' });
});

t.test('failover leg by leg: silence, then 503, then answer', async (t) => {
  const silent = await rawUdpPeer();
  t.teardown(() => silent.close());
  const unavailable = await uasFinal(t, 503, 'Service Unavailable');
  const answer = await uasAnswer(t);
  const s = await setup(t, {
    candidates: [route('r1', silent.port), route('r2', unavailable.port), route('r3', answer.port)],
  });
  const run = await caller(t, s.port, uac('uac-tail-answer.xml'));
  await until(() => silent.got.some((m) => m.startsWith('INVITE')), 5000);
  s.timers.advance(4000);
  await expectExit(t, run, 'caller connected on the third route');
  await expectExit(t, unavailable, 'second route answered 503');
  await expectExit(t, answer, 'third route answered');
  const e = await s.ended;
  t.same(
    e.attempts.map((a) => [a.routeId, a.sipCode, a.outcome]),
    [
      ['r1', null, 'timeout'],
      ['r2', 503, 'failed'],
      ['r3', 200, 'answered'],
    ],
  );
  t.equal(e.routeId, 'r3');
});

t.test('404 is final; the supplier Reason and Retry-After reach the caller on 503', async (t) => {
  const notFound = await uasFinal(t, 404, 'Not Found');
  const spare = await rawUdpPeer();
  t.teardown(() => spare.close());
  const s = await setup(t, { candidates: [route('r1', notFound.port), route('r2', spare.port)] });
  const run = await caller(t, s.port, uac('uac-tail-final.xml', { FINAL: '404' }));
  await expectExit(t, run, 'caller got 404');
  t.equal((await s.ended).attempts.length, 1);
  t.equal(spare.got.length, 0);

  const u503 = await uasFinal(t, 503, 'Service Unavailable');
  const s2 = await setup(t, { candidates: [route('r1', u503.port)] });
  const run2 = await caller(t, s2.port, uac('uac-tail-final.xml', { FINAL: '503', FINAL_CHECK: 'Retry-After: 120' }));
  await expectExit(t, run2, "caller got the supplier's 503 with Retry-After");
  t.equal((await s2.ended).sipCode, 503);
});

t.test('180 then 503: a ringing call never moves', async (t) => {
  const ring503 = await uasFinal(t, 503, 'Service Unavailable', true);
  const spare = await rawUdpPeer();
  t.teardown(() => spare.close());
  const s = await setup(t, { candidates: [route('r1', ring503.port), route('r2', spare.port)] });
  const run = await caller(t, s.port, uac('uac-tail-final.xml', { FINAL: '503' }));
  await expectExit(t, run, 'caller got 503 after ringing');
  const e = await s.ended;
  t.same(
    e.attempts.map((a) => [a.routeId, a.ringing]),
    [['r1', true]],
  );
  t.equal(spare.got.length, 0, 'no failover after 180');
});

t.test('caller CANCEL cancels the supplier leg', async (t) => {
  const ringing = await sipp(t, fixture('uas-ring-cancel.xml'), []);
  const s = await setup(t, { candidates: [route('r1', ringing.port)] });
  const run = await caller(t, s.port, uac('uac-tail-cancel.xml'));
  await expectExit(t, run, 'caller cancelled and got 487');
  await expectExit(t, ringing, 'supplier got CANCEL and sent 487');
  const e = await s.ended;
  t.equal(e.hangupCause, 'caller-cancel');
  t.equal(e.sipCode, 487);
  t.same(
    e.attempts.map((a) => a.outcome),
    ['cancelled'],
  );
});

t.test("a supplier's digest challenge is answered with the endpoint credentials", async (t) => {
  const uas = await sipp(t, fixture('uas-auth.xml'), []);
  const cand: TrunkCandidate = {
    routeId: 'r1',
    endpoints: [
      {
        host: '127.0.0.1',
        port: uas.port,
        transport: 'udp',
        priority: 1,
        weight: 1,
        username: 'trunkuser',
        password: 'trunkpw',
      },
    ],
  };
  const s = await setup(t, { candidates: [cand] });
  const run = await caller(t, s.port, uac('uac-tail-answer.xml'));
  await expectExit(t, run, 'caller connected through the authenticated leg');
  await expectExit(t, uas, 'supplier verified our credentials');
  t.equal((await s.ended).attempts.length, 1, 'the challenge is not a failover');
});

t.test('supplier BYE ends both sides', async (t) => {
  const uas = await sipp(t, fill(fixture('uas-answer-bye.xml'), { EXPECT_USER: NUMBER }), []);
  const s = await setup(t, { candidates: [route('r1', uas.port)] });
  const run = await caller(t, s.port, uac('uac-tail-bye-in.xml'));
  await expectExit(t, uas, 'supplier hung up and got 200');
  await expectExit(t, run, 'caller got the BYE');
  const e = await s.ended;
  t.equal(e.hangupCause, 'callee-bye');
  t.equal(e.sipCode, 200);
});

t.test('a supplier re-INVITE is relayed to the caller and answered back', async (t) => {
  const uas = await sipp(t, fill(fixture('uas-reinvite.xml'), { EXPECT_USER: NUMBER }), []);
  const s = await setup(t, { candidates: [route('r1', uas.port)] });
  const run = await caller(t, s.port, uac('uac-tail-reinvite.xml'));
  await expectExit(t, run, 'caller answered the relayed re-INVITE and hung up');
  await expectExit(t, uas, "supplier got the caller's SDP answer");
  t.equal((await s.ended).hangupCause, 'caller-bye');
});

t.test(
  "a supplier re-INVITE without SDP: the caller's offer goes back in the 200, the supplier's answer on in the ACK",
  async (t) => {
    const uas = await sipp(t, fill(fixture('uas-reinvite-late.xml'), { EXPECT_USER: NUMBER }), []);
    const s = await setup(t, { candidates: [route('r1', uas.port)] });
    const run = await caller(t, s.port, uac('uac-tail-reinvite-late.xml', { ANSWER_CHECK: 'a=sendonly' }));
    await expectExit(t, run, "caller got the supplier's answer in the ACK");
    await expectExit(t, uas, "supplier got the caller's offer in the 200");
    t.equal((await s.ended).hangupCause, 'caller-bye');
  },
);

t.test('session timer: max duration sends BYE to both sides', async (t) => {
  const uas = await uasAnswer(t);
  const s = await setup(t, { candidates: [route('r1', uas.port)], maxDurationSeconds: 30 });
  const run = await caller(t, s.port, uac('uac-tail-bye-in.xml'));
  await s.answered;
  s.timers.advance(30_000);
  await expectExit(t, run, 'caller got BYE');
  await expectExit(t, uas, 'supplier got BYE');
  const e = await s.ended;
  t.equal(e.hangupCause, 'max-duration');
  t.ok(e.durationMs >= 0);
});

t.test('OPTIONS to the daemon is answered 200; probe of a silent endpoint fails', async (t) => {
  const s = await setup(t, { candidates: [] });
  const timers = createFakeTimers();
  const prober = createSipStack({
    transport: await createSipTransport({ host: '127.0.0.1', port: 0, log: silentLog }),
    log: silentLog,
    timers,
  });
  t.teardown(() => prober.close());
  const { probeEndpoint } = await import('../../../src/telephony/sip/probe.js');
  const ok = await probeEndpoint(prober, { transport: 'udp', host: '127.0.0.1', port: s.port });
  t.equal(ok.ok, true);
  t.equal(ok.status, 200);
  t.ok(ok.rttMs >= 0);
  const tcp = await probeEndpoint(prober, { transport: 'tcp', host: '127.0.0.1', port: s.port });
  t.equal(tcp.status, 200, 'over TCP too');
  const silent = await rawUdpPeer();
  t.teardown(() => silent.close());
  const pending = probeEndpoint(
    prober,
    { transport: 'udp', host: '127.0.0.1', port: silent.port },
    { timeoutMs: 1000 },
  );
  await until(() => silent.got.length === 1);
  timers.advance(1000);
  t.same(await pending, { ok: false, status: null, rttMs: (await pending).rttMs });
});

t.test('endpoint order: priority first, then weight', async (t) => {
  const eps = [
    { host: 'a', port: 1, transport: 'udp' as const, priority: 2, weight: 100 },
    { host: 'b', port: 1, transport: 'udp' as const, priority: 1, weight: 1 },
    { host: 'c', port: 1, transport: 'udp' as const, priority: 1, weight: 3 },
  ];
  t.same(
    orderEndpoints(eps, () => 0).map((e) => e.host),
    ['b', 'c', 'a'],
  );
  t.same(
    orderEndpoints(eps, () => 1).map((e) => e.host),
    ['c', 'b', 'a'],
  );
});
