/** Small helpers over the shared context: call-scoped timers, policy callbacks, fire-and-forget requests. */
import type { SipRequest } from '../message.js';
import type { ClientTransaction } from '../transaction.js';
import type { SipPeer } from '../transport.js';
import type { B2buaContext, Call } from './types.js';

/** A timer cleared when the call ends. */
export function later(ctx: B2buaContext, call: Call, ms: number, fn: () => void): unknown {
  const h = ctx.stack.timers.set(fn, ms);
  call.timers.push(h);
  return h;
}

/** Runs a policy callback off the SIP path; its failure is logged, never thrown into the call. */
export function notify(ctx: B2buaContext, what: string, fn: () => void | Promise<void>): void {
  Promise.resolve()
    .then(fn)
    .catch((err: unknown) => ctx.log.error({ err, what }, 'trunk policy callback failed'));
}

/** A request whose answer changes nothing (BYE on teardown). */
export function sendOnly(ctx: B2buaContext, req: SipRequest, dest: SipPeer): ClientTransaction {
  return ctx.stack.sendRequest(req, dest, { onResponse: () => undefined, onTimeout: () => undefined });
}
