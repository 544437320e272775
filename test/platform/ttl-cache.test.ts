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
