import t from 'tap';
import { spawn } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createMediaPool } from '../../../src/telephony/media/pool.js';
import { createTts } from '../../../src/telephony/media/tts.js';
import { createMp3Decoder } from '../../../src/telephony/media/mp3.js';
import { createPromptRenderer, runActions } from '../../../src/telephony/media/actions.js';

/**
 * sipp (Debian sip-tester) answers a call and replays the RFC 2833 captures Debian ships with it
 * at our RTP port. The INVITE/ACK/BYE are written by hand here: the point is the media plane,
 * and the SIP stack has its own tests.
 */

const PCAPS = '/usr/share/sip-tester';
const available = existsSync('/usr/bin/sipp') && existsSync(join(PCAPS, 'dtmf_2833_pound.pcap'));
const log = pino({ level: 'silent' });

const scenario = (digits: string[]): string => `<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="rfc2833 callee">
  <recv request="INVITE" />
  <send>
    <![CDATA[
SIP/2.0 200 OK
[last_Via:]
[last_From:]
[last_To:];tag=[pid]SIPpTag01[call_number]
[last_Call-ID:]
[last_CSeq:]
Contact: <sip:sipp@[local_ip]:[local_port];transport=[transport]>
Content-Type: application/sdp
Content-Length: [len]

v=0
o=- 53655765 2353687637 IN IP[local_ip_type] [local_ip]
s=-
c=IN IP[media_ip_type] [media_ip]
t=0 0
m=audio [media_port] RTP/AVP 0 101
a=rtpmap:0 PCMU/8000
a=rtpmap:101 telephone-event/8000
a=fmtp:101 0-15

    ]]>
  </send>
  <recv request="ACK" />
${digits.map((d) => `  <nop><action><exec play_pcap_audio="${PCAPS}/dtmf_2833_${d}.pcap"/></action></nop>`).join('\n  <pause milliseconds="350"/>\n')}
  <recv request="BYE" />
  <send>
    <![CDATA[
SIP/2.0 200 OK
[last_Via:]
[last_From:]
[last_To:]
[last_Call-ID:]
[last_CSeq:]
Content-Length: 0

    ]]>
  </send>
</scenario>
`;

t.test(
  'digits replayed by sipp from the Debian RFC 2833 captures are gathered',
  { skip: available ? false : 'sipp not installed' },
  async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'sipp-dtmf-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    const file = join(dir, 'callee.xml');
    await writeFile(file, scenario(['1', '2', 'star', 'pound']));

    const base = 20000 + (process.pid % 400) * 20;
    const pool = createMediaPool({ workers: 1, portMin: base + 10, portMax: base + 19, bindAddress: '127.0.0.1', log });
    const mp3 = createMp3Decoder({ log });
    t.teardown(async () => {
      await pool.close();
      await mp3.close();
    });
    const session = await pool.openSession({ codec: 'PCMU' });
    const sipPort = base;
    const sipp = spawn(
      'sipp',
      [
        '-sf',
        file,
        '-i',
        '127.0.0.1',
        '-p',
        String(sipPort),
        '-mp',
        String(base + 4),
        '-m',
        '1',
        '-nostdin',
        '-nd',
        '-timeout',
        '15s',
        '-timeout_error',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let sippErr = '';
    sipp.stderr.on('data', (c: Buffer) => (sippErr += c.toString()));
    const sippExit = once(sipp, 'exit');
    t.teardown(() => {
      if (sipp.exitCode === null) sipp.kill('SIGKILL');
    });

    const sip = createSocket('udp4');
    sip.bind(0, '127.0.0.1');
    await once(sip, 'listening');
    t.teardown(() => sip.close());
    const myPort = sip.address().port;
    const callId = `media-test-${process.pid}@127.0.0.1`;
    const common = (method: string, cseq: number, toTag = ''): string =>
      [
        `Via: SIP/2.0/UDP 127.0.0.1:${myPort};branch=z9hG4bK-${method}-${Date.now()}`,
        'Max-Forwards: 70',
        `From: <sip:caller@127.0.0.1:${myPort}>;tag=abc123`,
        `To: <sip:callee@127.0.0.1:${sipPort}>${toTag}`,
        `Call-ID: ${callId}`,
        `CSeq: ${cseq} ${method}`,
        `Contact: <sip:caller@127.0.0.1:${myPort}>`,
      ].join('\r\n');
    const sendSip = (msg: string): void => void sip.send(msg, sipPort, '127.0.0.1');
    const offer = session.offerSdp();
    const responses: string[] = [];
    const okForInvite = new Promise<string>((resolve) => {
      sip.on('message', (m) => {
        const text = m.toString();
        responses.push(text);
        if (/^SIP\/2\.0 200/.test(text) && /CSeq: 1 INVITE/i.test(text)) resolve(text);
      });
    });
    // sipp may not be listening yet: resend the INVITE until it answers (as UDP SIP would, Timer A).
    const invite = `INVITE sip:callee@127.0.0.1:${sipPort} SIP/2.0\r\n${common('INVITE', 1)}\r\nContent-Type: application/sdp\r\nContent-Length: ${Buffer.byteLength(offer)}\r\n\r\n${offer}`;
    sendSip(invite);
    const resend = setInterval(() => sendSip(invite), 250);
    const ok = await okForInvite;
    clearInterval(resend);
    const toTag = /^To:.*?(;tag=[^\r\n;]+)/im.exec(ok)?.[1] ?? '';
    const answer = ok.slice(ok.indexOf('\r\n\r\n') + 4);
    const remote = session.acceptAnswer(answer);
    t.equal(remote.telephoneEventPt, 101);
    t.equal(remote.port, base + 4);

    const renderer = createPromptRenderer({ tts: createTts({ log, cacheDir: null }), mp3 });
    const gathering = runActions({
      media: session,
      actions: [{ gather: { digits: 10, timeout: 10, finishOnKey: '#' } }],
      renderer,
    });
    sendSip(`ACK sip:callee@127.0.0.1:${sipPort} SIP/2.0\r\n${common('ACK', 1, toTag)}\r\nContent-Length: 0\r\n\r\n`);
    const outcome = await gathering;
    t.same(outcome.gathered, [{ index: 0, digits: '12*', status: 'received' }], 'keys 1, 2, * then # to finish');

    sendSip(`BYE sip:callee@127.0.0.1:${sipPort} SIP/2.0\r\n${common('BYE', 2, toTag)}\r\nContent-Length: 0\r\n\r\n`);
    const [code] = await sippExit;
    if (code !== 0) t.comment(sippErr.slice(-2000));
    t.equal(code, 0, 'sipp scenario passed (it received our BYE and answered it)');
    await session.close();
  },
);
