/**
 * UDP and TCP on one port, TLS on a second (RFC 3261 §18, §26.2): stream framing, received/rport (RFC 3581),
 * 400 for malformed requests.
 */
import dgram from 'node:dgram';
import dns from 'node:dns';
import net from 'node:net';
import tls from 'node:tls';
import type { Logger } from 'pino';
import { createConnectionCaps } from '../../platform/connection-caps.js';
import { formatVia, splitOutside, type Via } from './headers.js';
import {
  canonicalName,
  primeView,
  serialize,
  viasOfLine,
  type HeaderField,
  type SipMessage,
  type SipResponse,
} from './message.js';
import { createStreamFramer, parseMessage, SipMessageError, SipParseError } from './parser.js';

export type SipTransportName = 'udp' | 'tcp' | 'tls';

/** Connection-oriented transports: no retransmission timers, responses on the request's connection. */
export const isReliable = (t: SipTransportName): boolean => t !== 'udp';

export interface SipPeer {
  transport: SipTransportName;
  host: string;
  port: number;
  /**
   * TLS: the name the certificate must carry (and the SNI), when `host` is the address that name
   * was resolved and checked to. The connection goes to `host`, never to a second resolution of
   * the name, which could answer differently (DNS rebinding).
   */
  servername?: string;
}

export type SipMessageHandler = (message: SipMessage, source: SipPeer) => void;

export interface SipTransport {
  /** The address we advertise in Via and Contact. */
  readonly host: string;
  /** The bound port (the real one when 0 was asked for). */
  readonly port: number;
  /** The bound TLS port, or null without a TLS listener. */
  readonly tlsPort: number | null;
  /**
   * Sends one message, or one already serialized; TCP reuses an open connection to the peer or
   * opens one. Rejects on a send failure.
   */
  send(message: SipMessage | Uint8Array, dest: SipPeer): Promise<void>;
  /**
   * Sends one message with nothing to wait on: `onError` (when given) hears of a failed send, as
   * `send` would have rejected, and never before `post` returns. Over UDP without `onError`, a
   * failed send goes unseen, as a caught rejection did.
   */
  post(message: SipMessage | Uint8Array, dest: SipPeer, onError?: (err: Error) => void): void;
  onMessage(handler: SipMessageHandler): void;
  /**
   * New TLS material without a restart (SIGHUP): the listener's key and certificate for new
   * handshakes, and the outbound trust (system CAs plus `tlsCa`) for new connections. Connections
   * already open, and the calls on them, are kept.
   */
  reloadTls(m: { key?: string | Buffer; cert?: string | Buffer; tlsCa?: Array<string | Buffer> }): void;
  close(): Promise<void>;
}

export interface SipTransportOptions {
  host: string;
  port: number;
  log: Logger;
  /** Host written in Via/Contact when `host` is a wildcard address. */
  advertisedHost?: string;
  /** TCP connections idle this long are closed. */
  tcpIdleMs?: number;
  /**
   * An inbound TCP or TLS connection that has not delivered one complete SIP message by then is
   * closed (default 10 s): an idle socket costs us a file descriptor and costs its sender nothing.
   */
  tcpFirstMessageMs?: number;
  /** Inbound TCP and TLS connections open at once, all sources together (default 4096). */
  tcpMaxConnections?: number;
  /** Inbound TCP and TLS connections open at once from one source address (default 64). */
  tcpMaxPerSource?: number;
  /**
   * An outbound TCP connect or TLS handshake not done by then fails the send (default 5 s): a
   * silent or black-holed supplier must not hold a socket for the OS's minutes-long connect timeout.
   */
  connectTimeoutMs?: number;
  /** The TLS listener (0: any free port) with the daemon's key and certificate. */
  tls?: { port: number; key: string | Buffer; cert: string | Buffer };
  /**
   * Trust for outbound TLS: system CAs plus these (a supplier's private CA). Verification is never turned off;
   * without a listener, outbound TLS still works.
   */
  tlsCa?: Array<string | Buffer>;
}

