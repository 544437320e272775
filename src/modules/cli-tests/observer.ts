import type { Logger } from 'pino';
import { parseNameAddr } from '../../telephony/sip/headers.js';
import { fromOf, getHeader, requestUriOf, tagOf, toOf } from '../../telephony/sip/message.js';
import type { SipStack } from '../../telephony/sip/stack.js';

/** What a handset showed: the caller ID of the INVITE that arrived for it. */
export interface ArrivedCall {
  /** Digits of the From user part. */
  from: string | null;
  /** Digits of the P-Asserted-Identity user part, when the network sent one. */
  pai: string | null;
  at: Date;
}

export interface CliObserver {
  /**
   * Waits for the next INVITE to `number` (digits) at this exchange; resolves null after
   * `timeoutMs`. The call is rung `ringMs` and then declined, so the test call is never answered.
   */
  expect(number: string, timeoutMs: number): Promise<ArrivedCall | null>;
  awaiting(): number;
}

const digitsOf = (user: string | undefined): string | null => {
  const d = (user ?? '').replace(/^\+/, '').replace(/^00/, '');
  return /^\d{3,20}$/.test(d) ? d : null;
};

/**
 * The handset side of caller-ID tests on the exchange's one SIP stack: a handset is a number hosted
 * here, so the test call comes back in, and its From / P-Asserted-Identity is what the handset
 * displays. Registered before the trunk B2BUA's handler (which takes every other INVITE): only an
 * INVITE to a number a test is waiting for is taken; everything else goes on down the chain.
 */
export function createCliObserver(opts: { stack: SipStack; log: Logger; ringMs: number; now(): Date }): CliObserver {
  const waiting = new Map<string, (c: ArrivedCall) => void>();
  opts.stack.onRequest((req, tx, _source, next) => {
    if (req.method !== 'INVITE' || tagOf(toOf(req)) !== undefined || waiting.size === 0) return next();
    let called: string | null;
    try {
      called = digitsOf(requestUriOf(req).user) ?? digitsOf(toOf(req).uri.user);
    } catch {
      return next();
    }
    const done = called === null ? undefined : waiting.get(called);
    if (!done || called === null) return next();
    waiting.delete(called);
    let pai: string | null = null;
    const paiHeader = getHeader(req, 'p-asserted-identity');
    if (paiHeader) {
      try {
        pai = digitsOf(parseNameAddr(paiHeader.split(',')[0]!.trim()).uri.user);
      } catch {
        pai = null;
      }
    }
    done({ from: digitsOf(fromOf(req).uri.user), pai, at: opts.now() });
    const toTag = opts.stack.newTag();
    tx.reply(180, 'Ringing', { toTag });
    // A handset does not pick up a caller-ID test: it rings, the caller ID is read, it declines.
    setTimeout(() => {
      if (tx.state === 'proceeding') tx.reply(603, 'Decline', { toTag });
    }, opts.ringMs).unref();
    opts.log.debug({ called }, 'caller-ID test call arrived at its handset');
  });
  return {
    expect(number, timeoutMs) {
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          if (waiting.get(number) === settle) waiting.delete(number);
          resolve(null);
        }, timeoutMs);
        timer.unref();
        const settle = (c: ArrivedCall) => {
          clearTimeout(timer);
          resolve(c);
        };
        waiting.set(number, settle);
      });
    },
    awaiting: () => waiting.size,
  };
}
