import t from 'tap';
import { inWindow, localTime, nextOpening } from '../../../src/modules/dialer/window.js';

const at = (iso: string) => new Date(iso);

t.test('calling windows follow the wall clock of the zone across DST changes', async (t) => {
  const london = { startHour: 9, endHour: 17, tz: 'Europe/London' };
  // 29 March 2026, 01:00 UTC: London goes from GMT (UTC+0) to BST (UTC+1).
  t.equal(inWindow(at('2026-03-28T08:30:00Z'), london), false, '08:30 GMT: before the window');
  t.equal(inWindow(at('2026-03-29T08:30:00Z'), london), true, 'the same UTC time the next day is 09:30 BST');
  t.equal(inWindow(at('2026-03-29T16:30:00Z'), london), false, '17:30 BST: after the window');
  t.equal(inWindow(at('2026-03-28T16:30:00Z'), london), true, '16:30 GMT the day before: inside');
  t.same(nextOpening(at('2026-03-28T17:10:00Z'), london), at('2026-03-29T08:00:00Z'), 'opens at 09:00 BST');
  t.same(nextOpening(at('2026-03-29T00:30:00Z'), london), at('2026-03-29T08:00:00Z'), 'across the change itself');
  // 25 October 2026, 01:00 UTC: back to GMT.
  t.same(nextOpening(at('2026-10-24T17:00:00Z'), london), at('2026-10-25T09:00:00Z'), 'opens at 09:00 GMT');
  t.equal(inWindow(at('2026-10-25T08:30:00Z'), london), false);

  const night = { startHour: 21, endHour: 6, tz: 'America/New_York' };
  t.equal(inWindow(at('2026-03-08T06:30:00Z'), night), true, '01:30 EST inside a window past midnight');
  // 8 March 2026 07:00 UTC: New York jumps 02:00 EST → 03:00 EDT; 10:30 UTC is 06:30 EDT.
  t.equal(inWindow(at('2026-03-08T10:30:00Z'), night), false, '06:30 EDT: the window has closed');
  t.equal(inWindow(at('2026-03-07T10:30:00Z'), night), true, 'the same UTC time the day before is 05:30 EST: inside');
  t.same(nextOpening(at('2026-03-08T12:00:00Z'), night), at('2026-03-09T01:00:00Z'), '21:00 EDT');

  const kolkata = { startHour: 10, endHour: 11, tz: 'Asia/Kolkata' };
  t.same(nextOpening(at('2026-01-01T00:00:00Z'), kolkata), at('2026-01-01T04:30:00Z'), 'half-hour offsets are exact');
  t.same(localTime(at('2026-01-04T12:00:00Z'), 'UTC'), { hour: 12, weekday: 0 });
  t.equal(inWindow(at('2026-01-01T03:00:00Z'), { startHour: 5, endHour: 5, tz: 'UTC' }), true, 'equal hours: all day');
});
