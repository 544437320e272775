import t from 'tap';
import { randomBytes } from 'node:crypto';
import { parseMessage, SipParseError } from '../../../src/telephony/sip/parser.js';
import {
  contactsOf,
  createResponse,
  cseqOf,
  fromOf,
  recordRoutesOf,
  requestUriOf,
  serialize,
  setHeader,
  tagOf,
  toOf,
  topVia,
  vias,
  type SipMessage,
  type SipRequest,
} from '../../../src/telephony/sip/message.js';
import { parseUri, splitOutside } from '../../../src/telephony/sip/headers.js';
import { createUacDialog, createUasDialog, dialogRequest } from '../../../src/telephony/sip/dialog.js';
import { stampVia } from '../../../src/telephony/sip/transport.js';
import { invalid, valid } from './torture-fixtures.js';

const INVITE = [
  'INVITE sip:12025550123@127.0.0.1:5060 SIP/2.0',
  'Via: SIP/2.0/UDP 10.0.0.7:5061;branch=z9hG4bK-1;rport',
  'Via: SIP/2.0/UDP 10.0.0.8;branch=z9hG4bK-0',
  'From: "Alice" <sip:15550001111@10.0.0.7:5061>;tag=from1',
  'To: <sip:12025550123@127.0.0.1:5060>',
  'Call-ID: c1@10.0.0.7',
  'CSeq: 2 INVITE',
  'Contact: <sip:a@10.0.0.7:5061>',
  'Record-Route: <sip:p1.example.net;lr>, <sip:p2.example.net;lr>',
  'Content-Length: 0',
  '',
  '',
].join('\r\n');

const parse = (text = INVITE): SipRequest => {
  const m = parseMessage(Buffer.from(text), { datagram: true });
  if (m.kind !== 'request') throw new Error('expected a request');
  return m;
};

t.test('each header line is parsed once: readers share one frozen view', async (t) => {
  const m = parse();
  t.equal(fromOf(m), fromOf(m), 'From view reused');
  t.equal(toOf(m), toOf(m), 'To view reused');
  t.equal(cseqOf(m), cseqOf(m), 'CSeq view reused');
  t.equal(topVia(m), vias(m)[0], 'top Via is the first of the Via list');
  t.equal(vias(m).length, 2);
  t.ok(Object.isFrozen(fromOf(m)) && Object.isFrozen(fromOf(m).params) && Object.isFrozen(fromOf(m).uri.params));
  t.throws(() => {
    (fromOf(m).params as Record<string, string>)['tag'] = 'forged';
  }, TypeError);
  t.throws(() => {
    (topVia(m).params as Record<string, string>)['received'] = 'x';
  }, TypeError);
  t.throws(() => (contactsOf(m) as unknown[]).push(1), TypeError, 'a one-line list view is frozen too');
  t.equal(tagOf(fromOf(m)), 'from1', 'a refused write left the view as parsed');
});

t.test('a changed header is a new line with a new view', async (t) => {
  const m = parse();
  const before = toOf(m);
  setHeader(m, 'To', '<sip:12025550123@127.0.0.1:5060>;tag=ours');
  t.equal(tagOf(toOf(m)), 'ours');
  t.equal(tagOf(before), undefined, 'the old view is untouched');
  // A line whose text is rewritten in place is parsed again rather than answered from the old view.
  const line = m.headers.find((h) => h.name === 'CSeq');
  t.equal(cseqOf(m).seq, 2);
  if (line) line.value = '3 INVITE';
  t.equal(cseqOf(m).seq, 3);
});

