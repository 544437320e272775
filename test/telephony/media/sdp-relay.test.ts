import t from 'tap';
import { relayedStream, rewriteForRelay } from '../../../src/telephony/media/sdp-relay.js';

const offer = (o: { c?: string; mediaC?: string; port?: number; extra?: string; video?: boolean } = {}) =>
  [
    'v=0',
    'o=alice 2890844526 2890844527 IN IP4 198.51.100.7',
    's=-',
    `c=IN IP4 ${o.c ?? '198.51.100.7'}`,
    't=0 0',
    `m=audio ${o.port ?? 49170} RTP/AVP 0 8 101`,
    ...(o.mediaC ? [`c=IN IP4 ${o.mediaC}`] : []),
    'a=rtpmap:0 PCMU/8000',
    'a=rtpmap:8 PCMA/8000',
    'a=rtpmap:101 telephone-event/8000',
    'a=fmtp:101 0-16',
    'a=rtcp:49171',
    'a=candidate:1 1 UDP 2130706431 198.51.100.7 49170 typ host',
    ...(o.extra ? [o.extra] : []),
    ...(o.video ? ['m=video 51372 RTP/AVP 31', 'a=rtpmap:31 H261/90000'] : []),
    '',
  ].join('\r\n');

t.test('the audio stream the SDP names, media-level address first', async (t) => {
  t.same(relayedStream(offer()), { address: '198.51.100.7', port: 49170, twoWay: true });
  t.same(relayedStream(offer({ mediaC: '203.0.113.9' })), { address: '203.0.113.9', port: 49170, twoWay: true });
  t.same(
    relayedStream(offer({ extra: 'a=sendonly' })),
    { address: '198.51.100.7', port: 49170, twoWay: false },
    'on hold: one-way',
  );
  t.equal(relayedStream(offer({ c: '0.0.0.0' })), null, 'old-style hold names no target');
  t.equal(relayedStream(offer({ port: 0 })), null, 'a disabled stream names no target');
  t.equal(relayedStream('not sdp at all'), null);
  t.equal(relayedStream(''), null);
});

t.test('rewritten for the relay: only the audio address and port change', async (t) => {
  const out = rewriteForRelay(offer({ video: true }), { address: '192.0.2.1', port: 30000 }) ?? '';
  t.match(out, /\r\nc=IN IP4 192\.0\.2\.1\r\n/, 'session address is the relay');
  t.match(out, /\r\nm=audio 30000 RTP\/AVP 0 8 101\r\n/, 'audio port is the relay port; codecs kept');
  t.match(out, /a=rtpmap:101 telephone-event\/8000/, 'telephone-event kept');
  t.match(out, /o=alice 2890844526 2890844527 IN IP4 198\.51\.100\.7/, 'origin (and its version) kept');
  t.notMatch(out, /a=rtcp:/, "the end's RTCP port is not advertised");
  t.notMatch(out, /a=candidate/, 'ICE candidates that would bypass the relay are dropped');
  t.match(out, /m=video 0 RTP\/AVP 31/, 'video refused with port 0: one audio stream is relayed');
  t.notMatch(out, /198\.51\.100\.7 49170/, "the end's media address is gone");
  t.ok(out.endsWith('\r\n'));
  const media = rewriteForRelay(offer({ mediaC: '203.0.113.9' }), { address: '192.0.2.1', port: 30002 }) ?? '';
  t.notMatch(media, /203\.0\.113\.9/, 'a media-level address is replaced too');
  const v6 = rewriteForRelay(offer(), { address: '2001:db8::1', port: 30004 }) ?? '';
  t.match(v6, /c=IN IP6 2001:db8::1/, 'IPv6 relay address');
  const held = rewriteForRelay(offer({ mediaC: '0.0.0.0' }), { address: '192.0.2.1', port: 30006 }) ?? '';
  t.match(held, /m=audio 30006[^]*c=IN IP4 0\.0\.0\.0/, 'an old-style hold stays a hold');
  t.equal(rewriteForRelay('v=0\r\ns=-\r\n', { address: '192.0.2.1', port: 30000 }), null, 'no audio: not rewritten');
  t.equal(rewriteForRelay('garbage', { address: '192.0.2.1', port: 30000 }), null);
});
