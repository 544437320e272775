/** Runs a bench's clean-ups last first; one that fails is reported and the rest still run. */
export async function runCleanups(cleanups: (() => unknown)[]): Promise<void> {
  for (const fn of [...cleanups].reverse()) {
    try {
      await fn();
    } catch (err) {
      console.error('bench cleanup:', err);
    }
  }
}
