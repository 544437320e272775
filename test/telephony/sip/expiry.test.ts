import t from 'tap';
import { Expiries, type Expiry, type ExpiryOwner } from '../../../src/telephony/sip/expiry.js';
import { createFakeTimers } from './helpers.js';

/** An owner that records `name:kind` when its entries expire, with the fake clock's time. */
function recorder(timers: { now(): number }, log: string[], name: string): ExpiryOwner {
  return { expire: (kind) => void log.push(`${name}:${kind}@${timers.now()}`) };
}

t.test('entries of one duration expire in the order they were added, each at its own time', async (t) => {
  const timers = createFakeTimers();
  const ex = new Expiries(timers);
  const log: string[] = [];
  ex.add(1000, recorder(timers, log, 'a'), 1);
  timers.advance(300);
  ex.add(1000, recorder(timers, log, 'b'), 2);
  timers.advance(100);
  ex.add(1000, recorder(timers, log, 'c'), 3);
  timers.advance(899);
  t.same(log, ['a:1@1000'], 'b is due at 1300');
  timers.advance(10_000);
  t.same(log, ['a:1@1000', 'b:2@1300', 'c:3@1400']);
  t.equal(ex.size, 0);
});

t.test('one platform timer serves a whole queue', async (t) => {
  const timers = createFakeTimers();
  const ex = new Expiries(timers);
  const log: string[] = [];
  for (let i = 0; i < 50; i++) {
    ex.add(32_000, recorder(timers, log, `x${i}`), 0);
    timers.advance(1);
  }
  t.equal(timers.pending(), 1);
  ex.add(500, recorder(timers, log, 'short'), 0);
  t.equal(timers.pending(), 2, 'another duration has its own queue');
  timers.advance(32_000);
  t.equal(log.length, 51);
  t.equal(log[0], 'short:0@550');
  t.equal(log[1], 'x0:0@32000');
  t.equal(log[50], 'x49:0@32049');
  t.equal(timers.pending(), 0, 'an empty queue keeps no timer');
});

t.test('a cancelled entry never expires, and does not hold back the ones after it', async (t) => {
  const timers = createFakeTimers();
  const ex = new Expiries(timers);
  const log: string[] = [];
  const first = ex.add(1000, recorder(timers, log, 'first'), 0);
  timers.advance(200);
  const second = ex.add(1000, recorder(timers, log, 'second'), 0);
  timers.advance(200);
  ex.add(1000, recorder(timers, log, 'third'), 0);
  first.cancel();
  second.cancel();
  t.equal(first.owner, undefined, 'the entry lets go of its owner at once');
  timers.advance(999);
  t.same(log, []);
  timers.advance(1);
  t.same(log, ['third:0@1400']);
});

t.test('cancelling the head re-arms for the next live entry, not for the cancelled one', async (t) => {
  const timers = createFakeTimers();
  const ex = new Expiries(timers);
  const log: string[] = [];
  const a = ex.add(1000, recorder(timers, log, 'a'), 0);
  const b = ex.add(1000, recorder(timers, log, 'b'), 0);
  timers.advance(500);
  ex.add(1000, recorder(timers, log, 'c'), 0);
  a.cancel();
  b.cancel();
  timers.advance(500);
  t.equal(ex.size, 1, 'the cancelled entries left the queue when their time came');
  timers.advance(500);
  t.same(log, ['c:0@1500']);
});

t.test('an owner may cancel and add entries while expiring', async (t) => {
  const timers = createFakeTimers();
  const ex = new Expiries(timers);
  const log: string[] = [];
  const due: { later?: Expiry } = {};
  const chain: ExpiryOwner = {
    expire(kind) {
      log.push(`chain:${kind}@${timers.now()}`);
      due.later?.cancel();
      if (kind < 3) ex.add(100, chain, kind + 1);
    },
  };
  ex.add(100, chain, 0);
  // Due at the same instant, after the entry that cancels it.
  due.later = ex.add(100, recorder(timers, log, 'later'), 0);
  timers.advance(1000);
  t.same(log, ['chain:0@100', 'chain:1@200', 'chain:2@300', 'chain:3@400']);
});

t.test('an entry added while its queue expires does not delay the entries before it', async (t) => {
  const timers = createFakeTimers();
  const ex = new Expiries(timers);
  const log: string[] = [];
  const adds: ExpiryOwner = {
    expire(kind) {
      log.push(`adds:${kind}@${timers.now()}`);
      ex.add(100, recorder(timers, log, 'added'), 0);
    },
  };
  ex.add(100, adds, 0);
  timers.advance(50);
  ex.add(100, recorder(timers, log, 'waiting'), 0);
  timers.advance(1000);
  t.same(log, ['adds:0@100', 'waiting:0@150', 'added:0@200']);
});

t.test('a zero-length queue runs what its callbacks add on a later wake-up, not in a loop', async (t) => {
  // A scheduler whose timers run only when the test says, each once.
  const due: Array<() => void> = [];
  const timers = { set: (fn: () => void) => due.push(fn), clear: () => undefined, now: () => 0 };
  const ex = new Expiries(timers);
  let runs = 0;
  const again: ExpiryOwner = {
    expire() {
      runs++;
      ex.add(0, again, 0);
    },
  };
  ex.add(0, again, 0);
  due.shift()?.();
  t.equal(runs, 1);
  t.equal(due.length, 1, 'the entry it added waits for the next wake-up');
  due.shift()?.();
  t.equal(runs, 2);
});

t.test('with lateMs an entry fires late by at most that, never early, and shares the wake-up', async (t) => {
  const fake = createFakeTimers();
  const timers = { ...fake, lateMs: 10 };
  const ex = new Expiries(timers);
  const log: string[] = [];
  ex.add(1000, recorder(fake, log, 'a'), 0);
  fake.advance(4);
  ex.add(1000, recorder(fake, log, 'b'), 0);
  fake.advance(999);
  t.same(log, [], 'not before its time');
  fake.advance(7);
  t.same(log, ['a:0@1010', 'b:0@1010']);
});

t.test('the queue compacts as it drains, in order', async (t) => {
  const timers = createFakeTimers();
  const ex = new Expiries(timers);
  let fired = 0;
  let last = -1;
  let ordered = true;
  const owner = (i: number): ExpiryOwner => ({
    expire() {
      fired++;
      ordered &&= i === last + 1;
      last = i;
    },
  });
  // Two a millisecond for 5 s: the first 2 s worth expire while later ones are still added.
  for (let i = 0; i < 10_000; i++) {
    ex.add(2000, owner(i), 0);
    if (i % 2 === 1) timers.advance(1);
  }
  t.equal(fired, 6002, 'those due by 5000 ms');
  t.equal(ex.size, 10_000 - 6002);
  timers.advance(10_000);
  t.equal(fired, 10_000);
  t.ok(ordered);
  t.equal(ex.size, 0);
});
