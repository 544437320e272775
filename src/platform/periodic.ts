/**
 * Runs `fn` every `ms` in the background, one run at a time: a tick that comes while the last run
 * is still going is skipped, so a slow database never piles runs up. The timer keeps no process
 * alive. `stop` clears it and waits for a run in progress. `fn` handles its own errors.
 */
export function every(ms: number, fn: () => Promise<unknown>): { stop(): Promise<void> } {
  let running: Promise<unknown> | null = null;
  const timer = setInterval(() => {
    running ??= fn().finally(() => {
      running = null;
    });
  }, ms);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
