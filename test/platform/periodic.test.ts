import t from 'tap';
import { every, type IntervalTimer } from '../../src/platform/periodic.js';

/** An interval timer ticked by hand: what happens on a tick is seen without waiting for one. */
function manualTimer() {
  let callback: (() => void) | null = null;
  const handle = {};
  const timer: IntervalTimer = {
    setInterval: (fn) => {
      callback = fn;
      return handle;
    },
    clearInterval: (h) => {
      if (h === handle) callback = null;
    },
  };
  return { timer, tick: () => callback?.(), armed: () => callback !== null };
}

// Lets every promise callback already queued run (a run's `finally`, a stop's continuation).
const settle = () => new Promise<void>((r) => setImmediate(r));

t.test('runs one at a time: ticks during a run are skipped, and stop waits for the run', async (t) => {
  const { timer, tick, armed } = manualTimer();
  let runs = 0;
  let finish: () => void = () => {};
  let ended = false;
  const loop = every(
    5,
    async () => {
      runs++;
      await new Promise<void>((r) => (finish = r));
      ended = true;
    },
    timer,
  );
  for (let i = 0; i < 12; i++) tick();
  await settle();
  t.equal(runs, 1, 'ticks while a run is going start nothing');
  let stopped = false;
  const stopping = loop.stop().then(() => (stopped = true));
  await settle();
  t.equal(stopped, false, 'stop waits for the run in progress');
  t.notOk(armed(), 'stop clears the timer at once');
  finish();
  await stopping;
  t.ok(ended && stopped, 'stop resolves once the run ended');
  tick();
  t.equal(runs, 1, 'no run after stop');
});

t.test('the next tick after a run starts the next run', async (t) => {
  const { timer, tick } = manualTimer();
  let runs = 0;
  const loop = every(
    5,
    async () => {
      runs++;
    },
    timer,
  );
  for (let i = 0; i < 3; i++) {
    tick();
    await settle();
  }
  await loop.stop();
  t.equal(runs, 3, 'each tick after a finished run starts one');
});

t.test('the real timer runs', async (t) => {
  let resolveRun: () => void = () => {};
  const ran = new Promise<void>((r) => (resolveRun = r));
  // The loop's timer is unref'd by design; this one keeps the test process up until it ran.
  const keepAlive = setInterval(() => {}, 60_000);
  t.teardown(() => clearInterval(keepAlive));
  const loop = every(1, async () => resolveRun());
  await ran;
  await loop.stop();
  t.pass('ran on a real interval');
});
