import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import type { Config } from '../config/schema.js';

/**
 * The one guard for every outbound connection a customer can aim (webhooks, `play` downloads,
 * SMS HTTPS delivery, SMPP supplier binds, SIP supplier endpoints, route and supplier tests).
 * A target is resolved once, every answer is checked, and the connection goes to the checked
 * address: a second resolution could answer differently (DNS rebinding).
 */

/** Why a target may not be connected to. One message for every reason: the answer must not tell a probe apart. */
export class TargetRefusedError extends Error {
  override name = 'TargetRefusedError';
  readonly code = 'ETARGETREFUSED';
  /** The refused answer, for logs and for the owner's own deliveries log; never in a supplier-facing answer. */
  readonly address: string | undefined;
  constructor(message: string, address?: string) {
    super(message);
    this.address = address;
  }
}

/** The refusal text customers see, whatever the reason (loopback, metadata, private, the exchange itself). */
export const REFUSED_MESSAGE = 'the address is loopback, private, link-local or otherwise not public';

export type Lookup = (hostname: string) => Promise<{ address: string; family: number }[]>;

export const systemLookup: Lookup = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

// Everything but global unicast: loopback, private (RFC 1918), shared (CGNAT), link-local
// (which holds the 169.254.169.254 metadata service), multicast, reserved, documentation and
// benchmarking ranges; for IPv6 also unique-local (fc00::/7, where fd00:ec2::254 lives),
// site-local, and the translation prefixes that embed an IPv4 address.
// Two lists: a BlockList also matches IPv4 addresses against IPv6 rules through the mapped
// range, so ::ffff:0:0/96 in one list would block every IPv4 address.
const blocked4 = new BlockList();
const blocked6 = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  blocked4.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['::ffff:0:0', 96],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 32],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const)
  blocked6.addSubnet(net, bits, 'ipv6');

// Never a peer, whatever an operator allows: "this host" (0.0.0.0 reaches loopback on Linux),
// multicast and broadcast/reserved.
const never4 = new BlockList();
const never6 = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  never4.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 128],
  ['ff00::', 8],
] as const)
  never6.addSubnet(net, bits, 'ipv6');

/** An IPv4-mapped IPv6 address as the IPv4 address it carries; anything else unchanged. */
export function unmapAddress(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return mapped ? mapped[1]! : address;
}

const bare = (host: string) => (host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host);

function inList(v4: BlockList, v6: BlockList, address: string): boolean {
  const a = unmapAddress(address);
  const family = isIP(a);
  if (family === 4) return v4.check(a, 'ipv4');
  if (family === 6) return v6.check(a, 'ipv6');
  return false;
}

/**
 * True when an address is not public unicast (an unparsable one included). An IPv4-mapped IPv6
 * literal counts as private whatever it carries: no real peer is written that way, and the
 * mapped range is what reaches IPv4 through an IPv6 socket.
 */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked4.check(address, 'ipv4');
  if (family === 6) return blocked6.check(address, 'ipv6');
  return true;
}

/** True for unspecified, multicast and reserved addresses, which no allow-list lets through. */
export function isNeverAllowed(address: string): boolean {
  return inList(never4, never6, address);
}

/** A set of networks ("10.1.0.0/16", "fd00::/8", or a bare address). */
export interface NetworkList {
  has(address: string): boolean;
  readonly size: number;
}

/** Parses an operator's network list; throws naming the first bad entry (settings fail at start). */
export function parseNetworks(entries: readonly string[], setting = 'networks'): NetworkList {
  const v4 = new BlockList();
  const v6 = new BlockList();
  for (const entry of entries) {
    const [net = '', bitsText] = entry.trim().split('/');
    const family = isIP(net);
    const max = family === 6 ? 128 : 32;
    const bits = bitsText === undefined ? max : Number(bitsText);
    if (
      family === 0 ||
      !Number.isInteger(bits) ||
      bits < 0 ||
      bits > max ||
      (bitsText !== undefined && !/^\d{1,3}$/.test(bitsText))
    ) {
      throw new Error(`${setting}: "${entry}" is not an address or network (e.g. 10.20.0.0/16 or fd00::/8)`);
    }
    if (family === 4) v4.addSubnet(net, bits, 'ipv4');
    else v6.addSubnet(net, bits, 'ipv6');
  }
  return { has: (address) => inList(v4, v6, address), size: entries.length };
}

