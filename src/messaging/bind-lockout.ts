/**
 * Failed SMPP binds counted per system_id and per source address. Once either reaches `failures`,
 * binds for that id (or from that address) are refused unchecked, even with the right password, for
 * `lockoutMs` after the last counted failure. Unknown ids are counted like known ones, so a lockout
 * tells nothing about which ids exist. Refused binds are not counted: an attacker who keeps trying
 * cannot keep a customer locked out longer than one lockout after it stops getting through.
 * The per-id lock is one anybody can trigger by guessing with a customer's id, so the server lets
 * a bind from one of the id's own allowed addresses past it (`idLocked` and `sourceLocked` apart).
 */
export interface BindLockout {
  /** Either lock: the id's or the source address's. */
  locked(systemId: string, ip: string): boolean;
  idLocked(systemId: string): boolean;
  sourceLocked(ip: string): boolean;
  failed(systemId: string, ip: string): void;
  /** A good password clears its id's count; not the address's, which a customer of our own could otherwise reset between guesses. */
  succeeded(systemId: string): void;
}

interface Count {
  n: number;
  last: number;
}

export function createBindLockout(opts: {
  failures: number;
  lockoutMs: number;
  now: () => number;
  maxTracked?: number;
}): BindLockout {
  const maxTracked = opts.maxTracked ?? 100_000;
  // Most recently failed last: eviction under a flood of made-up ids drops the oldest counts.
  const counts = new Map<string, Count>();
  const live = (key: string): Count | undefined => {
    const c = counts.get(key);
    if (c && opts.now() - c.last >= opts.lockoutMs) {
      counts.delete(key);
      return undefined;
    }
    return c;
  };
  const bump = (key: string): void => {
    const c = live(key) ?? { n: 0, last: 0 };
    c.n++;
    c.last = opts.now();
    counts.delete(key);
    counts.set(key, c);
    while (counts.size > maxTracked) {
      const first = counts.keys().next();
      if (first.done) break;
      counts.delete(first.value);
    }
  };
  const idKey = (systemId: string): string => `id\0${systemId}`;
  const ipKey = (ip: string): string => `ip\0${ip}`;
  const idLocked = (systemId: string): boolean => (live(idKey(systemId))?.n ?? 0) >= opts.failures;
  const sourceLocked = (ip: string): boolean => (live(ipKey(ip))?.n ?? 0) >= opts.failures;
  return {
    locked: (systemId, ip) => idLocked(systemId) || sourceLocked(ip),
    idLocked,
    sourceLocked,
    failed(systemId, ip) {
      bump(idKey(systemId));
      bump(ipKey(ip));
    },
    succeeded(systemId) {
      counts.delete(idKey(systemId));
    },
  };
}
