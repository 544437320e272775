import type { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { siblingModule, startWorker } from '../../telephony/media/start-worker.js';

export interface VerifyRequest {
  id: number;
  password: string;
  stored: string;
}

export interface VerifyResponse {
  id: number;
  ok: boolean;
  error?: string;
}

/** Thrown when more checks wait than the verifier takes: the bind is refused without a verdict. */
export class VerifierBusyError extends Error {
  readonly code = 'SMPP_VERIFIER_BUSY';
  constructor() {
    super('smpp credential verifier busy');
  }
}

/**
 * A hash with the parameters hashPassword uses at `cost` (N=2^cost, r=8, p=1) that no password
 * matches: checked for an unknown system_id so that it costs what a known one costs.
 */
export function unknownIdHash(cost: number): string {
  return `scrypt$${2 ** cost}$8$1$${Buffer.alloc(16).toString('base64url')}$${Buffer.alloc(32).toString('base64url')}`;
}

export interface SmppVerifier {
  /** True when `password` matches the scrypt hash `stored`. Rejects with VerifierBusyError when the queue is full. */
  verify(password: string, stored: string): Promise<boolean>;
  /** Checks run so far (tests compare the work done for known and unknown ids). */
  checks(): number;
  close(): Promise<void>;
}

/**
 * SMPP password checks on one dedicated thread, one at a time, with a bounded queue. A flood of
 * bad binds then costs at most that one thread and never delays the HTTPS logins, whose scrypt runs
 * on libuv's shared pool; what does not fit the queue is refused at once.
 */
export function createSmppVerifier(opts: { log: Logger; maxQueue?: number }): SmppVerifier {
  const maxQueue = opts.maxQueue ?? 64;
  const pending = new Map<number, { resolve: (ok: boolean) => void; reject: (err: Error) => void }>();
  let worker: Worker | null = null;
  let seq = 0;
  let done = 0;

  const failAll = (err: Error): void => {
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  };

  const start = (): Worker => {
    const w = startWorker(siblingModule(import.meta.url, 'smpp-verify-worker'), null);
    w.on('message', (res: VerifyResponse) => {
      const p = pending.get(res.id);
      if (!p) return;
      pending.delete(res.id);
      done++;
      if (res.error) opts.log.warn({ error: res.error }, 'smpp credential check failed');
      p.resolve(res.ok);
    });
    w.on('error', (err) => {
      opts.log.error({ err }, 'smpp verifier thread failed');
      if (worker === w) worker = null;
      failAll(err);
    });
    w.on('exit', () => {
      if (worker === w) worker = null;
      failAll(new Error('smpp verifier thread exited'));
    });
    // Idle between binds it must not keep the process alive.
    if (pending.size === 0) w.unref();
    return w;
  };

  return {
    verify(password, stored) {
      if (pending.size >= maxQueue) return Promise.reject(new VerifierBusyError());
      worker ??= start();
      const w = worker;
      const id = ++seq;
      return new Promise<boolean>((resolve, reject) => {
        pending.set(id, { resolve, reject });
        w.ref();
        w.postMessage({ id, password, stored } satisfies VerifyRequest);
      }).finally(() => {
        if (pending.size === 0 && worker === w) w.unref();
      });
    },
    checks: () => done,
    async close() {
      const w = worker;
      worker = null;
      failAll(new Error('smpp verifier closed'));
      if (w) await w.terminate();
    },
  };
}
