import t from 'tap';
import { buildRtp, parseRtp, sequenceAfter } from '../../../src/telephony/media/rtp.js';

t.test('build then parse gives the same packet', async (t) => {
  const payload = Uint8Array.from({ length: 160 }, (_, i) => i);
  const buf = buildRtp({
    payloadType: 8,
    marker: true,
    sequence: 65535,
    timestamp: 0xfffffff0,
    ssrc: 0xdeadbeef,
    payload,
  });
  t.equal(buf.length, 172);
  t.equal(buf[0], 0x80);
  t.equal(buf[1], 0x88);
  const p = parseRtp(buf);
  t.ok(p);
  t.same(
    { ...p, payload: [...(p?.payload ?? [])] },
    { payloadType: 8, marker: true, sequence: 65535, timestamp: 0xfffffff0, ssrc: 0xdeadbeef, payload: [...payload] },
  );
});

t.test('parse honours CSRCs, extension and padding; rejects junk', async (t) => {
  const b = Buffer.alloc(12 + 4 + 8 + 3 + 2);
  b[0] = 0x80 | 0x20 | 0x10 | 1; // padding, extension, 1 CSRC
  b[1] = 0;
  b.writeUInt16BE(1, 16 + 2); // extension length 1 word
  b[24] = 0xaa;
  b[25] = 0xbb;
  b[26] = 0xcc;
  b[27] = 0;
  b[28] = 2; // two padding bytes, the last one holds the count
  const p = parseRtp(b.subarray(0, 29));
  t.same([...(p?.payload ?? [])], [0xaa, 0xbb, 0xcc]);
  t.equal(parseRtp(Buffer.alloc(8)), null, 'too short');
  t.equal(parseRtp(Buffer.from([0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])), null, 'version 1');
  t.equal(parseRtp(Buffer.from([0x80, 200, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])), null, 'RTCP sender report');
});

t.test('sequence comparison wraps', async (t) => {
  t.ok(sequenceAfter(1, 65535));
  t.notOk(sequenceAfter(65535, 1));
  t.notOk(sequenceAfter(5, 5));
});
