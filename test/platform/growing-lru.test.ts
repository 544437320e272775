import t from 'tap';
import { createGrowingLru } from '../../src/platform/growing-lru.js';

t.test('grows past its first slots up to the bound; at the bound the least recently used goes', async (t) => {
  const m = createGrowingLru<string, number>(1_000);
  for (let i = 0; i < 1_000; i++) m.set(`k${i}`, i);
  t.equal(m.get('k0'), 0, 'the first entry survived every growth');
  t.equal(m.get('k999'), 999);
  m.set('over', -1);
  t.equal(m.get('k1'), undefined, 'the least recently used went');
  t.equal(m.get('k0'), 0, 'the one used after it was set stays');
  t.equal(m.get('over'), -1);
});

t.test('delete and clear reach entries set before a growth', async (t) => {
  const m = createGrowingLru<string, number>(2_000);
  for (let i = 0; i < 600; i++) m.set(`k${i}`, i);
  m.delete('k3');
  t.equal(m.get('k3'), undefined);
  t.equal(m.get('k4'), 4);
  m.clear();
  t.equal(m.get('k4'), undefined);
});
