import t from 'tap';
import { simulatedDialer } from '../../helpers/dialer.js';
import { eventually } from '../sip-trunks/world.js';

/**
 * `callInterval` on the injected clock: the gap between two consecutive call starts of a campaign is
 * at least the interval, counted from the previous call's actual start, so a start made late (a slow
 * tick, a loaded machine, here a clock that jumps 30 s past the due moment) is never followed by a
 * shorter gap. A second, unpaced campaign on the same runner shows the runner has stepped the paced
 * one at a moment when an interval counted from the due slot would have let a call start.
 */
t.test('paced call starts are at least callInterval apart, however late a start was', async (t) => {
  const w = await simulatedDialer(t, '2026-05-04T10:00:00Z', { prefix: '44' });
  const interval = 60_000;
  const numbers = (from: number, n: number) =>
    Array.from({ length: n }, (_, i) => `+4475100${String(from + i).padStart(5, '0')}`);
  const cliSetId = await w.cliSet(['+15550009001']);
  const paced = await w.campaign('Paced', numbers(0, 3), { cliSetId, concurrency: 3, callInterval: interval });
  const probe = await w.campaign('Probe', numbers(100, 60), { cliSetId, concurrency: 1 });
  const starts = async () =>
    (
      await w.d.sql<{ startedAt: Date }[]>`
        select started_at from dialer_attempts where campaign_id = ${paced} order by started_at`
    ).map((a) => a.startedAt.getTime());
  /** The starts once `n` attempts are recorded (a number is counted dialled before its attempt is written). */
  const startsOf = (n: number) =>
    eventually(async () => {
      const s = await starts();
      return s.length >= n ? s : null;
    }, 60_000);
  /** Resolves once the runner has stepped every running campaign at least once more. */
  const twoTicks = async () => {
    const from = (await w.get(probe)).numbersDialed as number;
    await w.until(probe, (c) => c.numbersDialed >= from + 2);
  };

  for (const id of [paced, probe]) {
    const r = await w.control(id, 'start');
    t.equal(r.status, 200, r.text);
  }
  await w.until(paced, (c) => c.numbersDialed === 1);
  await twoTicks();
  t.equal((await w.get(paced)).numbersDialed, 1, 'concurrency to spare, yet one start per interval');
  const [s1] = await startsOf(1);

  // The second call starts 30 s after it was due.
  w.moveTo(new Date(s1! + interval + 30_000).toISOString());
  await w.until(paced, (c) => c.numbersDialed === 2);
  const s2 = (await startsOf(2))[1]!;
  t.ok(s2 - s1! >= interval + 30_000, 'the late start');

  // Two intervals after the first start: the due-slot count would start the third call now, 31 s
  // after the second.
  w.moveTo(new Date(s1! + 2 * interval + 1_000).toISOString());
  await twoTicks();
  t.equal((await w.get(paced)).numbersDialed, 2, 'no start sooner than callInterval after the late one');

  w.moveTo(new Date(s2 + interval).toISOString());
  await w.until(paced, (c) => c.numbersDialed === 3);
  const all = await startsOf(3);
  const gaps = all.slice(1).map((s, i) => s - all[i]!);
  t.ok(
    gaps.every((g) => g >= interval),
    'every gap between consecutive starts is at least callInterval',
    { gaps },
  );
  t.ok(gaps[1]! - interval < 5_000, 'and the next call starts once the interval has passed', { gaps });
});