t.test('stampVia: a new top Via line, the parsed original untouched', async (t) => {
  const m = parse();
  const original = topVia(m);
  stampVia(m.headers, { transport: 'udp', host: '192.0.2.1', port: 40000 });
  t.equal(original.params['received'], undefined, 'the shared view was not edited');
  t.equal(original.params['rport'], null);
  const v = topVia(m);
  t.equal(v.params['received'], '192.0.2.1');
  t.equal(v.params['rport'], '40000');
  t.equal(v.params['branch'], 'z9hG4bK-1');
  t.equal(vias(m).length, 2, 'the second Via kept');
  // What the stamp primed is what a fresh parse of the stamped text reads.
  const again = parse(serialize(m).toString());
  t.same(vias(again), vias(m));
  t.match(
    serialize(m).toString(),
    /Via: SIP\/2\.0\/UDP 10\.0\.0\.7:5061;branch=z9hG4bK-1;rport=40000;received=192\.0\.2\.1\r\n/,
  );

  const same = parse(INVITE.replace(';rport', ''));
  const line = same.headers.find((h) => h.name === 'Via');
  stampVia(same.headers, { transport: 'udp', host: '10.0.0.7', port: 5061 });
  t.equal(
    same.headers.find((h) => h.name === 'Via'),
    line,
    'a Via from its own address with no rport is left as it came',
  );
});

t.test('responses share the request lines; the To with our tag is its own line', async (t) => {
  const m = parse();
  const res = createResponse(m, 200, 'OK', { toTag: 'ours' });
  t.equal(topVia(res), topVia(m), 'Via view shared with the request');
  t.equal(fromOf(res), fromOf(m));
  t.equal(tagOf(toOf(res)), 'ours');
  t.equal(tagOf(toOf(m)), undefined, 'the request To keeps no tag');
  const trying = createResponse(m, 100, 'Trying', { toTag: 'ours' });
  t.equal(tagOf(toOf(trying)), undefined, 'no tag on 100');
});

t.test('the dialog reverses its own copy of the Record-Route list', async (t) => {
  const m = parse();
  const res = createResponse(m, 200, 'OK', { toTag: 'ours' });
  res.headers.push(...m.headers.filter((h) => h.name === 'Record-Route'));
  const d = createUacDialog(m, res, 'udp', 'sip:b2bua@127.0.0.1');
  t.same(d.routeSet, ['<sip:p2.example.net;lr>', '<sip:p1.example.net;lr>']);
  t.same(
    recordRoutesOf(res).map((r) => r.uri.host),
    ['p1.example.net', 'p2.example.net'],
    'the shared view keeps the order on the wire',
  );
});

t.test('the Request-URI is parsed once per request, frozen, and again when the text changes', async (t) => {
  const m = parse();
  const uri = requestUriOf(m);
  t.equal(requestUriOf(m), uri, 'the parser validation and every later reader share one view');
  t.same(uri, parseUri(m.uri));
  t.ok(Object.isFrozen(uri) && Object.isFrozen(uri.params) && Object.isFrozen(uri.headers));
  m.uri = 'sip:441100000001@127.0.0.1:5060';
  t.equal(requestUriOf(m).user, '441100000001', 'a replaced URI is read afresh');
  const bad: SipRequest = { ...m, uri: 'sip:a b' };
  t.throws(() => requestUriOf(bad), SipParseError, 'a bad URI throws as parseUri does');
});

t.test('dialogs built from the shared views: the same From/To text, the views untouched', async (t) => {
  const m = parse(
    INVITE.replace('To: <sip:12025550123@127.0.0.1:5060>', 'To: "Bob" <sip:12025550123@127.0.0.1:5060>;x=1'),
  );
  const uas = createUasDialog(m, 'ours', 'udp', 'sip:b2bua@127.0.0.1');
  t.equal(uas.localAddr, '"Bob" <sip:12025550123@127.0.0.1:5060>;x=1;tag=ours');
  t.equal(uas.remoteAddr, '"Alice" <sip:15550001111@10.0.0.7:5061>;tag=from1');
  t.equal(uas.remoteTag, 'from1');
  t.equal(tagOf(toOf(m)), undefined, "the request's To view keeps no tag");
  const res = createResponse(m, 200, 'OK', { toTag: 'theirs' });
  const uac = createUacDialog(m, res, 'udp', 'sip:b2bua@127.0.0.1');
  t.equal(uac.remoteAddr, '"Bob" <sip:12025550123@127.0.0.1:5060>;x=1;tag=theirs');
  t.equal(uac.localTag, 'from1');
  // The next hop is read again when a target refresh changes the remote target.
  uac.remoteTarget = 'sip:a@10.0.0.7:5061';
  t.same(dialogRequest(uac, 'BYE').dest, { transport: 'udp', host: '10.0.0.7', port: 5061 });
  uac.remoteTarget = 'sip:a@10.0.0.9:5070;transport=tcp';
  t.same(dialogRequest(uac, 'BYE').dest, { transport: 'tcp', host: '10.0.0.9', port: 5070 });
  uac.routeSet = ['<sip:p9.example.net:5080;lr>'];
  t.same(dialogRequest(uac, 'BYE').dest, { transport: 'udp', host: 'p9.example.net', port: 5080 });
});

