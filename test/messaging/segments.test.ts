import t from 'tap';
import { decodeGsm7, encodeGsm7, gsm7Length, isGsm7 } from '../../src/messaging/gsm7.js';
import { countSegments, needsUcs2, splitForWire } from '../../src/messaging/segments.js';
import { createReassembler, decodeByDataCoding, readInboundPart } from '../../src/messaging/inbound.js';
import { checkSender } from '../../src/messaging/sender.js';

t.test('GSM 03.38 tables', async (t) => {
  t.ok(isGsm7('Hello @£$¥ èéùìò ÄÖÑÜ§ äöñüà ΔΦΓΛΩΠΨΣΘΞ'));
  t.equal(gsm7Length('abc'), 3);
  t.equal(gsm7Length('€[]{}|^~\\'), 18, 'extension characters count two septets');
  t.notOk(isGsm7('café ç'), 'ç is not in the default alphabet (Ç is)');
  t.same([...encodeGsm7('@€A')], [0x00, 0x1b, 0x65, 0x41]);
  t.equal(decodeGsm7(encodeGsm7('Price: 5€ [x] {y} ~z | \\ ^')), 'Price: 5€ [x] {y} ~z | \\ ^');
  t.equal(decodeGsm7(Buffer.from([0x1b, 0x41])), 'A', 'unknown escape shows the basic character');
  t.throws(() => encodeGsm7('😀'));
});

t.test('segment counts as billed', async (t) => {
  t.match(countSegments('a'.repeat(160)), { encoding: 'gsm7', dataCoding: 0, segments: 1, units: 160 });
  t.match(countSegments('a'.repeat(161)), { segments: 2 });
  t.match(countSegments('a'.repeat(306)), { segments: 2 });
  t.match(countSegments('a'.repeat(307)), { segments: 3 });
  t.match(countSegments('€'.repeat(80)), { segments: 1, units: 160 }, 'extension chars count two');
  t.match(countSegments('€'.repeat(81)), { segments: 2 });
  t.match(countSegments('ж'.repeat(70)), { encoding: 'ucs2', dataCoding: 8, segments: 1 });
  t.match(countSegments('ж'.repeat(71)), { segments: 2 });
  t.match(countSegments('ж'.repeat(134)), { segments: 2 });
  t.match(countSegments('ж'.repeat(135)), { segments: 3 });
  t.match(countSegments('😀'.repeat(35)), { segments: 1, units: 70 }, 'surrogate pairs count two units');
  t.ok(needsUcs2('hi 😀'));
  t.notOk(needsUcs2('hi €'));
  t.match(countSegments(''), { segments: 1 });
});

t.test('wire split: UDH, no escape or surrogate pair split', async (t) => {
  const single = splitForWire('hello', { reference: 7 });
  t.equal(single.length, 1);
  t.equal(single[0]?.esmClass, 0);
  t.equal(single[0]?.dataCoding, 0);
  t.same([...(single[0]?.shortMessage ?? [])], [...Buffer.from('hello')]);

  // 152 plain + '€' would put the escape pair across the 153 boundary
  const text = 'a'.repeat(152) + '€' + 'b'.repeat(10);
  const parts = splitForWire(text, { reference: 0x1ff });
  t.equal(parts.length, 2);
  t.same([...(parts[0]?.shortMessage.subarray(0, 6) ?? [])], [0x05, 0x00, 0x03, 0xff, 2, 1]);
  t.same([...(parts[1]?.shortMessage.subarray(0, 6) ?? [])], [0x05, 0x00, 0x03, 0xff, 2, 2]);
  t.equal(parts[0]?.shortMessage.length, 6 + 152, 'escape pair moved whole to the next part');
  t.equal(parts[1]?.text, '€' + 'b'.repeat(10));
  t.equal(parts[0]?.esmClass, 0x40);

  const emoji = 'x'.repeat(66) + '😀' + 'yyyyy';
  const u = splitForWire(emoji, { reference: 1 });
  t.equal(u.length, 2);
  t.equal(u[0]?.dataCoding, 8);
  t.equal(u[0]?.text, 'x'.repeat(66), 'surrogate pair not split at unit 67');
  t.equal(u[1]?.text, '😀yyyyy');
  t.equal(u.map((p) => p.text).join(''), emoji);
  for (const p of u) t.ok(p.shortMessage.length - 6 <= 134);
});

t.test('decoding by data_coding', async (t) => {
  t.equal(decodeByDataCoding(Buffer.from([0x00, 0x1b, 0x65]), 0), '@€');
  t.equal(decodeByDataCoding(Buffer.from('caf\xe9', 'latin1'), 3), 'café');
  t.equal(decodeByDataCoding(Buffer.from('abc', 'latin1'), 1), 'abc');
  t.equal(decodeByDataCoding(Buffer.from('d83dde00', 'hex'), 8), '😀');
  t.equal(decodeByDataCoding(Buffer.from([1, 2]), 4), null, 'binary is not taken');
});

