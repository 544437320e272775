import t from 'tap';
import { every } from '../../src/platform/periodic.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test('runs one at a time: ticks during a run are skipped, and stop waits for the run', async (t) => {
  let runs = 0;
  let finish: () => void = () => {};
  let ended = false;
  const loop = every(5, async () => {
    runs++;
    await new Promise<void>((r) => (finish = r));
    ended = true;
  });
  await sleep(60); // a dozen ticks while the first run is held open
  t.equal(runs, 1, 'ticks while a run is going start nothing');
  let stopped = false;
  const stopping = loop.stop().then(() => (stopped = true));
  await sleep(20);
  t.equal(stopped, false, 'stop waits for the run in progress');
  finish();
  await stopping;
  t.ok(ended && stopped, 'stop resolves once the run ended');
  await sleep(30);
  t.equal(runs, 1, 'no run after stop');
});

t.test('the next tick after a run starts the next run', async (t) => {
  let runs = 0;
  const loop = every(5, async () => {
    runs++;
  });
  await sleep(100);
  await loop.stop();
  t.ok(runs >= 3, `runs repeat (${runs})`);
});
