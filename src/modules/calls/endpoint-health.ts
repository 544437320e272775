import type { Logger } from 'pino';
import type { ProbeResult } from '../../telephony/sip/index.js';

export interface HealthTarget {
  host: string;
  port: number;
  transport: string;
}

export interface EndpointHealthOptions {
  /** SIP OPTIONS to one endpoint (the B2BUA's probe). */
  probe(target: HealthTarget): Promise<ProbeResult>;
  /** Every supplier endpoint worth watching (active voice routes). */
  targets(): Promise<HealthTarget[]>;
  log: Logger;
  /** Consecutive failed probes that mark an endpoint down. */
  failuresToDown: number;
  /** Consecutive good probes that bring a down endpoint back. */
  successesToUp: number;
  /** Probes in flight at once, so a large catalogue does not burst. */
  concurrency?: number;
}

interface State {
  down: boolean;
  fails: number;
  oks: number;
  last: ProbeResult | null;
}

const keyOf = (t: HealthTarget) => `${t.transport}|${t.host.toLowerCase()}|${t.port}`;

/**
 * Supplier endpoint health from SIP OPTIONS (issue 8): an endpoint goes down after
 * `failuresToDown` failed probes in a row and comes back after `successesToUp` good ones, so one
 * lost datagram neither takes a route out nor puts a dead one back. Unknown endpoints count as up.
 */
export function createEndpointHealth(opts: EndpointHealthOptions) {
  const states = new Map<string, State>();
  const concurrency = opts.concurrency ?? 16;

  function record(target: HealthTarget, r: ProbeResult): void {
    const key = keyOf(target);
    const s = states.get(key) ?? { down: false, fails: 0, oks: 0, last: null };
    s.last = r;
    if (r.ok) {
      s.fails = 0;
      s.oks += 1;
      if (s.down && s.oks >= opts.successesToUp) {
        s.down = false;
        opts.log.info({ host: target.host, port: target.port, status: r.status }, 'supplier endpoint recovered');
      }
    } else {
      s.oks = 0;
      s.fails += 1;
      if (!s.down && s.fails >= opts.failuresToDown) {
        s.down = true;
        opts.log.warn({ host: target.host, port: target.port, status: r.status }, 'supplier endpoint marked down');
      }
    }
    states.set(key, s);
  }

  return {
    record,
    isDown: (target: HealthTarget): boolean => states.get(keyOf(target))?.down ?? false,
    /** Probes every target once (bounded concurrency); forgets endpoints no longer listed. */
    async checkAll(): Promise<number> {
      const targets = (await opts.targets()).filter((t) => t.transport === 'udp' || t.transport === 'tcp');
      const wanted = new Set(targets.map(keyOf));
      for (const k of [...states.keys()]) if (!wanted.has(k)) states.delete(k);
      let next = 0;
      const worker = async () => {
        while (next < targets.length) {
          const target = targets[next++]!;
          const r = await opts.probe(target).catch((): ProbeResult => ({ ok: false, status: null, rttMs: 0 }));
          record(target, r);
        }
      };
      await Promise.all(Array.from({ length: Math.min(concurrency, targets.length) }, worker));
      return targets.length;
    },
    snapshot: () => [...states.entries()].map(([k, s]) => ({ key: k, down: s.down, fails: s.fails, oks: s.oks })),
  };
}

export type EndpointHealth = ReturnType<typeof createEndpointHealth>;
