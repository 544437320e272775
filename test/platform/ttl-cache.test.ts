import t from 'tap';
import { createManualClock } from '../../src/platform/clock.js';
import { createTtlCache } from '../../src/platform/ttl-cache.js';

t.test('entries expire by the injected clock', async (t) => {
  const clock = createManualClock();
  const c = createTtlCache<string, string | null>(1000, clock);
  c.set('key', 'row');
  c.set('missing', null);
  t.equal(c.get('key'), 'row');
  t.equal(c.get('missing'), null, 'a cached "not found" is a hit, not a miss');
  clock.advance(1000);
  t.equal(c.get('key'), 'row', 'still fresh at its ttl');
  clock.advance(1);
  t.equal(c.get('key'), undefined, 'expired past its ttl');
  t.equal(c.get('missing'), undefined);
});

t.test('a ttl of 0 keeps nothing', async (t) => {
  const c = createTtlCache<string, string>(0, createManualClock());
  c.set('key', 'row');
  t.equal(c.get('key'), undefined);
});

t.test('delete and clear', async (t) => {
  const c = createTtlCache<string, number>(1000, createManualClock());
  c.set('a', 1);
  c.set('b', 2);
  c.delete('a');
  t.equal(c.get('a'), undefined);
  t.equal(c.get('b'), 2);
  c.clear();
  t.equal(c.get('b'), undefined);
});

// A flood of distinct keys (credentials, source addresses) must not push out the entries in use:
// past the bound the least recently used entry goes, never the whole map.
t.test('bounded: a flood evicts the least recently used, not the entries in use', async (t) => {
  const c = createTtlCache<string, string>(60_000, createManualClock(), 3);
  c.set('hot', 'h');
  c.set('b', 'b');
  c.set('c', 'c');
  for (let i = 0; i < 10; i++) {
    t.equal(c.get('hot'), 'h', `in use during the flood (${i})`);
    c.set(`flood-${i}`, 'x');
  }
  t.equal(c.get('b'), undefined, 'an idle entry went');
  t.equal(c.get('flood-9'), 'x');
});

// The cache starts with a few hundred slots and grows: entries set before a growth keep their
// values, their remaining time and their order of use.
t.test('grows past its first slots up to the bound, keeping values, expiry and order of use', async (t) => {
  const clock = createManualClock();
  const c = createTtlCache<string, number>(10_000, clock, 5_000);
  c.set('early', -1);
  clock.advance(6_000);
  for (let i = 0; i < 4_999; i++) c.set(`k${i}`, i);
  t.equal(c.get('early'), -1, 'the first entry survived every growth');
  t.equal(c.get('k0'), 0);
  t.equal(c.get('k4998'), 4998);
  clock.advance(4_001);
  t.equal(c.get('early'), undefined, 'and expired at its own time, not the time it was moved');
  t.equal(c.get('k0'), 0, 'later entries are still fresh');
  c.set('one-more', 1);
  c.set('and-another', 2);
  t.equal(c.get('k1'), undefined, 'at the bound the least recently used goes');
  t.equal(c.get('k0'), 0, 'the one just used stays');
  t.equal(c.get('and-another'), 2);
});

t.test('expired entries make room before the cache grows', async (t) => {
  const clock = createManualClock();
  const c = createTtlCache<string, number>(1_000, clock, 300);
  for (let i = 0; i < 256; i++) c.set(`old${i}`, i);
  clock.advance(1_001);
  for (let i = 0; i < 256; i++) c.set(`new${i}`, i);
  t.equal(c.get('old0'), undefined);
  t.equal(c.get('new0'), 0, 'the first of the new entries is kept');
  t.equal(c.get('new255'), 255);
});
