import { networkInterfaces } from 'node:os';
import { isIP } from 'node:net';
import type { Config } from '../config/schema.js';
import { unmapAddress } from './outbound-guard.js';

/**
 * The exchange's own addresses and listening ports: a supplier target or a trunk address that
 * is the exchange itself would loop calls back into it.
 */
export interface SelfAddresses {
  /** An address this daemon listens on (any port). */
  isOwnAddress(address: string): boolean;
  /** An address and port this daemon listens on; with no port, the address alone decides. */
  isSelf(address: string, port: number | undefined): boolean;
  /** Records listening ports once they are bound (port 0 in the settings means "any free one"). */
  addPorts(ports: Iterable<number>): void;
}

const WILDCARD = new Set(['0.0.0.0', '::', '']);

export function createSelfAddresses(
  config: Readonly<Config>,
  opts: { interfaces?: () => string[] } = {},
): SelfAddresses {
  const listenHosts = [config.sip.host, config.http.host, config.smpp.host];
  const wildcard = listenHosts.some((h) => WILDCARD.has(h));
  const interfaces =
    opts.interfaces ??
    (() =>
      Object.values(networkInterfaces())
        .flat()
        .map((i) => i?.address ?? '')
        .filter((a) => a !== ''));
  const ports = new Set<number>(
    [config.sip.port, config.sip.tls_port, config.http.port, config.smpp.port, config.smpp.tls_port].filter(
      (p) => p > 0,
    ),
  );
  const fixed = new Set(listenHosts.filter((h) => isIP(h) !== 0));
  const isOwnAddress = (address: string): boolean => {
    const a = unmapAddress(address).toLowerCase();
    if (fixed.has(a)) return true;
    if (!wildcard) return false;
    // A wildcard listener answers on every local address, the whole loopback range included.
    if (a === '::1' || a.startsWith('127.') || WILDCARD.has(a)) return true;
    return interfaces().some((i) => i.toLowerCase() === a);
  };
  return {
    isOwnAddress,
    isSelf: (address, port) => isOwnAddress(address) && (port === undefined || ports.has(port)),
    addPorts(list) {
      for (const p of list) if (p > 0) ports.add(p);
    },
  };
}
