import t from 'tap';
import { newId } from '../../src/platform/ids.js';

// newId formats the generator's bytes itself (src/platform/ids.ts): what every table's cursor order
// and PostgreSQL's uuid input rely on is checked here over enough ids to wrap its random pool many times.
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

t.test('ids are RFC 9562 version 7, unique, and in creation order', (t) => {
  const before = Date.now();
  const ids = Array.from({ length: 20_000 }, () => newId());
  const after = Date.now();
  t.equal(ids.filter((id) => !UUID_V7.test(id)).length, 0, 'every id is a lower-case version 7 uuid');
  t.equal(new Set(ids).size, ids.length, 'no id repeats');
  t.ok(
    ids.every((id, i) => i === 0 || ids[i - 1]! < id),
    'each id sorts after the one made before it',
  );
  const ms = (id: string) => parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
  t.ok(ms(ids[0]!) >= before && ms(ids.at(-1)!) <= after, 'the first 48 bits are the creation time in ms');
  t.end();
});

t.test('the random bits vary: no nibble position is stuck', (t) => {
  const ids = Array.from({ length: 2_000 }, () => newId());
  // The last 32 bits are fresh random bits in every id (the bits before them are a counter within
  // a millisecond, as RFC 9562's method 1 allows); each of their digits takes many values.
  const stuck = Array.from({ length: 8 }, (_, k) => new Set(ids.map((id) => id[28 + k])).size).filter((n) => n < 12);
  t.same(stuck, [], 'each of the last eight digits takes at least 12 of 16 values');
  t.end();
});
