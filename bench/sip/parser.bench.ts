/**
 * SIP parser/serializer hot path: parses and re-serialises a typical INVITE with SDP, then the same
 * with the reads one request gets on the call path (Via stamped by the transport, top Via, CSeq,
 * From and To tags read by the stack and the B2BUA several times, a response built and serialised).
 * Prints wall time and this process's CPU time per message (CPU time is what a loaded machine skews least).
 * Usage: node --import tsx bench/sip/parser.bench.ts [messages=50000]
 */
import { parseMessage } from '../../src/telephony/sip/parser.js';
import {
  createResponse,
  cseqOf,
  fromOf,
  serialize,
  tagOf,
  toOf,
  topVia,
  vias,
  type SipRequest,
} from '../../src/telephony/sip/message.js';
import { stampVia } from '../../src/telephony/sip/transport.js';

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
const [n = 50_000] = process.argv.slice(2).map(Number);

function measure(label: string, fn: () => void): void {
  for (let i = 0; i < 2000; i++) fn();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) fn();
  const us = ((performance.now() - t0) * 1000) / n;
  const c = process.cpuUsage(cpu0);
  const cpuUs = (c.user + c.system) / n;
  console.log(`sip ${label}: ${us.toFixed(1)} us/message wall, ${cpuUs.toFixed(1)} us/message cpu`);
}

measure('parse+typed+serialize', () => {
  const m = parseMessage(invite, { datagram: true });
  vias(m);
  fromOf(m);
  toOf(m);
  cseqOf(m);
  serialize(m);
});

const source = { transport: 'udp' as const, host: '127.0.0.1', port: 5061 };
measure('parse+call-path reads+response', () => {
  const m = parseMessage(invite, { datagram: true }) as SipRequest;
  stampVia(m.headers, source);
  for (let k = 0; k < 3; k++) {
    void topVia(m).params['branch'];
    void cseqOf(m).seq;
    void tagOf(fromOf(m));
    void tagOf(toOf(m));
  }
  const res = createResponse(m, 200, 'OK', { toTag: 'abc123' });
  void tagOf(toOf(res));
  serialize(res);
});
