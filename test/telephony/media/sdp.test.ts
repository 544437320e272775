import t from 'tap';
import { parse } from 'sdp-transform';
import { createAnswer, createOffer, parseAnswer, TELEPHONE_EVENT_PT } from '../../../src/telephony/media/sdp.js';

const local = { address: '127.0.0.1', port: 40000, codecs: ['PCMU', 'PCMA'] as const, sessionId: '42' };

t.test('offer lists PCMU, PCMA and telephone-event/8000 on 101, no G.729', async (t) => {
  const sdp = createOffer(local);
  const d = parse(sdp);
  const audio = d.media[0];
  t.equal(audio?.port, 40000);
  t.equal(audio?.payloads, '0 8 101');
  t.same(
    audio?.rtp.map((r) => `${r.payload} ${r.codec}/${r.rate}`),
    ['0 PCMU/8000', '8 PCMA/8000', '101 telephone-event/8000'],
  );
  t.equal(audio?.fmtp[0]?.config, '0-16');
  t.equal(d.connection?.ip, '127.0.0.1');
  t.notMatch(sdp, /G729/);
  t.match(sdp, /\r\n/);
});

const peerOffer = [
  'v=0',
  'o=peer 1 1 IN IP4 127.0.0.2',
  's=-',
  'c=IN IP4 127.0.0.2',
  't=0 0',
  'm=audio 30000 RTP/AVP 18 8 0 96',
  'a=rtpmap:18 G729/8000',
  'a=rtpmap:8 PCMA/8000',
  'a=rtpmap:96 telephone-event/8000',
  'a=fmtp:96 0-15',
  '',
].join('\r\n');

t.test('answer picks the offerer’s first supported codec and its event payload type', async (t) => {
  const { sdp, remote } = createAnswer(peerOffer, local);
  t.same(remote, { address: '127.0.0.2', port: 30000, codec: 'PCMA', payloadType: 8, telephoneEventPt: 96 });
  const audio = parse(sdp).media[0];
  t.equal(audio?.payloads, '8 96');
  t.equal(audio?.port, 40000);
});

t.test('answer to an offer without telephone-event and with static types only', async (t) => {
  const offer = 'v=0\r\no=- 1 1 IN IP4 10.0.0.1\r\ns=-\r\nt=0 0\r\nm=audio 5004 RTP/AVP 0\r\nc=IN IP4 10.0.0.1\r\n';
  const { sdp, remote } = createAnswer(offer, local);
  t.equal(remote.codec, 'PCMU');
  t.equal(remote.telephoneEventPt, null);
  t.equal(String(parse(sdp).media[0]?.payloads), '0');
});

t.test('no common codec, no audio and bad SDP are coded errors', async (t) => {
  const g729only = peerOffer.replace('m=audio 30000 RTP/AVP 18 8 0 96', 'm=audio 30000 RTP/AVP 18');
  t.throws(() => createAnswer(g729only, local), { name: 'MediaError', code: 'MEDIA_NO_COMMON_CODEC' });
  const noAudio = 'v=0\r\no=- 1 1 IN IP4 1.2.3.4\r\ns=-\r\nc=IN IP4 1.2.3.4\r\nt=0 0\r\nm=video 5000 RTP/AVP 96\r\n';
  t.throws(() => createAnswer(noAudio, local), { name: 'MediaError', code: 'MEDIA_BAD_SDP' });
  const rejected = peerOffer.replace('m=audio 30000', 'm=audio 0');
  t.throws(() => parseAnswer(rejected, local), { name: 'MediaError', code: 'MEDIA_BAD_SDP' });
});

t.test('parseAnswer reads the callee answer to our offer', async (t) => {
  const answer =
    'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 6000 RTP/AVP 0 101\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:101 telephone-event/8000\r\n';
  t.same(parseAnswer(answer, local), {
    address: '127.0.0.1',
    port: 6000,
    codec: 'PCMU',
    payloadType: 0,
    telephoneEventPt: TELEPHONE_EVENT_PT,
  });
});
