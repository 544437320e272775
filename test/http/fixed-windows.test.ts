import t from 'tap';
import { createFixedWindows } from '../../src/http/fixed-windows.js';

t.test('a window opens at the first point, refuses past its points and reopens when it ends', async (t) => {
  let now = 1_000_000;
  const w = createFixedWindows(() => now);
  t.equal(w.consume('k', 2, 1), 0, 'first point');
  t.equal(w.consume('k', 2, 1), 0, 'second point');
  t.equal(w.consume('k', 2, 1), 1000, 'third point refused: the whole window is left');
  now += 400;
  t.equal(w.consume('k', 2, 1), 600, 'still refused, 600 ms left');
  t.equal(w.consume('other', 2, 1), 0, 'keys are counted apart');
  now += 600;
  t.equal(w.consume('k', 2, 1), 0, 'a new window once the old one ended');
});

t.test('over() counts nothing; penalty() counts without refusing', async (t) => {
  let now = 5_000;
  const w = createFixedWindows(() => now);
  t.equal(w.over('ip', 2), 0, 'no window yet');
  w.penalty('ip', 60);
  t.equal(w.over('ip', 2), 0, 'one failure of two');
  w.penalty('ip', 60);
  t.equal(w.over('ip', 2), 60_000, 'two failures: refused for the rest of the window');
  t.equal(w.over('ip', 2), 60_000, 'asking again counted nothing');
  w.penalty('ip', 60);
  now += 60_000;
  t.equal(w.over('ip', 2), 0, 'the window ended');
});

t.test('ended windows are swept, so one-off keys do not pile up', async (t) => {
  let now = 0;
  const w = createFixedWindows(() => now);
  for (let i = 0; i < 1000; i++) w.consume(`key-${i}`, 5, 1);
  t.equal(w.size, 1000);
  now += 11_000;
  w.consume('late', 5, 1);
  t.equal(w.size, 1, 'only the live window is left');
});
