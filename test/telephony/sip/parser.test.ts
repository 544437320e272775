import t from 'tap';
import { randomBytes } from 'node:crypto';
import {
  createStreamFramer,
  parseMessage,
  SipParseError,
  type SipMessageError,
} from '../../../src/telephony/sip/parser.js';
import {
  callIdOf,
  contactsOf,
  cseqOf,
  detachedBytes,
  fromOf,
  getHeader,
  headerValues,
  maxForwardsOf,
  serialize,
  toOf,
  vias,
} from '../../../src/telephony/sip/message.js';
import { formatDigest, parseDigest, parseUri } from '../../../src/telephony/sip/headers.js';
import { invalid, valid } from './torture-fixtures.js';

const req = (name: string) => {
  const m = parseMessage(valid[name] as Buffer, { datagram: true });
  if (m.kind !== 'request') throw new Error('expected request');
  return m;
};

t.test('RFC 4475 valid messages parse', async (t) => {
  for (const [name, buf] of Object.entries(valid)) {
    t.doesNotThrow(() => parseMessage(buf, { datagram: true }), name);
  }
});

t.test('wsinv: folding, compact forms, multiple Via in one line', async (t) => {
  const m = req('wsinv');
  t.equal(m.method, 'INVITE');
  t.equal(toOf(m).params['tag'], '1918181833n');
  t.equal(fromOf(m).params['tag'], '98asjd8');
  t.equal(fromOf(m).displayName, 'J Rosenberg \\"');
  t.equal(maxForwardsOf(m), 68);
  t.same(cseqOf(m), { seq: 9, method: 'INVITE' });
  const v = vias(m);
  t.equal(v.length, 3);
  t.equal(v[1]?.transport, 'TCP');
  t.equal(v[1]?.host, 'spindle.example.com');
  t.equal(v[2]?.params['branch'], 'z9hG4bK30239');
  t.equal(m.body.length, 150);
  t.equal(contactsOf(m)[0]?.params['q'], '0.33');
  t.equal(getHeader(m, 'newfangledheader'), 'newfangled value continued newfangled value');
  t.equal(m.headers[0]?.name, 'TO', 'raw header names kept in order');
});

t.test('escapes, unusual tokens, IPv6', async (t) => {
  t.equal(req('intmeth').method, "!interesting-Method0123456789_*+`.%indeed'~");
  t.equal(parseUri(req('esc01').uri).user, 'sips%3Auser%40example.com');
  t.equal(callIdOf(req('esc01')), 'esc01.239409asdfakjkn23onasd0-3234');
  t.equal(headerValues(req('esc02'), 'contact').length, 2, 'C%6Fntact is not Contact');
  t.equal(parseUri(req('semiuri').uri).user, 'user;par=u%40example.net');
  t.same(
    vias(req('transports')).map((v) => v.transport),
    ['UDP', 'SCTP', 'TLS', 'UNKNOWN', 'TCP'],
  );
  t.equal(fromOf(req('lwsdisp')).displayName, 'caller');
  const v6 = req('ipv6');
  t.equal(parseUri(v6.uri).host, '[2001:db8::10]');
  t.equal(vias(v6)[0]?.host, '[2001:db8::9:1]');
  t.equal(contactsOf(v6)[0]?.uri.port, 5070);
  const dbl = req('dblreq');
  t.equal(dbl.method, 'REGISTER');
  t.equal(dbl.body.length, 0, 'trailing octets beyond Content-Length ignored');
  const nr = parseMessage(valid['noreason'] as Buffer, { datagram: true });
  t.equal(nr.kind === 'response' && nr.reason, '');
});

t.test('RFC 4475 invalid messages are refused with a typed reason', async (t) => {
  for (const [name, { msg, status }] of Object.entries(invalid)) {
    try {
      parseMessage(msg, { datagram: true });
      t.fail(`${name} parsed`);
    } catch (err) {
      t.ok(err instanceof SipParseError, `${name} typed`);
      const e = err as SipMessageError;
      t.ok(e.reason.length > 0, `${name}: ${e.reason}`);
      if (status === 0) t.equal(e.isRequest, false, `${name} is a response: dropped`);
      else {
        t.equal(e.status, status, `${name} answered ${status}`);
        t.equal(e.isRequest, true);
      }
    }
  }
});