const peerKey = (host: string, port: number): string => `${host.replace(/^\[|\]$/g, '')}:${port}`;
// Every send passes through here: the replace only for a bracketed (IPv6) host.
const bareHost = (host: string): string =>
  host.charCodeAt(0) === 91 || host.endsWith(']') ? host.replace(/^\[|\]$/g, '') : host;

/** Where a response goes (RFC 3261 §18.2.2, RFC 3581 §4) given the top Via of the request. */
export function responseTarget(via: Via, transport: SipTransportName): SipPeer {
  const received = via.params['received'];
  const rport = via.params['rport'];
  const host = received ?? via.host;
  const port = rport && /^\d+$/.test(rport) ? Number(rport) : (via.port ?? 5060);
  return { transport, host: bareHost(host), port };
}

/**
 * Stamps `received` and `rport` on the top Via of an incoming request (RFC 3261 §18.2.1, RFC 3581 §4).
 * The stamped Via is a new header line (the parsed views are shared and frozen), primed with its
 * parsed form so the stack's reads of it parse nothing; a Via that needs no stamp is left as it came.
 */
export function stampVia(headers: HeaderField[], source: SipPeer): void {
  const idx = headers.findIndex((h) => (h.key ?? canonicalName(h.name)) === 'via');
  const line = headers[idx];
  if (!line) return;
  const [top, ...rest] = viasOfLine(line);
  if (!top) return;
  const params = { ...top.params };
  let changed = false;
  if (bareHost(top.host) !== source.host) {
    params['received'] = source.host;
    changed = true;
  }
  if ('rport' in params) {
    params['rport'] = String(source.port);
    params['received'] = source.host;
    changed = true;
  }
  if (!changed) return;
  const stamped: Via = { ...top, params };
  const first = formatVia(stamped);
  const value =
    rest.length === 0
      ? first
      : [
          first,
          ...splitOutside(line.value, ',')
            .slice(1)
            .map((p) => p.trim()),
        ].join(', ');
  const next: HeaderField = { name: line.name, value, key: 'via' };
  primeView(next, [stamped, ...rest]);
  headers[idx] = next;
}

const ignore = (): void => undefined;

/** A 400 (or 505) built from what could be read of a malformed request, or undefined when it cannot be answered. */
export function badRequestFor(err: SipParseError): SipResponse | undefined {
  if (!(err instanceof SipMessageError) || !err.isRequest || err.method === 'ACK') return undefined;
  const headers: HeaderField[] = [];
  for (const name of ['via', 'from', 'to', 'call-id', 'cseq']) {
    for (const h of err.headers) if (canonicalName(h.name) === name) headers.push({ ...h });
  }
  if (!headers.some((h) => canonicalName(h.name) === 'via')) return undefined;
  const reason =
    err.status === 505 ? 'Version Not Supported' : `Bad Request (${err.reason.replace(/[^\x20-\x7e]/g, '?')})`;
  return { kind: 'response', version: 'SIP/2.0', status: err.status, reason, headers, body: Buffer.alloc(0) };
}

/**
 * The kernel's default UDP receive buffer (about 208 KiB, a few hundred INVITEs) overflows when a
 * burst arrives while the event loop is busy, and what overflows is dropped unseen: a lost ACK keeps
 * a call up (and billed) until the 32 s ACK timeout. Linux caps this at net.core.rmem_max.
 */
const UDP_RECEIVE_BUFFER_BYTES = 8 * 1024 * 1024;

/**
 * The socket's address lookup: an IP address of the socket's family is its own answer, at once.
 * dgram sends every datagram through a lookup of its destination, and `dns.lookup` answers an IP
 * address a tick later, so each send cost a deferred call and its async bookkeeping. A name still
 * goes to `dns.lookup`, as does an address of the other family (which it refuses as before).
 */
function literalLookup(family: 4 | 6): NonNullable<dgram.SocketOptions['lookup']> {
  return (host, options, callback) => {
    if (net.isIP(host) === family) return callback(null, host, family);
    dns.lookup(host, options, callback);
  };
}