/** A splitter written as a small state machine, building each part a character at a time: the oracle. */
function splitReference(value: string, sep: string): string[] {
  const parts = [''];
  let state: 'plain' | 'quoted' | 'escaped' = 'plain';
  let angle = false;
  for (const ch of value) {
    if (state === 'escaped') state = 'quoted';
    else if (state === 'quoted') state = ch === '\\' ? 'escaped' : ch === '"' ? 'plain' : 'quoted';
    else if (ch === sep && !angle) {
      parts.push('');
      continue;
    } else if (ch === '"') state = 'quoted';
    else if (ch === '<' || ch === '>') angle = ch === '<';
    parts[parts.length - 1] += ch;
  }
  if (state !== 'plain') throw new SipParseError('unterminated quoted string');
  return parts;
}

t.test('splitOutside fuzz: the same parts as the reference splitter', async (t) => {
  const alphabet = ['a', 'b', ' ', ',', ';', '"', '\\', '<', '>', '=', ':', '@'];
  let compared = 0;
  let refused = 0;
  for (let i = 0; i < 20000; i++) {
    const bytes = randomBytes(1 + (i % 40));
    const s = [...bytes].map((b) => alphabet[b % alphabet.length]).join('');
    for (const sep of [',', ';']) {
      let want: string[] | Error;
      try {
        want = splitReference(s, sep);
      } catch (err) {
        want = err as Error;
      }
      if (want instanceof Error) {
        t.throws(() => splitOutside(s, sep), SipParseError);
        refused++;
      } else {
        const got = splitOutside(s, sep);
        if (got.join('\u0000') !== want.join('\u0000')) t.same(got, want, JSON.stringify(s));
        compared++;
      }
    }
  }
  t.ok(compared > 10000 && refused > 1000, `${compared} compared, ${refused} refused alike`);
});

t.test('fuzz: parsed views of mutated torture messages match a fresh parse of the same bytes', async (t) => {
  const corpus = [...Object.values(valid), ...Object.values(invalid).map((x) => x.msg)];
  let checked = 0;
  for (let i = 0; i < 3000; i++) {
    const buf = Buffer.from(corpus[i % corpus.length] as Buffer);
    for (let k = 0; k < 3; k++) buf[Math.floor(Math.random() * buf.length)] = Math.floor(Math.random() * 256);
    let a;
    let b;
    try {
      a = parseMessage(buf, { datagram: true });
      b = parseMessage(buf, { datagram: true });
    } catch (err) {
      if (!(err instanceof SipParseError)) throw err;
      continue;
    }
    // Responses' Contacts are not checked by the parser: reading them may throw, alike for both.
    const read = (m: SipMessage): string => {
      try {
        return JSON.stringify([fromOf(m), toOf(m), cseqOf(m), vias(m), contactsOf(m)]);
      } catch (err) {
        if (!(err instanceof SipParseError)) throw err;
        return `refused: ${err.reason}`;
      }
    };
    // The first message's views are read twice (the second time from the cache), the second's once.
    read(a);
    if (read(a) !== read(b)) t.fail(`views differ for ${JSON.stringify(buf.toString('latin1').slice(0, 80))}`);
    checked++;
  }
  t.ok(checked > 100, `${checked} mutated messages parsed and compared`);
});