export interface PinnedAddress {
  address: string;
  family: 4 | 6;
}

export interface TargetGuardOptions {
  /** Private networks the operator lets through (a real private interconnect). */
  allow?: NetworkList;
  /** Lets every private address through (the webhooks' test switch); never-allowed ones stay refused. */
  allowAllPrivate?: boolean;
  /** The exchange's own listening address and port: never a supplier, even inside an allowed network. */
  isSelf?: (address: string, port: number | undefined) => boolean;
  lookup?: Lookup;
}

export interface TargetGuard {
  /** Whether an address (and port) may be connected to. */
  permits(address: string, port?: number): boolean;
  /**
   * Checks what can be checked without a lookup: an IP literal, or a `localhost` name. Used when
   * a target is saved; a host name is checked again, resolved, at each connection.
   */
  checkHost(host: string, port?: number): void;
  /** Resolves once, refuses the target if any answer is refused, and returns the address to connect to. */
  resolve(host: string, port?: number): Promise<PinnedAddress>;
  /**
   * A `lookup` for `net.connect`/`tls.connect`/`https.request` that resolves through the guard,
   * so the socket goes to the checked address. Node skips `lookup` for IP literals: call
   * `checkHost` before connecting to one.
   */
  netLookup(port?: number): LookupFunction;
}

export function createTargetGuard(opts: TargetGuardOptions = {}): TargetGuard {
  const lookup = opts.lookup ?? systemLookup;
  const permits = (address: string, port?: number): boolean => {
    if (isIP(unmapAddress(address)) === 0 || isNeverAllowed(address)) return false;
    if (opts.isSelf?.(unmapAddress(address), port)) return false;
    if (!isPrivateAddress(address)) return true;
    return opts.allowAllPrivate === true || opts.allow?.has(address) === true;
  };
  const checkHost = (host: string, port?: number): void => {
    const h = bare(host);
    if (isIP(h) !== 0) {
      if (!permits(h, port)) throw new TargetRefusedError(REFUSED_MESSAGE, h);
      return;
    }
    // localhost names resolve to loopback without asking DNS (RFC 6761).
    if (/^localhost\.?$|\.localhost\.?$/i.test(h) && !permits('127.0.0.1', port))
      throw new TargetRefusedError(REFUSED_MESSAGE, '127.0.0.1');
  };
  const resolve = async (host: string, port?: number): Promise<PinnedAddress> => {
    const h = bare(host);
    const literal = isIP(h);
    const answers = literal ? [{ address: h, family: literal }] : await lookup(h);
    if (answers.length === 0) throw Object.assign(new Error(`no address for ${h}`), { code: 'ENOTFOUND' });
    // One refused answer refuses the name: a mix of public and private answers is a rebinding attempt.
    const bad = answers.find((a) => !permits(a.address, port));
    if (bad) throw new TargetRefusedError(REFUSED_MESSAGE, bad.address);
    const first = answers[0]!;
    return { address: first.address, family: first.family === 6 ? 6 : 4 };
  };
  const netLookup =
    (port?: number): LookupFunction =>
    (hostname, options, callback) => {
      resolve(hostname, port).then(
        (p) => {
          if (options.all) (callback as (err: null, addresses: PinnedAddress[]) => void)(null, [p]);
          else callback(null, p.address, p.family);
        },
        (err: NodeJS.ErrnoException) => callback(err, '', 4),
      );
    };
  return { permits, checkHost, resolve, netLookup };
}

/**
 * The guard for supplier targets a customer sets (SMS HTTPS delivery, SMPP binds, SIP endpoints):
 * public addresses, plus `[security] private_supplier_networks`; never the exchange's own listeners.
 */
export function supplierGuardFrom(
  config: Readonly<Config>,
  deps: { isSelf?: (address: string, port: number | undefined) => boolean; lookup?: Lookup } = {},
): TargetGuard {
  return createTargetGuard({
    allow: parseNetworks(config.security.private_supplier_networks, 'security.private_supplier_networks'),
    ...(deps.isSelf ? { isSelf: deps.isSelf } : {}),
    ...(deps.lookup ? { lookup: deps.lookup } : {}),
  });
}