t.test('serialize round-trips and fixes Content-Length', async (t) => {
  const m = req('wsinv');
  const again = parseMessage(serialize(m));
  t.equal(again.headers.length, m.headers.length);
  t.same(again.body, m.body);
  m.body = Buffer.from('x');
  t.match(serialize(m).toString(), /Content-Length: 1\r\n/);
});

t.test('digest header round trip', async (t) => {
  const d = parseDigest(
    'Digest username="bob", realm="sip.example.com", nonce="a,b", uri="sip:x@y", response="00", algorithm=MD5',
  );
  t.equal(d.params['nonce'], 'a,b');
  t.same(parseDigest(formatDigest(d)), d);
});

t.test('stream framing splits, joins and limits', async (t) => {
  const one = serialize(req('lwsdisp'));
  const two = Buffer.concat([Buffer.from('\r\n\r\n'), one, one]);
  const f = createStreamFramer();
  const frames = [...f.push(two.subarray(0, 10)), ...f.push(two.subarray(10, 300)), ...f.push(two.subarray(300))];
  t.equal(frames.filter((x) => x.message).length, 2);
  const big = createStreamFramer().push(Buffer.from('INVITE sip:a@b SIP/2.0\r\nContent-Length: 99999999\r\n\r\n'));
  t.equal(big[0]?.error?.reason, 'body too large');
  const noLen = createStreamFramer().push(
    Buffer.from('OPTIONS sip:a@b SIP/2.0\r\nVia: SIP/2.0/TCP h;branch=z9hG4bK1\r\n\r\n'),
  );
  t.equal(noLen[0]?.error?.reason, 'missing Content-Length');
  t.equal((noLen[0]?.error as SipMessageError).headers.length, 1);
});

t.test('random bytes and truncations never crash or hang', async (t) => {
  const corpus = [...Object.values(valid), ...Object.values(invalid).map((x) => x.msg)];
  let thrown = 0;
  const started = Date.now();
  for (let i = 0; i < 3000; i++) {
    const base = corpus[i % corpus.length] as Buffer;
    let buf: Buffer;
    if (i % 3 === 0) buf = base.subarray(0, Math.floor(Math.random() * base.length));
    else if (i % 3 === 1) {
      buf = Buffer.from(base);
      for (let k = 0; k < 5; k++) buf[Math.floor(Math.random() * buf.length)] = Math.floor(Math.random() * 256);
    } else buf = randomBytes(1 + Math.floor(Math.random() * 600));
    try {
      parseMessage(buf, { datagram: i % 2 === 0 });
      createStreamFramer().push(buf);
    } catch (err) {
      if (!(err instanceof SipParseError)) throw err;
      thrown++;
    }
  }
  t.ok(thrown > 1000, 'most mutations refused with SipParseError');
  t.ok(Date.now() - started < 5000, 'fast');
});

t.test(
  'header lines: LF or CRLF endings, space before the colon, a line without a colon among lines with one',
  async (t) => {
    const head = [
      'OPTIONS sip:x@example.com SIP/2.0',
      'Via: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bKlines',
      'From: <sip:a@example.com>;tag=1',
      'To: <sip:x@example.com>',
      'Call-ID: lines',
      'CSeq: 1 OPTIONS',
      'Subject \t: spaced name',
      'X-Folded: one',
      ' two',
    ];
    for (const [label, text] of [
      ['CRLF', head.join('\r\n') + '\r\n\r\n'],
      ['LF', head.join('\n') + '\n\n'],
      ['mixed, ended by CRLF LF', head.join('\n') + '\r\n\n'],
    ] as const) {
      const m = parseMessage(Buffer.from(text), { datagram: true });
      t.equal(m.kind === 'request' && m.uri, 'sip:x@example.com', label);
      t.equal(m.headers.length, 7, label);
      t.same(
        m.headers.map((h) => [h.name, h.value, h.key]).slice(5),
        [
          ['Subject', 'spaced name', 'subject'],
          ['X-Folded', 'one two', 'x-folded'],
        ],
        label,
      );
      t.equal(m.body.length, 0, label);
    }
    const reasonOf = (text: string): string | undefined => {
      try {
        parseMessage(Buffer.from(text), { datagram: true });
        return undefined;
      } catch (err) {
        return (err as SipParseError).reason;
      }
    };
    const noColon = [...head.slice(0, 6), 'NoColonHere', 'X-After: a:b'].join('\r\n') + '\r\n\r\n';
    t.equal(reasonOf(noColon), 'header line without colon');
    const badName = [...head.slice(0, 6), 'Bad Name: x'].join('\r\n') + '\r\n\r\n';
    t.equal(reasonOf(badName), 'bad header name');
    const folded = ['OPTIONS sip:x@example.com SIP/2.0', ' folded: first'].join('\r\n') + '\r\n\r\n';
    t.equal(reasonOf(folded), 'continuation line without header');
  },
);

