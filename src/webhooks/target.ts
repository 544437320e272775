import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/** Why a URL may not be delivered to; the message is shown in the deliveries log. */
export class TargetRefusedError extends Error {
  override name = 'TargetRefusedError';
}

export interface ResolvedTarget {
  url: URL;
  /** The checked address the request connects to (never resolved again). */
  address: string;
  family: 4 | 6;
  port: number;
  /** Host name for SNI and certificate checks; undefined for an IP literal. */
  servername: string | undefined;
  hostHeader: string;
}

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
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15],
  ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) blocked4.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 128], ['::1', 128], ['::ffff:0:0', 96], ['64:ff9b::', 96], ['64:ff9b:1::', 48], ['100::', 64],
  ['2001::', 32], ['2001:db8::', 32], ['2002::', 16], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8],
] as const) blocked6.addSubnet(net, bits, 'ipv6');

/** True when an address is not public unicast. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked4.check(address, 'ipv4');
  if (family === 6) {
    // An IPv4-mapped address is judged as the IPv4 address it carries.
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (mapped) return blocked4.check(mapped[1]!, 'ipv4');
    return blocked6.check(address, 'ipv6');
  }
  return true;
}

/** Checks a stored endpoint URL's form (at registration and before each attempt). */
export function parseEndpointUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new TargetRefusedError('not a valid URL');
  }
  if (url.protocol !== 'https:') throw new TargetRefusedError('only https:// endpoints are allowed');
  if (url.username || url.password) throw new TargetRefusedError('credentials in the URL are not allowed');
  if (url.hash) throw new TargetRefusedError('a fragment is not allowed');
  return url;
}

const bareHost = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, '$1');

/** Refuses an IP-literal URL in a blocked range; host names are checked at delivery time. */
export function checkEndpointUrl(raw: string, allowPrivate: boolean): URL {
  const url = parseEndpointUrl(raw);
  const host = bareHost(url);
  if (!allowPrivate && (isIP(host) ? isPrivateAddress(host) : /^localhost\.?$|\.localhost\.?$/i.test(host))) {
    throw new TargetRefusedError('the address is loopback, private, link-local or otherwise not public');
  }
  return url;
}

/**
 * Resolves the host once and checks every address it resolves to: one private answer refuses
 * the target (a name that mixes public and private answers is a rebinding attempt). The
 * request then connects to the checked address, so a second lookup cannot swap it.
 */
export async function resolveTarget(raw: string, opts: { allowPrivate: boolean; lookup?: Lookup }): Promise<ResolvedTarget> {
  const url = parseEndpointUrl(raw);
  const host = bareHost(url);
  const literal = isIP(host);
  const answers = literal ? [{ address: host, family: literal }] : await (opts.lookup ?? systemLookup)(host);
  if (answers.length === 0) throw new TargetRefusedError(`no address for ${host}`);
  if (!opts.allowPrivate) {
    const bad = answers.find((a) => isPrivateAddress(a.address));
    if (bad) throw new TargetRefusedError(`refused non-public address ${bad.address}`);
  }
  const first = answers[0]!;
  return {
    url,
    address: first.address,
    family: first.family === 6 ? 6 : 4,
    port: url.port ? Number(url.port) : 443,
    servername: literal ? undefined : host,
    hostHeader: url.host,
  };
}
