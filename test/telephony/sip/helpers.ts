import dgram from 'node:dgram';
import pino from 'pino';
import { createSipStack, type SipStack } from '../../../src/telephony/sip/stack.js';
import type { SipTimers } from '../../../src/telephony/sip/transaction.js';
import { createSipTransport } from '../../../src/telephony/sip/transport.js';

export const silentLog = pino({ level: 'silent' });

/** A scheduler the test moves by hand. */
export function createFakeTimers(): SipTimers & { advance(ms: number): void; pending(): number } {
  let now = 0;
  let seq = 0;
  const items = new Map<number, { at: number; fn: () => void }>();
  return {
    set(fn, ms) {
      const id = ++seq;
      items.set(id, { at: now + ms, fn });
      return id;
    },
    clear(h) {
      items.delete(h as number);
    },
    advance(ms) {
      const end = now + ms;
      for (;;) {
        let next: [number, { at: number; fn: () => void }] | undefined;
        for (const e of items) if (e[1].at <= end && (!next || e[1].at < next[1].at)) next = e;
        if (!next) break;
        items.delete(next[0]);
        now = next[1].at;
        next[1].fn();
      }
      now = end;
    },
    pending: () => items.size,
    now: () => now,
  };
}

/** Resolves when `pred` becomes true, polling the event loop (no fixed sleeps). */
export async function until(pred: () => boolean, ms = 3000): Promise<void> {
  const start = Date.now();
  while (!pred()) {
    if (Date.now() - start > ms) throw new Error('condition not met in time');
    await new Promise((r) => setImmediate(r));
  }
}

/** A raw UDP peer that records what it receives. */
export async function rawUdpPeer(): Promise<{
  port: number;
  got: string[];
  send(text: string, port: number): void;
  close(): Promise<void>;
}> {
  const sock = dgram.createSocket('udp4');
  const got: string[] = [];
  sock.on('message', (m) => got.push(m.toString('utf8')));
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
  return {
    port: sock.address().port,
    got,
    send: (text, port) => sock.send(Buffer.from(text.replace(/\r?\n/g, '\r\n')), port, '127.0.0.1'),
    close: () => new Promise<void>((r) => sock.close(() => r())),
  };
}

/** A stack on UDP whose RFC timers the test moves by hand, and a raw UDP peer; both closed at teardown. */
export async function stackWithPeer(t: { teardown(fn: () => Promise<void>): void }): Promise<{
  stack: SipStack;
  timers: ReturnType<typeof createFakeTimers>;
  peer: Awaited<ReturnType<typeof rawUdpPeer>>;
}> {
  const timers = createFakeTimers();
  const stack = createSipStack({
    transport: await createSipTransport({ host: '127.0.0.1', port: 0, log: silentLog }),
    log: silentLog,
    timers,
  });
  const peer = await rawUdpPeer();
  t.teardown(async () => {
    await stack.close();
    await peer.close();
  });
  return { stack, timers, peer };
}
