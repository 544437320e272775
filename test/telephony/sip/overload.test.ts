import pino from 'pino';
import t from 'tap';
import { createOverloadGuard, type OverloadSettings } from '../../../src/telephony/sip/index.js';

const log = pino({ level: 'silent' });
const settings: OverloadSettings = {
  busyPct: 0,
  resumeBusyPct: 0,
  loopDelayMs: 40,
  resumeDelayMs: 10,
  maxInvitesInSetup: 0,
  retryAfterSeconds: 2,
};

/** A guard whose windows the test runs, with the loop delay each window reads. */
function guardWith(s: Partial<OverloadSettings> = {}) {
  let delay = 0;
  let busy = 0;
  const g = createOverloadGuard({
    settings: { ...settings, ...s },
    log,
    loopDelay: () => delay,
    loopBusy: () => busy,
    sampleEveryMs: 0,
  });
  t.teardown(() => g.close());
  const windows = (ms: number, n: number, utilisation = 0) => {
    delay = ms;
    busy = utilisation;
    for (let i = 0; i < n; i++) g.sample();
  };
  const refusedOf = (n: number) => {
    let r = 0;
    for (let i = 0; i < n; i++) if (g.refuse(0)) r++;
    return r;
  };
  return { g, windows, refusedOf };
}

t.test('no delay, nothing refused', async (t) => {
  const { g, windows, refusedOf } = guardWith();
  windows(5, 20);
  t.equal(refusedOf(1000), 0);
  t.equal(g.stats().ratio, 0);
});

t.test('the refused share climbs a tenth per delayed window, spread evenly, and is all at most', async (t) => {
  const { g, windows, refusedOf } = guardWith();
  windows(45, 3);
  t.equal(Math.round(g.stats().ratio * 100), 30);
  t.equal(refusedOf(10), 3, 'three INVITEs in ten');
  t.equal(refusedOf(100), 30);
  windows(200, 20);
  t.equal(g.stats().ratio, 1);
  t.equal(refusedOf(50), 50, 'every new INVITE');
  t.equal(g.stats().refused, 83);
});

t.test(
  'hysteresis: between the marks the share holds; below the resume mark it falls a twentieth per window',
  async (t) => {
    const { g, windows, refusedOf } = guardWith();
    windows(100, 10);
    t.equal(g.stats().ratio, 1);
    windows(20, 50);
    t.equal(g.stats().ratio, 1, 'a delay between resume and threshold keeps it');
    windows(5, 10);
    t.equal(Math.round(g.stats().ratio * 100), 50);
    t.equal(refusedOf(10), 5);
    windows(5, 10);
    t.equal(g.stats().ratio, 0);
    t.equal(refusedOf(100), 0, 'recovered: every INVITE admitted');
  },
);

t.test(
  'utilisation: a loop with no idle moment raises the share; it falls only when both rules are below their resume marks',
  async (t) => {
    const { g, windows, refusedOf } = guardWith({ busyPct: 98, resumeBusyPct: 90 });
    windows(0, 5, 0.97);
    t.equal(g.stats().ratio, 0, 'busy but not saturated');
    windows(0, 4, 1);
    windows(0, 1, 0.5);
    windows(0, 4, 1);
    t.equal(g.stats().ratio, 0, 'saturated windows in runs of four (a scavenge, a burst) are no overload');
    windows(0, 4, 1);
    t.equal(Math.round(g.stats().ratio * 100), 40, 'from the fifth saturated window in a row the share grows');
    t.equal(refusedOf(10), 4);
    windows(0, 20, 0.93);
    t.equal(Math.round(g.stats().ratio * 100), 40, 'between the marks it holds');
    windows(25, 20, 0.5);
    t.equal(Math.round(g.stats().ratio * 100), 40, 'the delay between its marks holds it too');
    windows(5, 8, 0.5);
    t.equal(g.stats().ratio, 0);
  },
);

t.test('the setup cap refuses every INVITE at the cap, whatever the delay', async (t) => {
  const { g } = guardWith({ loopDelayMs: 0, busyPct: 0, maxInvitesInSetup: 3 });
  t.equal(g.setupCap, 3);
  t.notOk(g.refuse(2));
  t.ok(g.refuse(3));
  t.ok(g.refuse(4));
  t.notOk(g.refuse(0));
  t.equal(g.retryAfter, '2');
});

t.test('both loop rules off: no monitor, never refused for the loop', async (t) => {
  const g = createOverloadGuard({ settings: { ...settings, loopDelayMs: 0, busyPct: 0 }, log });
  t.teardown(() => g.close());
  g.sample();
  t.notOk(g.refuse(1_000_000));
  t.equal(g.setupCap, 0);
});
