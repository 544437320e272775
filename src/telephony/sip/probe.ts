/** SIP OPTIONS health probe of a supplier endpoint. */
import type { SipRequest } from './message.js';
import type { SipStack } from './stack.js';
import type { SipPeer } from './transport.js';

export interface ProbeResult {
  /** Any final response below 500 other than 408 means the endpoint is up. */
  ok: boolean;
  /** The final status, or null when nothing came back. */
  status: number | null;
  rttMs: number;
}

export function probeEndpoint(
  stack: SipStack,
  target: SipPeer,
  opts: { timeoutMs?: number } = {},
): Promise<ProbeResult> {
  const host = target.host.includes(':') ? `[${target.host}]` : target.host;
  const req: SipRequest = {
    kind: 'request',
    method: 'OPTIONS',
    uri: `sip:${host}:${target.port}${target.transport === 'udp' ? '' : `;transport=${target.transport}`}`,
    version: 'SIP/2.0',
    headers: [
      { name: 'From', value: `<sip:probe@${stack.transport.host}>;tag=${stack.newTag()}` },
      { name: 'To', value: `<sip:${host}:${target.port}>` },
      { name: 'Call-ID', value: stack.newCallId() },
      { name: 'CSeq', value: '1 OPTIONS' },
      { name: 'Max-Forwards', value: '70' },
      { name: 'Accept', value: 'application/sdp' },
    ],
    body: Buffer.alloc(0),
  };
  const started = performance.now();
  return new Promise((resolve) => {
    let done = false;
    const finish = (status: number | null): void => {
      if (done) return;
      done = true;
      stack.timers.clear(timer);
      tx.terminate();
      resolve({
        ok: status !== null && status < 500 && status !== 408,
        status,
        rttMs: Math.round((performance.now() - started) * 10) / 10,
      });
    };
    const timer = stack.timers.set(() => finish(null), opts.timeoutMs ?? 2000);
    const tx = stack.sendRequest(req, target, {
      onResponse: (res) => {
        if (res.status >= 200) finish(res.status);
      },
      onTimeout: () => finish(null),
    });
  });
}
