import t, { type Test } from 'tap';
import { existsSync } from 'node:fs';
import { pino } from 'pino';
import { createSipDialer, type LegOutcome } from '../../../src/telephony/calls/sip-dialer.js';
import type { DialEvents } from '../../../src/telephony/media/native-engine.js';
import { createLoopMarker, createSipStack, createSipTransport } from '../../../src/telephony/sip/index.js';
import { fill, fixture, sipp } from '../sip/sipp.js';

/** The SIP dialer against sipp callees: digest, tech prefix, the far side's BYE, CANCEL while ringing. */
const available = existsSync('/usr/bin/sipp');
const log = pino({ level: 'silent' });
const OFFER =
  'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 40000 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\n';

async function setup(tt: Test) {
  const transport = await createSipTransport({ host: '127.0.0.1', port: 0, log });
  const stack = createSipStack({ transport, log });
  tt.teardown(() => stack.close());
  const outcomes: LegOutcome[] = [];
  const dialer = createSipDialer(stack, {
    log,
    loopMarker: createLoopMarker('test secret'),
    setupTimeoutMs: 2000,
    onLegEnded: (o) => outcomes.push(o),
  });
  return { dialer, outcomes };
}

/** Records the events of one leg; `ended` resolves with the end the far side caused. */
function recorder() {
  const seen: string[] = [];
  let answer = '';
  let resolveEnd: (v: { sipStatus: number | null; reason: string }) => void = () => undefined;
  const ended = new Promise<{ sipStatus: number | null; reason: string }>((r) => (resolveEnd = r));
  let resolveAnswer: () => void = () => undefined;
  const answered = new Promise<void>((r) => (resolveAnswer = r));
  let resolveRing: () => void = () => undefined;
  const rang = new Promise<void>((r) => (resolveRing = r));
  const events: DialEvents = {
    ringing: () => {
      seen.push('ringing');
      resolveRing();
    },
    answered: (sdp) => {
      seen.push('answered');
      answer = sdp;
      resolveAnswer();
    },
    ended: (info) => {
      seen.push('ended');
      resolveEnd(info);
    },
  };
  return { events, seen, ended, answered, rang, answer: () => answer };
}

t.test(
  'digest challenge answered with the endpoint credentials, tech prefix in front of the number; our BYE ends it',
  { skip: available ? false : 'sipp not installed' },
  async (t) => {
    const { dialer, outcomes } = await setup(t);
    const scenario = fixture('uas-auth.xml').replace(
      '<recv request="INVITE"/>',
      '<recv request="INVITE"><action><ereg regexp="^INVITE sip:0099447000000001@" search_in="msg" check_it="true" assign_to="ruri"/></action></recv><Reference variables="ruri"/>',
    );
    const uas = await sipp(t, scenario, []);
    const rec = recorder();
    const leg = dialer.dial(
      {
        callId: 'c1',
        to: '+447000000001',
        from: '+15550001111',
        offerSdp: OFFER,
        endpoint: {
          host: '127.0.0.1',
          port: uas.port,
          transport: 'udp',
          username: 'trunkuser',
          password: 'trunkpw',
          techPrefix: '0099',
        },
      },
      rec.events,
    );
    await rec.answered;
    t.match(rec.answer(), /m=audio \d+ RTP\/AVP 0/, 'the callee SDP answer is handed over');
    await leg.hangup();
    t.equal(await uas.exited, 0, 'sipp verified our digest, got the ACK and our BYE', {
      diagnostic: true,
      output: uas.output().slice(-2000),
    });
    t.same(rec.seen, ['answered'], 'an end we started is not reported as ended');
    t.equal(outcomes.length, 1);
    t.equal(outcomes[0]!.answered, true);
    t.equal(dialer.activeLegs(), 0);
  },
);

t.test(
  'the far side hangs up: BYE answered and reported',
  { skip: available ? false : 'sipp not installed' },
  async (t) => {
    const { dialer } = await setup(t);
    // uas-answer-bye insists on a display name in From; the API dialer presents the bare number.
    const scenario = fill(fixture('uas-answer-bye.xml'), { EXPECT_USER: '447000000002' })
      .replace(/\s*<ereg regexp="From: &quot;Alice&quot;[^>]*\/>/, '')
      .replace('variables="ruri,caller,sdp"', 'variables="ruri,sdp"');
    const uas = await sipp(t, scenario, []);
    const rec = recorder();
    dialer.dial(
      {
        callId: 'c2',
        to: '+447000000002',
        from: '+15550001111',
        offerSdp: OFFER,
        endpoint: { host: '127.0.0.1', port: uas.port, transport: 'udp' },
      },
      rec.events,
    );
    const end = await rec.ended;
    t.equal(end.sipStatus, null);
    t.same(rec.seen, ['ringing', 'answered', 'ended']);
    t.equal(await uas.exited, 0, 'sipp got 200 OK for its BYE', {
      diagnostic: true,
      output: uas.output().slice(-2000),
    });
  },
);

t.test(
  'hangup while ringing sends CANCEL; a refusal reports its status',
  { skip: available ? false : 'sipp not installed' },
  async (t) => {
    const { dialer, outcomes } = await setup(t);
    const ringing = await sipp(t, fixture('uas-ring-cancel.xml'), []);
    const rec = recorder();
    const leg = dialer.dial(
      {
        callId: 'c3',
        to: '+447000000003',
        from: '+15550001111',
        offerSdp: OFFER,
        endpoint: { host: '127.0.0.1', port: ringing.port, transport: 'udp' },
      },
      rec.events,
    );
    await rec.rang;
    await leg.hangup();
    t.equal(await ringing.exited, 0, 'sipp saw the CANCEL and sent 487', {
      diagnostic: true,
      output: ringing.output().slice(-2000),
    });
    t.same(rec.seen, ['ringing']);
    t.equal(outcomes[0]?.ringing, true);

    const refusing = await sipp(
      t,
      fill(fixture('uas-final.xml'), { CODE: '480', TEXT: 'Temporarily Unavailable', PROVISIONAL_BLOCK: '' }),
      [],
    );
    const rec2 = recorder();
    dialer.dial(
      {
        callId: 'c4',
        to: '+447000000004',
        from: '+15550001111',
        offerSdp: OFFER,
        endpoint: { host: '127.0.0.1', port: refusing.port, transport: 'udp' },
      },
      rec2.events,
    );
    const end = await rec2.ended;
    t.equal(end.sipStatus, 480);
    t.equal(outcomes[1]?.noResponse, false);
    t.equal(await refusing.exited, 0);
  },
);