t.test('reassembly: 8-bit UDH, 16-bit UDH, sar TLVs, message_payload', async (t) => {
  let now = 0;
  const r = createReassembler({ holdMs: 1000, now: () => now });
  const text = 'Ω'.repeat(100) + '😀' + 'end';
  const parts = splitForWire(text, { reference: 9 });
  t.equal(parts.length, 2);
  const p2 = readInboundPart({ esmClass: 0x40, dataCoding: 8, shortMessage: parts[1]!.shortMessage });
  t.equal(r.add('k', p2!), 'pending', 'out-of-order part held');
  const whole = r.add('k', readInboundPart({ esmClass: 0x40, dataCoding: 8, shortMessage: parts[0]!.shortMessage })!);
  t.same(whole, { text, dataCoding: 8, parts: 2, earlierTags: [] });

  // 16-bit reference, a surrogate pair split across parts by the sender still decodes
  const bytes = Buffer.from('d83dde00', 'hex');
  const a = Buffer.concat([Buffer.from([6, 0x08, 4, 0x12, 0x34, 2, 1]), bytes.subarray(0, 2)]);
  const b = Buffer.concat([Buffer.from([6, 0x08, 4, 0x12, 0x34, 2, 2]), bytes.subarray(2)]);
  t.equal(r.add('k2', readInboundPart({ esmClass: 0x40, dataCoding: 8, shortMessage: a })!), 'pending');
  t.same(r.add('k2', readInboundPart({ esmClass: 0x40, dataCoding: 8, shortMessage: b })!), {
    text: '😀',
    dataCoding: 8,
    parts: 2,
    earlierTags: [],
  });

  const s1 = readInboundPart({
    esmClass: 0,
    dataCoding: 0,
    shortMessage: encodeGsm7('Hello '),
    sarMsgRefNum: 300,
    sarTotalSegments: 2,
    sarSegmentSeqnum: 1,
  });
  const s2 = readInboundPart({
    esmClass: 0,
    dataCoding: 0,
    shortMessage: encodeGsm7('world €'),
    sarMsgRefNum: 300,
    sarTotalSegments: 2,
    sarSegmentSeqnum: 2,
  });
  t.equal(r.add('k3', s1!), 'pending');
  t.match(r.add('k3', s2!), { text: 'Hello world €', parts: 2 });

  const mp = readInboundPart({
    esmClass: 0,
    dataCoding: 0,
    shortMessage: Buffer.alloc(0),
    messagePayload: encodeGsm7('z'.repeat(400)),
  });
  t.match(r.add('k4', mp!), { text: 'z'.repeat(400), parts: 1 });

  t.equal(
    r.add('k5', readInboundPart({ esmClass: 0x40, dataCoding: 0, shortMessage: parts[0]!.shortMessage })!),
    'pending',
  );
  t.equal(r.size, 1);
  now = 2000;
  t.equal(r.sweep(), 1, 'incomplete message dropped after hold time');
  t.equal(r.size, 0);
  t.equal(
    readInboundPart({ esmClass: 0x40, dataCoding: 0, shortMessage: Buffer.from([9, 0, 3]) }),
    null,
    'truncated UDH',
  );
});

t.test('sender validation and TON/NPI', async (t) => {
  t.match(checkSender('+447700900123'), { ok: true, kind: 'numeric', value: '447700900123', ton: 1, npi: 1 });
  t.match(checkSender('12345'), { ok: true, kind: 'numeric', ton: 2, npi: 1 });
  t.match(checkSender('1'.repeat(16)), { ok: false, reason: 'numeric_too_long' });
  t.match(checkSender('MyShop'), { ok: true, kind: 'alphanumeric', ton: 5, npi: 0 });
  t.match(checkSender('ABCDEFGHIJK'), { ok: true });
  t.match(checkSender('ABCDEFGHIJKL'), { ok: false, reason: 'alphanumeric_too_long' });
  t.match(checkSender('ABCDEFGHIJ€'), { ok: false, reason: 'invalid_characters' });
  for (const bad of ['=2+5', '+1a', '-1', '@x', 'a\tb', 'a\rb', 'Shop.com', 'A-B']) {
    t.match(checkSender(bad), { ok: false, reason: 'invalid_characters' }, JSON.stringify(bad));
  }
  t.match(checkSender('My Shop 24'), { ok: true, kind: 'alphanumeric', value: 'My Shop 24' });
  t.match(checkSender('Shop😀'), { ok: false, reason: 'invalid_characters' });
  t.match(checkSender(' '), { ok: false, reason: 'empty' });
});
