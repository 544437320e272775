import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';

/**
 * Long CPU work (a 500,000-row rate sheet) written as a generator that yields every few hundred
 * items. `runToEnd` runs it in one go; `runSliced` gives the event loop a turn whenever a slice
 * has run for `sliceMs`, so requests, SIP and SMPP keep being served meanwhile.
 */
export type Steps<T> = Generator<void, T, void>;

export interface Slicing {
  /** Work between two turns of the event loop (default 10 ms). */
  readonly sliceMs?: number;
  /** Stops the work at the next turn with the signal's reason (shutdown). */
  readonly signal?: AbortSignal;
}

export function runToEnd<T>(steps: Steps<T>): T {
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

export async function runSliced<T>(steps: Steps<T>, slicing: Slicing = {}): Promise<T> {
  const sliceMs = slicing.sliceMs ?? 10;
  let start = performance.now();
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
    if (performance.now() - start >= sliceMs) {
      await giveTurn(slicing.signal);
      start = performance.now();
    }
  }
}

/** One turn of the event loop; throws the signal's reason once it is aborted. */
export async function giveTurn(signal?: AbortSignal): Promise<void> {
  signal?.throwIfAborted();
  await nextTurn();
  signal?.throwIfAborted();
}

/** How many items a generator handles between yields: small enough to keep a slice near its budget. */
export const STEP_ITEMS = 512;
