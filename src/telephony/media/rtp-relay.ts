import type { Socket } from 'node:dgram';
import { isIP } from 'node:net';
import type { FromWorker, RelaySideName } from './rtp-protocol.js';

/**
 * Media relays inside an RTP worker (routes in proxy media mode): each call has two sides, the
 * caller's and the callee's, each with an RTP socket on an even port and an RTCP socket on the next
 * one. What arrives on one side leaves from the other side's socket of the same kind, untouched:
 * no decoding, no transcoding, no clock.
 *
 * Symmetric RTP (RFC 4961) with latching: a side's first packet from the address its SDP named
 * fixes the source port it is sent to (NAT rewrites ports); an SDP naming a private address is a
 * caller behind NAT, so there the first packet from any address is latched. After that only the
 * latched source feeds the side, so nobody can take a call's audio over by guessing a port. A new
 * SDP for a side (re-INVITE) starts its latching again; if that offer is refused, the side goes back
 * to its earlier target and latch (RFC 3264 §8: a refused offer leaves the session as it was).
 */

export interface BoundPair {
  rtp: Socket;
  rtcp: Socket;
  /** The RTP port (even); RTCP is on port + 1. */
  port: number;
}

interface Side {
  pair: BoundPair;
  /** From the side's SDP; null until it is known (nothing is forwarded to it before). */
  sdp: { address: string; port: number; anySource: boolean } | null;
  rtpSource: { address: string; port: number } | null;
  rtcpSource: { address: string; port: number } | null;
  /** What the side had before its latest new target, for going back when that offer is refused. */
  before: Pick<Side, 'sdp' | 'rtpSource' | 'rtcpSource'> | null;
}

interface Relay {
  id: number;
  caller: Side;
  callee: Side;
  lastPacket: bigint;
  timeoutNs: bigint;
  /** Timed out only while armed (answered and audio expected both ways). */
  armed: boolean;
  timedOut: boolean;
}

export interface RelayTableDeps {
  post(msg: FromWorker): void;
  /** Binds an even RTP port and the RTCP port after it; null when the range is full. */
  allocatePair(): Promise<BoundPair | null>;
  /** Closes both sockets and frees the port. */
  releasePair(pair: BoundPair): Promise<void>;
  defaultTimeoutMs: number;
}

/** RFC 1918, carrier-grade NAT, link-local and IPv6 unique-local addresses. */
export function isPrivateAddress(address: string): boolean {
  if (isIP(address) === 4) {
    const [a = 0, b = 0] = address.split('.').map(Number);
    return (
      a === 10 ||
      (a === 172 && b >= 16 && b <= 31) ||
      (a === 192 && b === 168) ||
      (a === 100 && b >= 64 && b <= 127) ||
      (a === 169 && b === 254)
    );
  }
  const lower = address.toLowerCase();
  return isIP(address) === 6 && (lower.startsWith('fc') || lower.startsWith('fd') || lower.startsWith('fe80:'));
}

const TIMEOUT_CHECK_MS = 500;

