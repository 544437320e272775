import type { Logger } from 'pino';
import type { ProbeResult } from '../../telephony/sip/index.js';

export interface HealthTarget {
  host: string;
  port: number;
  transport: string;
  /** The endpoint's own settings (Switch endpoint body); absent: the `[sip] options_*` defaults. */
  optionsIntervalSeconds?: number | null;
  failureThreshold?: number | null;
  recoveryThreshold?: number | null;
}

export interface EndpointHealthOptions {
  /** SIP OPTIONS to one endpoint (the B2BUA's probe). */
  probe(target: HealthTarget): Promise<ProbeResult>;
  /** Every supplier endpoint worth watching (active voice routes). */
  targets(): Promise<HealthTarget[]>;
  log: Logger;
  /** Consecutive failed probes that mark an endpoint down (`[sip] options_failure_threshold`). */
  failuresToDown: number;
  /** Consecutive good probes that bring a down endpoint back (`[sip] options_recovery_threshold`). */
  successesToUp: number;
  /** Seconds between probes of one endpoint (`[sip] options_interval_seconds`), for `checkDue`. */
  intervalSeconds?: number;
  /** Milliseconds since the epoch; `checkDue` compares probe times with it. */
  now?: () => number;
  /** Probes in flight at once, so a large catalogue does not burst. */
  concurrency?: number;
}

interface State {
  down: boolean;
  fails: number;
  oks: number;
  last: ProbeResult | null;
  /** When it was last probed (ms), for per-endpoint intervals. */
  probedAt: number;
}

const keyOf = (t: HealthTarget) => `${t.transport}|${t.host.toLowerCase()}|${t.port}`;

/**
 * Supplier endpoint health from SIP OPTIONS: an endpoint goes down after
 * `failuresToDown` failed probes in a row and comes back after `successesToUp` good ones, so one
 * lost datagram neither takes a route out nor puts a dead one back. Unknown endpoints count as up.
 */
export function createEndpointHealth(opts: EndpointHealthOptions) {
  const states = new Map<string, State>();
  const firstSeen = new Map<string, number>();
  const concurrency = opts.concurrency ?? 16;
  const now = opts.now ?? Date.now;
  const defaultInterval = opts.intervalSeconds ?? 30;

  function record(target: HealthTarget, r: ProbeResult): void {
    const key = keyOf(target);
    const s = states.get(key) ?? { down: false, fails: 0, oks: 0, last: null, probedAt: 0 };
    s.last = r;
    s.probedAt = now();
    if (r.ok) {
      s.fails = 0;
      s.oks += 1;
      if (s.down && s.oks >= (target.recoveryThreshold ?? opts.successesToUp)) {
        s.down = false;
        opts.log.info({ host: target.host, port: target.port, status: r.status }, 'supplier endpoint recovered');
      }
    } else {
      s.oks = 0;
      s.fails += 1;
      if (!s.down && s.fails >= (target.failureThreshold ?? opts.failuresToDown)) {
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
    checkAll: (): Promise<number> => check(false),
    /** Probes only the targets whose interval (their own, else the default) has passed since their last probe. */
    checkDue: (): Promise<number> => check(true),
    snapshot: () => [...states.entries()].map(([k, s]) => ({ key: k, down: s.down, fails: s.fails, oks: s.oks })),
  };

  async function check(dueOnly: boolean): Promise<number> {
    let targets = (await opts.targets()).filter(
      (t) => t.transport === 'udp' || t.transport === 'tcp' || t.transport === 'tls',
    );
    const wanted = new Set(targets.map(keyOf));
    for (const k of [...states.keys()]) if (!wanted.has(k)) states.delete(k);
    for (const k of [...firstSeen.keys()]) if (!wanted.has(k)) firstSeen.delete(k);
    if (dueOnly) {
      const at = now();
      targets = targets.filter((t) => {
        const key = keyOf(t);
        // First seen: due one interval from now, so a daemon start or a new route does not send a
        // burst of probes, and a peer is never probed before it has had an interval to come up.
        if (!firstSeen.has(key) && !states.has(key)) firstSeen.set(key, at);
        const last = states.get(key)?.probedAt ?? firstSeen.get(key) ?? at;
        return at - last >= (t.optionsIntervalSeconds ?? defaultInterval) * 1000;
      });
    }
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
  }
}

export type EndpointHealth = ReturnType<typeof createEndpointHealth>;