t.test('a body kept for a call (its SDP) is copied out of the shared pool; serialize(own) too', async (t) => {
  const sdp = 'v=0\r\no=- 1 1 IN IP4 192.0.2.1\r\ns=-\r\nc=IN IP4 192.0.2.1\r\nt=0 0\r\nm=audio 4000 RTP/AVP 0\r\n';
  const text =
    'INVITE sip:x@example.com SIP/2.0\r\nVia: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bKsdp\r\nFrom: <sip:a@example.com>;tag=1\r\n' +
    `To: <sip:x@example.com>\r\nCall-ID: sdp\r\nCSeq: 1 INVITE\r\nContent-Length: ${sdp.length}\r\n\r\n${sdp}`;
  const m = parseMessage(Buffer.from(text), { datagram: true });
  t.ok(m.body.buffer.byteLength > m.body.length, 'a parsed body is a slice of a larger (pool) block');
  const kept = detachedBytes(m.body);
  t.equal(kept.toString(), sdp);
  t.equal(kept.buffer.byteLength, sdp.length, 'the kept copy holds only itself');
  const wire = serialize(m, true);
  t.equal(wire.buffer.byteLength, wire.length);
  t.same(wire, serialize(m));
  t.equal(parseMessage(wire, { datagram: true }).body.toString(), sdp);
});

t.test('start lines: what the request and status line regexes accepted, and nothing more', async (t) => {
  const headers = [
    'Via: SIP/2.0/UDP 127.0.0.1:5060;branch=z9hG4bKsl1',
    'From: <sip:a@127.0.0.1>;tag=1',
    'To: <sip:b@127.0.0.1>',
    'Call-ID: sl1',
    'CSeq: 1 INVITE',
    'Content-Length: 0',
  ];
  const parse = (line: string) => {
    try {
      return parseMessage(Buffer.from([line, ...headers, '', ''].join('\r\n')), { datagram: true });
    } catch (err) {
      return err as SipMessageError;
    }
  };
  const reason = (line: string) => {
    const m = parse(line);
    return m instanceof Error ? `${m.status} ${m.reason}` : m.kind === 'response' ? `${m.status}|${m.reason}` : m.uri;
  };
  t.equal(reason('SIP/2.0 180 Ringing'), '180|Ringing');
  t.equal(reason('SIP/2.0 200'), '200|', 'no reason phrase');
  t.equal(reason('SIP/2.0 200 '), '200|', 'an empty one');
  t.equal(reason('SIP/2.0 200 OK  then  more'), '200|OK  then  more', 'spaces inside the phrase kept');
  t.equal(reason('SIP/2.0  200 OK'), '400 bad status line', 'two spaces before the code');
  t.equal(reason('SIP/2.0 2000 OK'), '400 bad status line');
  t.equal(reason('SIP/2.0 200\tOK'), '400 bad status line');
  t.equal(reason('SIP/2.0 200 O\u2028K'), '400 bad status line', 'a line terminator in the phrase');
  t.equal(reason('SIP/2.0 099 Low'), '400 bad status code');
  t.equal(reason('SIP/3.0 200 OK'), '400 SIP version not supported');
  t.equal(reason('INVITE sip:b@127.0.0.1 SIP/2.0'), 'sip:b@127.0.0.1');
  t.equal(reason('INVITE sip:b@127.0.0.1 sip/2.0'), 'sip:b@127.0.0.1', 'the version in any case');
  t.equal(reason('INVITE sip:b@127.0.0.1 SIP/2.1'), '505 SIP version not supported');
  t.equal(reason('INVITE sip:b@127.0.0.1 SIP/two'), '400 bad request line');
  t.equal(reason('INVITE  sip:b@127.0.0.1 SIP/2.0'), '400 bad request line', 'two spaces');
  t.equal(reason('INVITE sip:b@127.0.0.1 SIP/2.0 '), '400 bad request line', 'a trailing space');
  t.equal(reason('INVITE sip:b@127.0.0.1'), '400 bad request line', 'no version');
  t.equal(reason('INVITE\tsip:b@127.0.0.1 SIP/2.0'), '400 bad request line', 'a tab is no separator');
});
