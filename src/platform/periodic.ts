/** The interval timer `every` runs on; tests pass one they tick by hand. */
export interface IntervalTimer {
  setInterval(fn: () => void, ms: number): { unref?(): unknown };
  clearInterval(handle: { unref?(): unknown }): void;
}

const realTimer: IntervalTimer = {
  setInterval: (fn, ms) => setInterval(fn, ms),
  clearInterval: (handle) => clearInterval(handle as NodeJS.Timeout),
};

/**
 * Runs `fn` every `ms` in the background, one run at a time: a tick that comes while the last run
 * is still going is skipped, so a slow database never piles runs up. The timer keeps no process
 * alive. `stop` clears it and waits for a run in progress. `fn` handles its own errors.
 */
export function every(
  ms: number,
  fn: () => Promise<unknown>,
  timer: IntervalTimer = realTimer,
): { stop(): Promise<void> } {
  let running: Promise<unknown> | null = null;
  const handle = timer.setInterval(() => {
    running ??= fn().finally(() => {
      running = null;
    });
  }, ms);
  handle.unref?.();
  return {
    async stop() {
      timer.clearInterval(handle);
      await running;
    },
  };
}
