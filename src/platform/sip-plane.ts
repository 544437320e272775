import { readFileSync } from 'node:fs';
import { Counter, Gauge } from 'prom-client';
import { loadServerSecret } from '../db/server-secret.js';
import { registeredMetric, sipCallsRefusedTotal } from './registered-metrics.js';
import {
  createLoopMarker,
  createOverloadGuard,
  createSipStack,
  createSipTransport,
  probeEndpoint,
  type LoopMarker,
  type OverloadMetrics,
  type ProbeResult,
  type SipPeer,
  type SipStack,
  type SipTransport,
} from '../telephony/sip/index.js';
import type { SipMessageHandler } from '../telephony/sip/transport.js';
import type { CoreDeps } from './core.js';
import { connectionCaps } from './fd-budget.js';

/**
 * The daemon's one SIP stack (trunk calls, API calls, OPTIONS probes), built before the modules that
 * use it so each gets it at construction. Ports are bound by `listen()` (the calls module's start);
 * until then `listening` is false and a send rejects.
 */
export interface SipPlane {
  readonly stack: SipStack;
  /** One marker for every INVITE this daemon sends a supplier, trunk or API call. */
  readonly loopMarker: LoopMarker;
  /** The secret the trunk B2BUA's digest nonces are made with (the loop marker derives from it too). */
  readonly nonceSecret: string;
  readonly listening: boolean;
  /** Binds `[sip] host:port` (UDP and TCP) and `tls_port` when the daemon has TLS material. */
  listen(): Promise<SipTransport>;
  /** One OPTIONS over the stack; null when the plane is not listening (nothing can be sent). */
  probe(target: SipPeer, opts: { timeoutMs: number }): Promise<ProbeResult> | null;
}

/** Loads the nonce secret (a database read) and builds the stack over a transport that binds on `listen()`. */
export async function createSipPlane(core: CoreDeps): Promise<SipPlane> {
  const { config } = core;
  const log = core.log.child({ plane: 'sip' });
  const nonceSecret = await loadServerSecret(core.sql, 'sip-nonce');
  const handlers: SipMessageHandler[] = [];
  let bound: SipTransport | null = null;
  let closed = false;

  // The stack registers its handler when built; the real transport exists once the ports are bound.
  const transport: SipTransport = {
    get host() {
      return bound?.host ?? config.sip.host;
    },
    get port() {
      return bound?.port ?? 0;
    },
    get tlsPort() {
      return bound?.tlsPort ?? null;
    },
    send(message, dest) {
      return bound ? bound.send(message, dest) : Promise.reject(new Error('the SIP plane is not listening'));
    },
    post(message, dest, onError) {
      // Never called back before `post` returns: a transaction still starting would hear of its end.
      if (bound) bound.post(message, dest, onError);
      else transport.send(message, dest).catch(onError ?? (() => undefined));
    },
    onMessage(handler) {
      handlers.push(handler);
      bound?.onMessage(handler);
    },
    reloadTls(m) {
      bound?.reloadTls(m);
    },
    async close() {
      closed = true;
      overload.close();
      await bound?.close();
    },
  };
  const overload = createOverloadGuard({
    settings: {
      retransmitPct: config.sip.overload_retransmit_pct,
      resumeRetransmitPct: config.sip.overload_resume_retransmit_pct,
      busyPct: config.sip.overload_busy_pct,
      resumeBusyPct: config.sip.overload_resume_busy_pct,
      loopDelayMs: config.sip.overload_loop_delay_ms,
      resumeDelayMs: config.sip.overload_resume_delay_ms,
      maxInvitesInSetup: config.sip.overload_max_invites_in_setup,
      retryAfterSeconds: config.sip.overload_retry_after_seconds,
    },
    log,
    metrics: overloadMetrics(),
  });
  const stack = createSipStack({ transport, log, timerValues: { t1: config.sip.t1_ms }, overload });

  return {
    stack,
    loopMarker: createLoopMarker(nonceSecret),
    nonceSecret,
    get listening() {
      return bound !== null && !closed;
    },
    async listen() {
      if (bound) return bound;
      const caps = connectionCaps(config);
      const real = await createSipTransport({
        host: config.sip.host,
        port: config.sip.port,
        log,
        tcpMaxConnections: caps.sipTcp,
        tcpMaxPerSource: caps.sipTcpPerSource,
        tcpFirstMessageMs: config.sip.tcp_idle_seconds * 1000,
        ...(core.tls ? { tls: { port: config.sip.tls_port, key: core.tls.key, cert: core.tls.cert } } : {}),
        ...(config.sip.tls_ca_file ? { tlsCa: [readFileSync(config.sip.tls_ca_file)] } : {}),
      });
      for (const h of handlers) real.onMessage(h);
      // Building the modules held the loop; the first calls are judged by what follows.
      overload.reset();
      bound = real;
      return real;
    },
    probe(target, opts) {
      return bound && !closed ? probeEndpoint(stack, target, opts) : null;
    },
  };
}

/** Overload refusals join the trunk refusals' counter as cause `overload`; the share and the delay behind it are gauges. */
function overloadMetrics(): OverloadMetrics {
  const share = registeredMetric(
    'svc_sip_overload_refused_share',
    () =>
      new Gauge({
        name: 'svc_sip_overload_refused_share',
        help: 'Share of new INVITEs refused with 503 for overload (0 to 1)',
      }),
  );
  const delay = registeredMetric(
    'svc_sip_event_loop_delay_seconds',
    () =>
      new Gauge({
        name: 'svc_sip_event_loop_delay_seconds',
        help: 'Mean event-loop delay over the last overload-control window',
      }),
  );
  const busy = registeredMetric(
    'svc_sip_event_loop_busy_ratio',
    () =>
      new Gauge({
        name: 'svc_sip_event_loop_busy_ratio',
        help: 'Event-loop utilisation (0 to 1) over the last overload-control window',
      }),
  );
  const retransmitShare = registeredMetric(
    'svc_sip_invite_retransmit_share',
    () =>
      new Gauge({
        name: 'svc_sip_invite_retransmit_share',
        help: 'Admitted new INVITEs that callers retransmitted, per admitted new INVITE, over the last half second',
      }),
  );
  const retransmissions = registeredMetric(
    'svc_sip_invite_retransmissions_total',
    () =>
      new Counter({
        name: 'svc_sip_invite_retransmissions_total',
        help: 'Admitted new INVITEs (no To tag) that callers retransmitted, each counted once',
      }),
  );
  const overloadRefusals = sipCallsRefusedTotal().labels('overload');
  return {
    retransmission: () => retransmissions.inc(),
    retransmitShare: (v) => retransmitShare.set(v),
    refused: () => overloadRefusals.inc(),
    ratio: (v) => share.set(v),
    loopDelay: (ms) => delay.set(ms / 1000),
    loopBusy: (u) => busy.set(u),
  };
}
