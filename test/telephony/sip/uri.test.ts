import t from 'tap';
import { formatUri, parseUri } from '../../../src/telephony/sip/headers.js';
import { SipParseError } from '../../../src/telephony/sip/parser.js';

// RFC 3261 §19.1 URIs as the parser reads them: the common sip/sips forms take a path without regex
// matches, so each shape (and each refusal) is pinned here.

t.test('sip and sips URIs: user, password, host, port, parameters, headers', async (t) => {
  t.same(parseUri('sip:alice@Example.COM'), {
    scheme: 'sip',
    user: 'alice',
    host: 'example.com',
    params: {},
    headers: {},
  });
  t.same(parseUri('sips:bob:secret@10.0.0.1:5061;transport=tcp;lr'), {
    scheme: 'sips',
    user: 'bob',
    password: 'secret',
    host: '10.0.0.1',
    port: 5061,
    params: { transport: 'tcp', lr: null },
    headers: {},
  });
  t.same(parseUri('SIP:441100000001@gw.test:5060?Subject=hi&Priority=urgent'), {
    scheme: 'sip',
    user: '441100000001',
    host: 'gw.test',
    port: 5060,
    params: {},
    headers: { Subject: 'hi', Priority: 'urgent' },
  });
  t.same(parseUri('  sip:[2001:DB8::10]:5070;maddr=x  '), {
    scheme: 'sip',
    host: '[2001:db8::10]',
    port: 5070,
    params: { maddr: 'x' },
    headers: {},
  });
  t.same(parseUri('sip:[::1]'), { scheme: 'sip', host: '[::1]', params: {}, headers: {} });
  t.equal(parseUri('sip:host:65535').port, 65535);
  t.equal(parseUri('sip:host:0').port, 0);
});

t.test('other schemes keep their text after the colon', async (t) => {
  t.same(parseUri('tel:+441100000001;phone-context=x'), {
    scheme: 'tel',
    host: '+441100000001;phone-context=x',
    params: {},
    headers: {},
  });
  t.equal(parseUri('SIPX:abc').scheme, 'sipx');
  t.equal(parseUri('urn:service:sos').host, 'service:sos');
});

t.test('malformed URIs are refused with the reason', async (t) => {
  const cases: [string, RegExp][] = [
    ['', /whitespace/],
    ['sip:a b@host', /whitespace/],
    ['alice@host', /no scheme/],
    [':host', /no scheme/],
    ['1sip:host', /scheme/],
    ['sip:@host', /empty user/],
    ['sip:host:5060:1', /host/],
    ['sip:host:', /host/],
    ['sip:host:123456', /host/],
    ['sip:host:65536', /port/],
    ['sip:host:50a', /host/],
    ['sip:[::1', /host/],
    ['sip:[::1]x', /host/],
    ['sip:[::1]:', /host/],
    ['sip:', /host/],
    ['sip:ho_st', /host/],
    ['sip:host;', /empty parameter/],
    ['sip:host;=x', /parameter name/],
    ['sip:host?=x', /header/],
  ];
  for (const [text, reason] of cases) {
    t.throws(() => parseUri(text), SipParseError, text);
    t.throws(() => parseUri(text), reason, text);
  }
});

t.test('a parsed URI formats back to the same URI', async (t) => {
  for (const text of [
    'sip:alice@example.com',
    'sips:bob:pw@10.0.0.1:5061;transport=tcp;lr',
    'sip:[2001:db8::1]:5070',
  ]) {
    t.equal(formatUri(parseUri(text)), text);
  }
});
