import { isIP } from 'node:net';
import { createTargetGuard, TargetRefusedError, type Lookup } from '../platform/outbound-guard.js';

// The address rules live in the one outbound guard; this file keeps the webhook URL's form.
export { isPrivateAddress, TargetRefusedError, type Lookup } from '../platform/outbound-guard.js';

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
const guards = { open: createTargetGuard({ allowAllPrivate: true }), closed: createTargetGuard() };

/** Refuses an IP-literal URL in a blocked range; host names are checked at delivery time. */
export function checkEndpointUrl(raw: string, allowPrivate: boolean): URL {
  const url = parseEndpointUrl(raw);
  (allowPrivate ? guards.open : guards.closed).checkHost(bareHost(url));
  return url;
}

/**
 * Resolves the host once and checks every address it resolves to (the outbound guard); the
 * request then connects to the checked address, so a second lookup cannot swap it.
 */
export async function resolveTarget(
  raw: string,
  opts: { allowPrivate: boolean; lookup?: Lookup },
): Promise<ResolvedTarget> {
  const url = parseEndpointUrl(raw);
  const host = bareHost(url);
  const guard = opts.lookup
    ? createTargetGuard({ allowAllPrivate: opts.allowPrivate, lookup: opts.lookup })
    : opts.allowPrivate
      ? guards.open
      : guards.closed;
  let pinned;
  try {
    pinned = await guard.resolve(host);
  } catch (err) {
    // The deliveries log is the endpoint owner's: naming its own name's answer helps it.
    if (err instanceof TargetRefusedError && err.address !== undefined)
      throw new TargetRefusedError(`refused non-public address ${err.address}`, err.address);
    throw err;
  }
  return {
    url,
    address: pinned.address,
    family: pinned.family,
    port: url.port ? Number(url.port) : 443,
    servername: isIP(host) ? undefined : host,
    hostHeader: url.host,
  };
}