export function createRelayTable(deps: RelayTableDeps) {
  const relays = new Map<number, Relay>();
  let packetsRelayed = 0;
  let checker: NodeJS.Timeout | null = null;

  /** Whether a packet from `from` may feed `side`, latching its source when it is the first. */
  const admit = (side: Side, kind: 'rtp' | 'rtcp', address: string, port: number): boolean => {
    const key = kind === 'rtp' ? 'rtpSource' : 'rtcpSource';
    const latched = side[key];
    if (latched) return latched.address === address && latched.port === port;
    if (!side.sdp) return false;
    if (!side.sdp.anySource && side.sdp.address !== address) return false;
    side[key] = { address, port };
    return true;
  };

  /** Where to send a packet of `kind` to `side`: its latched source, else what its SDP named. */
  const targetOf = (side: Side, kind: 'rtp' | 'rtcp'): { address: string; port: number } | null => {
    const latched = kind === 'rtp' ? side.rtpSource : side.rtcpSource;
    if (latched) return latched;
    if (!side.sdp) return null;
    return kind === 'rtp' ? side.sdp : { address: side.sdp.address, port: side.sdp.port + 1 };
  };

  const forward = (
    relay: Relay,
    from: Side,
    to: Side,
    kind: 'rtp' | 'rtcp',
    msg: Buffer,
    address: string,
    port: number,
  ): void => {
    if (!admit(from, kind, address, port)) return;
    relay.lastPacket = process.hrtime.bigint();
    const target = targetOf(to, kind);
    if (!target) return;
    packetsRelayed++;
    to.pair[kind].send(msg, target.port, target.address);
  };

  const watch = (relay: Relay, from: Side, to: Side): void => {
    from.pair.rtp.on('message', (msg, r) => forward(relay, from, to, 'rtp', msg, r.address, r.port));
    from.pair.rtcp.on('message', (msg, r) => forward(relay, from, to, 'rtcp', msg, r.address, r.port));
    for (const s of [from.pair.rtp, from.pair.rtcp])
      s.on('error', (err) => deps.post({ type: 'error', message: `relay ${relay.id} socket: ${err.message}` }));
  };

  const checkTimeouts = (): void => {
    const now = process.hrtime.bigint();
    let armed = 0;
    for (const r of relays.values()) {
      if (!r.armed || r.timedOut) continue;
      armed++;
      if (now - r.lastPacket > r.timeoutNs) {
        r.timedOut = true;
        deps.post({ type: 'relay-timeout', relayId: r.id });
      }
    }
    if (armed === 0 && checker !== null) {
      clearInterval(checker);
      checker = null;
    }
  };

  const close = async (relayId: number): Promise<void> => {
    const relay = relays.get(relayId);
    relays.delete(relayId);
    if (relay) await Promise.all([deps.releasePair(relay.caller.pair), deps.releasePair(relay.callee.pair)]);
    deps.post({ type: 'relay-closed', relayId });
  };

  return {
    async open(relayId: number, timeoutMs: number | null): Promise<void> {
      const caller = await deps.allocatePair();
      const callee = caller ? await deps.allocatePair() : null;
      if (!caller || !callee) {
        if (caller) await deps.releasePair(caller);
        deps.post({ type: 'relay-open-failed', relayId, message: 'no free RTP port in range' });
        return;
      }
      const side = (pair: BoundPair): Side => ({ pair, sdp: null, rtpSource: null, rtcpSource: null, before: null });
      const relay: Relay = {
        id: relayId,
        caller: side(caller),
        callee: side(callee),
        lastPacket: process.hrtime.bigint(),
        timeoutNs: BigInt(Math.round((timeoutMs ?? deps.defaultTimeoutMs) * 1e6)),
        armed: false,
        timedOut: false,
      };
      watch(relay, relay.caller, relay.callee);
      watch(relay, relay.callee, relay.caller);
      relays.set(relayId, relay);
      deps.post({ type: 'relay-opened', relayId, callerPort: caller.port, calleePort: callee.port });
    },

    /** A side's SDP named where it takes audio: forwarding to it starts; a new target starts its latching again. */
    remote(relayId: number, sideName: RelaySideName, address: string, port: number): void {
      const relay = relays.get(relayId);
      if (!relay) return;
      const side = relay[sideName];
      // The same target again (an answer repeating the early-media SDP, a refresh): the latch stands.
      if (side.sdp && side.sdp.address === address && side.sdp.port === port) return;
      side.before = { sdp: side.sdp, rtpSource: side.rtpSource, rtcpSource: side.rtcpSource };
      side.sdp = { address, port, anySource: isPrivateAddress(address) };
      side.rtpSource = null;
      side.rtcpSource = null;
    },

    /** The offer that gave a side its latest target was refused: its earlier target and latch again. */
    revert(relayId: number, sideName: RelaySideName): void {
      const side = relays.get(relayId)?.[sideName];
      if (!side?.before) return;
      Object.assign(side, side.before, { before: null });
    },

    arm(relayId: number, armed: boolean): void {
      const relay = relays.get(relayId);
      if (!relay) return;
      // Counted from now: a call put on hold for an hour is not timed out the moment it resumes.
      if (armed && !relay.armed) relay.lastPacket = process.hrtime.bigint();
      relay.armed = armed;
      if (armed && checker === null) checker = setInterval(checkTimeouts, TIMEOUT_CHECK_MS);
    },

    close,

    size: () => relays.size,
    packetsRelayed: () => packetsRelayed,
    resetStats(): void {
      packetsRelayed = 0;
    },
    async closeAll(): Promise<void> {
      if (checker !== null) clearInterval(checker);
      checker = null;
      await Promise.all([...relays.keys()].map((id) => close(id)));
    },
  };
}

export type RelayTable = ReturnType<typeof createRelayTable>;
