import { readFileSync } from 'node:fs';
import type { Config } from '../config/schema.js';

/**
 * Descriptors kept aside for everything that is not an inbound connection: the database pool,
 * Redis, outbound SIP, SMPP and HTTPS connections, webhook deliveries, files, RTP sockets of the
 * first calls.
 */
const RESERVED_FDS = 512;

/** The process's soft limit on open files (Node raises it to the hard limit at start), or null where it cannot be read. */
export function openFileLimit(): number | null {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
    return soft && /^\d+$/.test(soft) ? Number(soft) : null;
  } catch {
    return null;
  }
}

export interface ConnectionCaps {
  http: number;
  sipTcp: number;
  sipTcpPerSource: number;
  smpp: number;
  smppPerSource: number;
  /** True when caps were lowered to fit the descriptor limit. */
  lowered: boolean;
  fdLimit: number | null;
}

/**
 * The inbound connection caps in force. HTTPS keeps its whole `[http] max_connections`; when the
 * descriptor limit cannot also hold the SIP and SMPP caps (and a reserve), those two are lowered in
 * proportion, so connections flooding them run out of their own share and never of the API's.
 */
export function connectionCaps(config: Readonly<Config>, fdLimit: number | null = openFileLimit()): ConnectionCaps {
  let http = config.http.max_connections;
  let sipTcp = config.sip.tcp_max_connections;
  let smpp = config.smpp.max_connections;
  let lowered = false;
  if (fdLimit !== null) {
    const avail = Math.max(4, fdLimit - RESERVED_FDS - config.database.pool_max);
    // A limit too small even for the API's own cap: the API keeps half of what there is.
    if (http + sipTcp + smpp > avail && http > avail / 2) {
      http = Math.ceil(avail / 2);
      lowered = true;
    }
    const room = avail - http;
    if (sipTcp + smpp > room) {
      const share = room / (sipTcp + smpp);
      sipTcp = Math.max(1, Math.floor(sipTcp * share));
      smpp = Math.max(1, Math.floor(smpp * share));
      lowered = true;
    }
  }
  return {
    http,
    sipTcp,
    sipTcpPerSource: Math.min(config.sip.tcp_max_per_source, sipTcp),
    smpp,
    smppPerSource: Math.min(config.smpp.max_per_source, smpp),
    lowered,
    fdLimit,
  };
}
