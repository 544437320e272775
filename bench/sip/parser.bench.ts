/** SIP parser/serializer hot path: parses and re-serialises a typical INVITE with SDP. Usage: node --import tsx bench/sip/parser.bench.ts */
import { parseMessage } from '../../src/telephony/sip/parser.js';
import { serialize, vias, fromOf, toOf, cseqOf } from '../../src/telephony/sip/message.js';

const invite = Buffer.from(
  [
    'INVITE sip:12025550123@127.0.0.1:5060 SIP/2.0',
    'Via: SIP/2.0/UDP 127.0.0.1:5061;branch=z9hG4bK-1234-1-0;rport',
    'From: "Alice" <sip:15550001111@127.0.0.1:5061>;tag=1234SIPpTag001',
    'To: <sip:12025550123@127.0.0.1:5060>',
    'Call-ID: 1-1234@127.0.0.1',
    'CSeq: 2 INVITE',
    'Contact: <sip:sipp@127.0.0.1:5061;transport=UDP>',
    'Authorization: Digest username="sub_abc",realm="sip.example.net",uri="sip:127.0.0.1:5060",nonce="abc.def.ghi",response="0123456789abcdef0123456789abcdef",algorithm=MD5',
    'Max-Forwards: 70',
    'Content-Type: application/sdp',
    'Content-Length: 129',
    '',
    'v=0\r\no=user1 53655765 2353687637 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 6000 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\n',
  ].join('\r\n'),
);
const n = 50_000;
const t0 = performance.now();
for (let i = 0; i < n; i++) {
  const m = parseMessage(invite, { datagram: true });
  vias(m);
  fromOf(m);
  toOf(m);
  cseqOf(m);
  serialize(m);
}
const us = ((performance.now() - t0) * 1000) / n;
console.log(`sip parse+typed+serialize: ${us.toFixed(1)} us/message (${Math.round(1e6 / us)} messages/s)`);
