/**
 * In-process fixed windows, answered synchronously: the API's per-request rate limits when no
 * Redis is configured. rate-limiter-flexible's memory store answers through a promise and arms a
 * timer per key; on the request path of every API call that promise and its microtask turn cost
 * more than the count itself. Same semantics as its memory limiter: a window opens at a key's
 * first point and lasts `seconds`.
 */
export interface FixedWindows {
  /** Counts one point for `key`; 0 when within `points`, else the ms until the window ends. */
  consume(key: string, points: number, seconds: number): number;
  /** The ms until `key`'s window ends when it holds `points` or more; 0 otherwise. Counts nothing. */
  over(key: string, points: number): number;
  /** Counts one point for `key` without refusing. */
  penalty(key: string, seconds: number): void;
  readonly size: number;
}

interface Window {
  count: number;
  endsAt: number;
}

// Expired windows are dropped by a sweep at most this often, so a stream of one-off keys
// (addresses, credentials) cannot grow the map without bound.
const SWEEP_EVERY_MS = 10_000;

export function createFixedWindows(now: () => number = Date.now): FixedWindows {
  const windows = new Map<string, Window>();
  let nextSweep = now() + SWEEP_EVERY_MS;

  const sweep = (t: number) => {
    if (t < nextSweep) return;
    nextSweep = t + SWEEP_EVERY_MS;
    for (const [k, w] of windows) if (w.endsAt <= t) windows.delete(k);
  };

  const current = (key: string, t: number): Window | undefined => {
    const w = windows.get(key);
    return w !== undefined && w.endsAt > t ? w : undefined;
  };

  const count = (key: string, seconds: number, t: number): Window => {
    let w = current(key, t);
    if (w === undefined) {
      w = { count: 0, endsAt: t + seconds * 1000 };
      windows.set(key, w);
    }
    w.count += 1;
    return w;
  };

  return {
    consume(key, points, seconds) {
      const t = now();
      sweep(t);
      const w = count(key, seconds, t);
      return w.count > points ? w.endsAt - t : 0;
    },
    over(key, points) {
      const t = now();
      const w = current(key, t);
      return w !== undefined && w.count >= points ? w.endsAt - t : 0;
    },
    penalty(key, seconds) {
      const t = now();
      sweep(t);
      count(key, seconds, t);
    },
    get size() {
      return windows.size;
    },
  };
}