function bindUdp(host: string, port: number): Promise<dgram.Socket> {
  return new Promise((resolve, reject) => {
    const family = net.isIPv6(host) ? 6 : 4;
    const sock = dgram.createSocket({ type: family === 6 ? 'udp6' : 'udp4', lookup: literalLookup(family) });
    sock.once('error', reject);
    sock.bind({ address: host, port, exclusive: true }, () => {
      sock.off('error', reject);
      try {
        sock.setRecvBufferSize(UDP_RECEIVE_BUFFER_BYTES);
      } catch {
        // The system's default buffer then: smaller, not wrong.
      }
      resolve(sock);
    });
  });
}

function listenTcp(server: net.Server | tls.Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port }, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

export async function createSipTransport(opts: SipTransportOptions): Promise<SipTransport> {
  const { log } = opts;
  const idleMs = opts.tcpIdleMs ?? 10 * 60_000;
  const firstMessageMs = opts.tcpFirstMessageMs ?? 10_000;
  const maxInbound = opts.tcpMaxConnections ?? 4096;
  const maxPerSource = opts.tcpMaxPerSource ?? 64;
  // Inbound connections (raw sockets, TLS ones counted before their handshake) per source address.
  const caps = createConnectionCaps({ max: maxInbound, perSource: maxPerSource });
  const handlers: SipMessageHandler[] = [];
  // Keyed by transport too: a peer may hold a TCP and a TLS connection to us at once.
  const conns = new Map<string, net.Socket>();
  const connKey = (t: SipTransportName, host: string, port: number): string => `${t}|${peerKey(host, port)}`;
  let closed = false;

  const deliver = (msg: SipMessage, source: SipPeer): void => {
    if (msg.kind === 'request') {
      try {
        stampVia(msg.headers, source);
      } catch {
        return;
      }
    }
    for (const h of handlers) {
      try {
        h(msg, source);
      } catch (err) {
        log.error({ err }, 'sip handler failed');
      }
    }
  };

  const refuse = (err: SipParseError, source: SipPeer, reply: (buf: Buffer) => void): void => {
    const res = badRequestFor(err);
    log.info({ reason: err.reason, peer: `${source.host}:${source.port}`, answered: !!res }, 'malformed sip message');
    if (res) reply(serialize(res));
  };

  let udp: dgram.Socket | undefined;
  const server = net.createServer();
  // With port 0 the UDP port is picked first and TCP may find it taken; try a few times.
  for (let attempt = 0; ; attempt++) {
    try {
      udp = await bindUdp(opts.host, opts.port);
      await listenTcp(server, opts.host, udp.address().port);
      break;
    } catch (err) {
      const sock = udp;
      udp = undefined;
      if (sock) await new Promise<void>((r) => sock.close(() => r()));
      if (opts.port !== 0 || attempt >= 5) throw err;
    }
  }
  const udpSock = udp;
  const port = udpSock.address().port;
  const udpFamily = udpSock.address().family === 'IPv6' ? 6 : 4;
  let tlsServer: tls.Server | undefined;
  if (opts.tls) {
    // A handshake never finished holds a descriptor like an idle connection does.
    tlsServer = tls.createServer({
      key: opts.tls.key,
      cert: opts.tls.cert,
      minVersion: 'TLSv1.2',
      handshakeTimeout: firstMessageMs,
    });
    try {
      await listenTcp(tlsServer, opts.host, opts.tls.port);
    } catch (err) {
      server.close();
      udpSock.close();
      throw err;
    }
  }
  const tlsPort = tlsServer ? (tlsServer.address() as net.AddressInfo).port : null;
  let outboundCa = [...tls.rootCertificates, ...(opts.tlsCa ?? [])];

  udpSock.on('message', (buf, rinfo) => {
    const source: SipPeer = { transport: 'udp', host: rinfo.address, port: rinfo.port };
    let msg: SipMessage;
    try {
      msg = parseMessage(buf, { datagram: true });
    } catch (err) {
      if (err instanceof SipParseError) refuse(err, source, (b) => udpSock.send(b, rinfo.port, rinfo.address));
      else log.error({ err }, 'sip parser failed');
      return;
    }
    deliver(msg, source);
  });
  udpSock.on('error', (err) => log.error({ err }, 'sip udp socket error'));

  /**
   * Counts an inbound connection against the total and per-source caps; false (and the socket
   * destroyed) when over either. Refused before any read, so a flood costs one accept each.
   */
  const admit = (sock: net.Socket): boolean => {
    if (closed) {
      sock.destroy();
      return false;
    }
    const refused = caps.admit(sock);
    if (refused)
      log.debug(
        { peer: refused.ip, inbound: refused.open, fromIp: refused.fromIp },
        'sip tcp connection refused: over the connection cap',
      );
    return refused === null;
  };

  const adopt = (sock: net.Socket, key: string, transport: 'tcp' | 'tls', accepted: boolean): void => {
    conns.set(key, sock);
    // A peer we accepted gets seconds to say something; once it has, or when we opened the
    // connection ourselves, the long idle time applies.
    let spoken = !accepted;
    sock.setTimeout(spoken ? idleMs : firstMessageMs, () => {
      if (!spoken) log.debug({ key }, 'sip tcp connection closed: no sip message in time');
      sock.destroy();
    });
    const framer = createStreamFramer();
    const source: SipPeer = { transport, host: sock.remoteAddress ?? '', port: sock.remotePort ?? 0 };
    sock.on('data', (chunk) => {
      let frames;
      try {
        frames = framer.push(chunk);
      } catch (err) {
        log.error({ err }, 'sip framer failed');
        sock.destroy();
        return;
      }
      for (const f of frames) {
        if (f.message && !spoken) {
          spoken = true;
          sock.setTimeout(idleMs);
        }
        if (f.message) deliver(f.message, source);
        else if (f.error) {
          refuse(f.error, source, (b) => sock.write(b));
          // Framing is lost after a bad length: the connection cannot be trusted any more.
          if (/Content-Length|too large/.test(f.error.reason)) sock.end();
        }
      }
    });
    sock.on('error', (err) => log.debug({ err, key }, 'sip tcp connection error'));
    sock.on('close', () => {
      if (conns.get(key) === sock) conns.delete(key);
    });
  };

  server.on('connection', (sock) => {
    if (!admit(sock)) return;
    adopt(sock, connKey('tcp', sock.remoteAddress ?? '', sock.remotePort ?? 0), 'tcp', true);
  });
  server.on('error', (err) => log.error({ err }, 'sip tcp server error'));
  if (tlsServer) {
    // The raw socket, before the handshake: an idle or half-open TLS connection counts like a TCP one.
    tlsServer.on('connection', (raw: net.Socket) => void admit(raw));
    tlsServer.on('secureConnection', (sock) => {
      if (closed) return void sock.destroy();
      adopt(sock, connKey('tls', sock.remoteAddress ?? '', sock.remotePort ?? 0), 'tls', true);
    });
    // A failed handshake (plain bytes, a bad client hello) only costs that connection.
    tlsServer.on('tlsClientError', (err, sock) => {
      log.debug({ err: err.message, peer: sock.remoteAddress }, 'sip tls handshake failed');
      sock.destroy();
    });
    tlsServer.on('error', (err) => log.error({ err }, 'sip tls server error'));
  }

  const connectTimeoutMs = opts.connectTimeoutMs ?? 5000;
  // Sends to a peer while its connection is being opened share that one connection.
  const opening = new Map<string, Promise<net.Socket>>();
  const open = (dest: SipPeer): Promise<net.Socket> =>
    new Promise((resolve, reject) => {
      const t = dest.transport === 'tls' ? 'tls' : 'tcp';
      const sock =
        t === 'tls'
          ? tls.connect({
              host: dest.host,
              port: dest.port,
              ca: outboundCa,
              minVersion: 'TLSv1.2',
              // The certificate is checked against `servername` when one is given; SNI takes names
              // only, and without a name an IP address is checked against the certificate's IP SANs.
              ...(dest.servername && !net.isIP(dest.servername)
                ? { servername: dest.servername }
                : net.isIP(dest.host)
                  ? {}
                  : { servername: dest.host }),
            })
          : net.connect({ host: dest.host, port: dest.port });
      const timer = setTimeout(() => {
        sock.destroy();
        reject(
          Object.assign(new Error(`sip ${t} connect to ${dest.host}:${dest.port} timed out`), { code: 'ETIMEDOUT' }),
        );
      }, connectTimeoutMs);
      const fail = (err: Error) => {
        clearTimeout(timer);
        reject(err);
      };
      sock.once('error', fail);
      sock.once(t === 'tls' ? 'secureConnect' : 'connect', () => {
        clearTimeout(timer);
        sock.off('error', fail);
        adopt(sock, connKey(t, dest.host, dest.port), t, false);
        resolve(sock);
      });
    });
  const connect = (dest: SipPeer): Promise<net.Socket> => {
    const key = connKey(dest.transport === 'tls' ? 'tls' : 'tcp', dest.host, dest.port);
    let pending = opening.get(key);
    if (!pending) {
      pending = open(dest).finally(() => opening.delete(key));
      opening.set(key, pending);
    }
    return pending;
  };

  const send = async (message: SipMessage | Uint8Array, dest: SipPeer): Promise<void> => {
    if (closed) throw new Error('sip transport closed');
    const buf = message instanceof Uint8Array ? message : serialize(message);
    const host = bareHost(dest.host);
    if (dest.transport === 'udp') {
      await new Promise<void>((resolve, reject) =>
        udpSock.send(buf, dest.port, host, (err) => (err ? reject(err) : resolve())),
      );
      return;
    }
    let sock = conns.get(connKey(dest.transport, host, dest.port));
    if (!sock || sock.destroyed) sock = await connect({ ...dest, host });
    sock.write(buf);
  };

  const wildcard = opts.host === '0.0.0.0' || opts.host === '::';
  const advertised = opts.advertisedHost ?? (wildcard ? '127.0.0.1' : opts.host);
  return {
    host: net.isIPv6(advertised) ? `[${advertised}]` : advertised,
    port,
    tlsPort,
    onMessage(h) {
      handlers.push(h);
    },
    reloadTls(m) {
      if (tlsServer && m.key && m.cert) tlsServer.setSecureContext({ key: m.key, cert: m.cert, minVersion: 'TLSv1.2' });
      if (m.tlsCa) outboundCa = [...tls.rootCertificates, ...m.tlsCa];
    },
    send,
    post(message, dest, onError) {
      if (closed || dest.transport !== 'udp') {
        send(message, dest).catch(onError ?? ignore);
        return;
      }
      // Seven datagrams a call, most of them responses and ACKs whose outcome nobody reads: each
      // `send` cost two promises, a callback and a nextTick for dgram's answer. Without a callback
      // dgram skips its nextTick; with one, only the callback is made. A host that is not an
      // address of the socket's family goes through a DNS look-up whose failure dgram would emit
      // as a socket error without a callback, so it gets one that ignores it, as before.
      const host = bareHost(dest.host);
      const cb = onError
        ? (err: Error | null) => void (err && onError(err))
        : net.isIP(host) === udpFamily
          ? undefined
          : ignore;
      try {
        udpSock.send(message instanceof Uint8Array ? message : serialize(message), dest.port, host, cb);
      } catch (err) {
        // A bad port throws here; `send` rejected for it.
        if (onError) process.nextTick(onError, err as Error);
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const s of conns.values()) s.destroy();
      conns.clear();
      await Promise.all([
        new Promise<void>((r) => server.close(() => r())),
        new Promise<void>((r) => (tlsServer ? tlsServer.close(() => r()) : r())),
        new Promise<void>((r) => udpSock.close(() => r())),
      ]);
    },
  };
}
