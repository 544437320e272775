import pino from 'pino';
import t from 'tap';
import { createOverloadGuard, type OverloadSettings } from '../../../src/telephony/sip/index.js';

const log = pino({ level: 'silent' });
const settings: OverloadSettings = {
  retransmitPct: 0,
  resumeRetransmitPct: 0,
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
  windows(45, 5);
  t.equal(Math.round(g.stats().ratio * 100), 30, 'from the third late window (the median of five)');
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
    windows(100, 12);
    t.equal(g.stats().ratio, 1);
    windows(20, 50);
    t.equal(g.stats().ratio, 1, 'a delay between resume and threshold keeps it');
    windows(5, 12);
    t.equal(Math.round(g.stats().ratio * 100), 50, 'from the third window below (the median of five)');
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
    t.equal(
      Math.round(g.stats().ratio * 100),
      30,
      'the delay between its marks holds it too, from its third window (the median of five)',
    );
    windows(5, 9, 0.5);
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

/**
 * A guard on the retransmission rule alone, fed window by window: new INVITEs, and the share of
 * those it admits that their callers retransmit (the stack counts neither refused ones nor a second
 * retransmission of one INVITE).
 */
function retransmitGuard() {
  const g = createOverloadGuard({
    settings: { ...settings, loopDelayMs: 0, retransmitPct: 10, resumeRetransmitPct: 5 },
    log,
    sampleEveryMs: 0,
  });
  t.teardown(() => g.close());
  let admittedTotal = 0;
  const windows = (invites: number, share: number, n = 1) => {
    for (let i = 0; i < n; i++) {
      let admitted = 0;
      for (let j = 0; j < invites; j++) if (!g.refuse(0)) admitted++;
      admittedTotal += admitted;
      for (let j = 0; j < Math.round(admitted * share); j++) g.retransmitted();
      g.sample();
    }
  };
  const pct = () => Math.round(g.stats().ratio * 100);
  return { g, windows, pct, admitted: () => admittedTotal };
}

t.test(
  'retransmissions: a share of admitted INVITEs retransmitted over the last windows raises the refused share',
  async (t) => {
    const { g, windows, pct, admitted } = retransmitGuard();
    windows(100, 0.05, 10);
    t.equal(g.stats().ratio, 0, '5 % of INVITEs retransmitted (a lossy path) is no overload');
    windows(100, 0.12);
    t.equal(pct(), 0, 'one window at 12 % leaves the five-window share below 10 %');
    windows(100, 0.4);
    t.equal(pct(), 10, 'the five-window share reaches 10 %: up a tenth');
    t.ok(g.stats().retransmitShare >= 0.1);
    windows(100, 0.6, 4);
    t.equal(pct(), 50, 'each window over the mark adds a tenth');
    t.equal(g.stats().invites, admitted(), 'the refused INVITEs are not in the denominator');
    t.ok(admitted() < 1600);
  },
);

t.test('retransmissions: the share holds between the marks and falls a twentieth per window below', async (t) => {
  const { g, windows, pct } = retransmitGuard();
  windows(1000, 0.6, 5);
  t.equal(pct(), 50);
  windows(1000, 0.07, 5);
  const held = pct();
  t.equal(held, 50, 'it stops growing with the burst, and the windows that still hold it keep it');
  windows(1000, 0.07, 20);
  t.equal(pct(), held, 'held at 7 %, between the marks');
  windows(1000, 0.02, 2);
  t.equal(pct(), held, 'the five-window share is still over 5 % while the 7 % windows are most of it');
  windows(1000, 0.02);
  t.equal(pct(), held - 5, 'below 5 %: down a twentieth');
  windows(1000, 0.02, 3);
  t.equal(pct(), held - 20, 'a twentieth per window');
  windows(1000, 0, 20);
  t.equal(g.stats().ratio, 0);
  t.notOk(g.refuse(0), 'admitted again');
});

t.test('retransmissions: with every INVITE refused none is counted, and the share probes down', async (t) => {
  const { windows, pct } = retransmitGuard();
  windows(100, 1, 10);
  t.equal(pct(), 100);
  const trace: number[] = [];
  for (let i = 0; i < 12; i++) {
    windows(100, 1);
    trace.push(pct());
  }
  t.same(
    trace,
    [100, 100, 100, 100, 95, 100, 100, 100, 100, 100, 95, 100],
    'none admitted, none retransmitted: once the windows are empty it lets a twentieth in, and their retransmissions put it back',
  );
});

t.test('retransmissions: a lone one, or a few at a low call rate, never trip the rule', async (t) => {
  const { g, windows } = retransmitGuard();
  windows(2, 0.5);
  windows(2, 0, 4);
  t.equal(g.stats().ratio, 0, 'one retransmission in ten INVITEs (10 %) is a lost datagram');
  windows(2, 0.5, 4);
  t.equal(g.stats().ratio, 0, 'four in five windows (40 %) are still below the count the rule needs');
  windows(1000, 0.001, 10);
  t.equal(g.stats().ratio, 0, 'one a window at a high rate');
  windows(2, 0.5, 5);
  t.equal(g.stats().ratio, 0.1, 'five in five windows trip it (every caller is retransmitting)');
});

t.test('retransmissions: the rule off (0) counts them but never refuses', async (t) => {
  const g = createOverloadGuard({ settings: { ...settings, loopDelayMs: 0 }, log, sampleEveryMs: 0 });
  t.teardown(() => g.close());
  for (let i = 0; i < 10; i++) {
    for (let j = 0; j < 10; j++) g.refuse(0);
    for (let j = 0; j < 10; j++) g.retransmitted();
    g.sample();
  }
  t.equal(g.stats().ratio, 0);
  t.equal(g.stats().retransmitShare, 1);
  t.notOk(g.refuse(0));
});

t.test(
  'delay: a stall (one or two late windows, however late) raises nothing; a loop late in most is refused',
  async (t) => {
    const { g, windows, refusedOf } = guardWith();
    windows(5, 5);
    windows(400, 1);
    windows(5, 3);
    windows(200, 2);
    windows(5, 3);
    windows(10_000, 1);
    windows(30, 1);
    windows(45, 1);
    windows(5, 5);
    t.equal(g.stats().ratio, 0, 'stalls of one or two windows among windows that keep up or sit between the marks');
    t.equal(refusedOf(1000), 0, 'every new INVITE admitted');
    windows(45, 2);
    windows(30, 1);
    t.equal(g.stats().ratio, 0, 'two late windows of five');
    windows(45, 1);
    t.equal(Math.round(g.stats().ratio * 100), 10, 'three late windows of five raise the share');
    t.equal(refusedOf(10), 1);
    windows(45, 9);
    t.equal(g.stats().ratio, 1, 'and each late window after them');
    windows(5, 2);
    t.equal(g.stats().ratio, 1, 'two windows that keep up are a stall the other way');
    windows(5, 20);
    t.equal(g.stats().ratio, 0, 'back to none once the loop keeps up');
  },
);

t.test(
  'delay: a held loop is refused from its third window and all of it from its twelfth, after a reset too',
  async (t) => {
    const { g, windows } = guardWith({ loopDelayMs: 100, resumeDelayMs: 20 });
    const climb = (): number[] => {
      const trace: number[] = [];
      for (let i = 0; i < 12; i++) {
        windows(250, 1);
        trace.push(Math.round(g.stats().ratio * 100));
      }
      return trace;
    };
    t.same(climb(), [0, 0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
    g.reset();
    t.equal(g.stats().ratio, 0);
    t.same(climb(), [0, 0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100], 'a reset forgets the readings before it');
  },
);

t.test(
  'delay: a cold daemon at 50 calls/s (readings recorded by bench/sip/cold-start.bench.ts) is not refused',
  async (t) => {
    // Its first 4.4 s of calls: three lone stalls over 100 ms, each of which refused calls when one window was enough.
    const cold = [
      6, 100, 8, 7, 17, 38, 10, 10, 65, 18, 19, 15, 27, 19, 22, 14, 5, 100, 12, 16, 14, 68, 42, 10, 12, 2, 12, 15, 3,
      12, 34, 27, 36, 3, 2, 36, 5, 136, 3, 19, 79, 35, 100, 24,
    ];
    const { g, windows, refusedOf } = guardWith({ loopDelayMs: 100, resumeDelayMs: 20 });
    let refused = 0;
    for (const ms of cold) {
      windows(ms, 1);
      refused += refusedOf(5);
    }
    t.equal(refused, 0, 'none of its 220 calls refused');
    t.equal(g.stats().ratio, 0);
  },
);
