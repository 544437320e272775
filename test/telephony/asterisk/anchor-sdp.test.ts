import t from 'tap';
import { parse } from 'sdp-transform';
import { answerToOffer } from '../../../src/telephony/asterisk/anchor-sdp.js';

const sdp = (lines: string[]): string => `${lines.join('\r\n')}\r\n`;

// What Asterisk offers on a leg it places (pjsip.conf: ulaw, alaw, RFC 4733).
const offer = sdp([
  'v=0',
  'o=- 1 3 IN IP4 10.0.0.21',
  's=Asterisk',
  'c=IN IP4 10.0.0.21',
  't=0 0',
  'm=audio 21000 RTP/AVP 0 8 101',
  'a=rtpmap:0 PCMU/8000',
  'a=rtpmap:8 PCMA/8000',
  'a=rtpmap:101 telephone-event/8000',
  'a=fmtp:101 0-16',
  'a=ptime:20',
  'a=sendrecv',
]);

t.test("Asterisk's offer answered with the supplier's codec and the far end's address", async (t) => {
  // The supplier chose A-law and named telephone-event under another payload number, no rtpmap for 8.
  const chosen = sdp([
    'v=0',
    'o=sup 5 5 IN IP4 192.0.2.7',
    's=-',
    'c=IN IP4 192.0.2.7',
    't=0 0',
    'm=audio 40000 RTP/AVP 8 96',
    'a=rtpmap:96 telephone-event/8000',
    'a=sendrecv',
  ]);
  const answer = answerToOffer(offer, chosen, { address: '198.51.100.9', port: 30000 });
  const d = parse(answer ?? '');
  t.equal(d.connection?.ip, '198.51.100.9', 'audio goes to the far end given');
  t.equal(d.media[0]?.port, 30000);
  t.equal(d.media[0]?.payloads, '8 101', "the supplier's codec under Asterisk's own payload numbers");
  t.same(
    d.media[0]?.rtp.map((r) => r.payload),
    [8, 101],
  );
  t.same(
    d.media[0]?.fmtp.map((f) => f.payload),
    [101],
  );
  t.equal(d.media[0]?.direction, 'sendrecv');
});

t.test('no common codec keeps the offer whole; no target answers with a null address', async (t) => {
  const g729 = sdp(['v=0', 'o=s 1 1 IN IP4 192.0.2.7', 's=-', 'c=IN IP4 192.0.2.7', 't=0 0', 'm=audio 4 RTP/AVP 18']);
  const d = parse(answerToOffer(offer, g729, null) ?? '');
  t.equal(d.media[0]?.payloads, '0 8 101', 'Asterisk transcodes rather than the call failing');
  t.equal(d.connection?.ip, '0.0.0.0');
  t.equal(d.media[0]?.port, 9);
});

t.test('an offer without active audio has no answer', async (t) => {
  t.equal(answerToOffer('not sdp', '', null), null);
  t.equal(answerToOffer(offer.replace('m=audio 21000', 'm=audio 0'), offer, null), null);
});
