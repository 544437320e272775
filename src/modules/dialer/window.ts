/**
 * Calling windows in a campaign's time zone. A window is `[startHour, endHour)` in local wall-clock
 * time; `startHour > endHour` wraps past midnight (21 → 6); equal hours mean the whole day. Local
 * time comes from the IANA zone through Intl, so a DST change moves the window with the clock on
 * the wall, never by a fixed UTC offset.
 */
export interface CallingWindow {
  startHour: number;
  endHour: number;
  tz: string;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(tz: string): Intl.DateTimeFormat {
  let f = formatters.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: tz, hourCycle: 'h23', hour: 'numeric', weekday: 'short' });
    formatters.set(tz, f);
  }
  return f;
}

/** Whether `tz` names a time zone this runtime knows. */
export function isTimeZone(tz: string): boolean {
  try {
    formatter(tz);
    return true;
  } catch {
    return false;
  }
}

const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];

/** The local hour (0–23) and weekday (0 = Sunday) of `at` in `tz`. */
export function localTime(at: Date, tz: string): { hour: number; weekday: number } {
  let hour = 0;
  let weekday = 0;
  for (const p of formatter(tz).formatToParts(at)) {
    if (p.type === 'hour') hour = Number(p.value) % 24;
    else if (p.type === 'weekday') weekday = WEEKDAYS.indexOf(p.value);
  }
  return { hour, weekday };
}

export function inWindow(at: Date, w: CallingWindow): boolean {
  if (w.startHour === w.endHour) return true;
  const { hour } = localTime(at, w.tz);
  return w.startHour < w.endHour ? hour >= w.startHour && hour < w.endHour : hour >= w.startHour || hour < w.endHour;
}

const QUARTER_MS = 15 * 60_000;

/**
 * The first instant at or after `at` inside the window. Every zone's offset is a whole number of
 * quarter hours, so a local hour always begins on a UTC quarter hour: checking those is exact.
 */
export function nextOpening(at: Date, w: CallingWindow): Date {
  if (inWindow(at, w)) return at;
  let t = Math.ceil(at.getTime() / QUARTER_MS) * QUARTER_MS;
  // Two days of quarters covers any window, across a DST change included.
  for (let i = 0; i < 8 * 24 + 8; i++, t += QUARTER_MS) {
    if (inWindow(new Date(t), w)) return new Date(t);
  }
  return at;
}

const dateFormatters = new Map<string, Intl.DateTimeFormat>();

/** The local calendar date (`YYYY-MM-DD`) of `at` in `tz`: holidays are kept as local dates. */
export function localDate(at: Date, tz: string): string {
  let f = dateFormatters.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-CA', { timeZone: tz, year: 'numeric', month: '2-digit', day: '2-digit' });
    dateFormatters.set(tz, f);
  }
  return f.format(at);
}

/**
 * The instant the local day of `at` began in `tz` (local midnight, or the first instant of the day
 * where a DST change skips midnight). Local days begin on a UTC quarter hour, as local hours do, and
 * the local date only moves forward with time, so a search over the last 27 hours' quarters is exact.
 */
export function startOfLocalDay(at: Date, tz: string): Date {
  const day = localDate(at, tz);
  let lo = Math.floor((at.getTime() - 27 * 3600_000) / QUARTER_MS); // a quarter of an earlier day
  let hi = Math.floor(at.getTime() / QUARTER_MS); // a quarter of this day
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (localDate(new Date(mid * QUARTER_MS), tz) === day) hi = mid;
    else lo = mid;
  }
  return new Date(hi * QUARTER_MS);
}
