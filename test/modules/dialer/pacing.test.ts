import t from 'tap';
import { paceFrom } from '../../../src/modules/dialer/runner.js';

t.test('paced starts count from the slot they were due in, so lateness does not add up', async (t) => {
  // Due at 1100; started 20 ms late (a tick): the next interval counts from 1100.
  t.equal(paceFrom(1000, 1120, 100), 1100);
  // Started on time.
  t.equal(paceFrom(1000, 1100, 100), 1100);
  // Ten calls each a tick late still average the interval.
  let last = 0;
  const starts: number[] = [];
  for (let i = 0; i < 10; i++) {
    const due = last + 100;
    const started = due + 20;
    starts.push(started);
    last = paceFrom(last, started, 100);
  }
  t.equal((starts[9]! - starts[0]!) / 9, 100, 'mean gap is the interval');
  // After a long stop (paused, outside the window) the actual start counts.
  t.equal(paceFrom(1000, 5000, 100), 5000);
  // No interval: the start itself.
  t.equal(paceFrom(1000, 1003, 0), 1003);
});
