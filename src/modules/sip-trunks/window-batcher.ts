/**
 * Gathers items for `windowMs` after the first arrives (or while a batch is being written) and
 * hands them to `run` together: one statement and one commit for many calls instead of one each.
 * One batch at a time; `add` settles when the item's batch did. `run` owns the fallback when a
 * batch fails (for example each item again on its own): its rejection reaches every item's caller.
 */
export function createWindowBatcher<T>(opts: {
  windowMs: number;
  maxBatch: number;
  run: (items: T[]) => Promise<void>;
}) {
  interface Queued {
    item: T;
    resolve(): void;
    reject(err: unknown): void;
  }
  let queue: Queued[] = [];
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;

  const flush = () => {
    timer = null;
    if (running || queue.length === 0) return;
    const batch = queue.slice(0, opts.maxBatch);
    queue = queue.slice(batch.length);
    running = opts
      .run(batch.map((q) => q.item))
      .then(
        () => batch.forEach((q) => q.resolve()),
        (err: unknown) => batch.forEach((q) => q.reject(err)),
      )
      .finally(() => {
        running = null;
        // What came while this batch was written has waited long enough.
        if (queue.length > 0) flush();
      });
  };

  return {
    add(item: T): Promise<void> {
      return new Promise<void>((resolve, reject) => {
        queue.push({ item, resolve, reject });
        if (queue.length >= opts.maxBatch) {
          if (timer) clearTimeout(timer);
          flush();
        } else if (!timer && !running) timer = setTimeout(flush, opts.windowMs);
      });
    },
  };
}
