import type { SellRateLookup } from '../switch/customers/deck-cache.js';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import type { Ledger } from '../../ledger/index.js';
import type { CoreDeps } from '../../platform/core.js';
import { createCounters, type Counters } from '../../platform/counters.js';
import { loadNodeId } from '../../platform/node-id.js';
import type { SipPlane } from '../../platform/sip-plane.js';
import {
  createTrunkB2bua,
  type BridgeOutcome,
  type CallObserver,
  type TrunkB2bua,
} from '../../telephony/sip/b2bua/index.js';
import type { SipRequest } from '../../telephony/sip/message.js';
import type { ServerTransaction } from '../../telephony/sip/transaction.js';
import type { SipPeer } from '../../telephony/sip/transport.js';
import { createCallMediaRelay } from '../../telephony/media/call-relay.js';
import type { SharedMediaPool } from '../../telephony/media/shared-pool.js';
import type { SharedAsteriskFarm } from '../../telephony/asterisk/index.js';
import type { AccountsService } from '../accounts/service.js';
import type { CdrsService } from '../cdrs/index.js';
import type { ApplicationService } from '../application/service.js';
import type { Module } from '../../platform/module.js';
import type { PurchasesService } from '../marketplace/purchases/service.js';
import type { Routing } from '../marketplace/routing/routing.js';
import { serviceUnavailable } from '../../http/errors.js';
import type { ProbeResult } from '../../telephony/sip/index.js';
import type { RoutesService } from '../marketplace/listings/service.js';
import type { RoutingCache } from '../marketplace/routing/routing-cache.js';
import { createEndpointHealth, type HealthTarget } from './endpoint-health.js';
import { callsRoutes, trunkIpPolicy } from './routes.js';
import type { LocalAnswerEndpoint, NumberCalls } from './number-calls.js';
import type { DncRefuses, ForwardPlanInput } from './planning.js';
import { createSipTrunksService, sipTransportOf } from './service.js';
import { every } from '../../platform/periodic.js';
import { parseNetworks, supplierGuardFrom } from '../../platform/outbound-guard.js';

const HOUSEKEEPING_MS = 30_000;
// The OPTIONS health tick: each endpoint is probed on its own interval (`[sip] options_interval_seconds`
// or the endpoint's), so the tick only has to be as fine as the shortest interval allowed (5 s).
const HEALTH_TICK_MS = 5_000;

/**
 * The voice plane: SIP on `[sip] host:port` (UDP and TCP) and `tls_port`, the trunk B2BUA wired to routing,
 * the ledger and CDRs (through the cdrs module), and the trunk IP and credential API.
 */
export function buildSipTrunksModule(
  core: CoreDeps,
  deps: {
    accounts: AccountsService;
    application: ApplicationService;
    ledger: Ledger;
    routing: Routing;
    purchases: PurchasesService;
    routes: RoutesService;
    cdrs: CdrsService;
    routingCache?: RoutingCache;
    /** Media relays for routes in proxy media mode. */
    media?: SharedMediaPool;
    /** `[media] engine = "asterisk"`: proxy-media routes anchor their audio in the farm instead. */
    asterisk?: SharedAsteriskFarm;
    /** The daemon's SIP stack; this module binds its ports at start and closes it at stop. */
    sip: SipPlane;
    /** Calls a number's seller brings in for the numbers it rented out (the numbers module). */
    numberCalls?: NumberCalls;
    /** The shared live-call and CPS counters, when the composition root shares them (the marketplace reads them). */
    counters?: Counters;
    /** The numbers module's answering endpoint (voicemail, AI agents on numbers). */
    localAnswer?: LocalAnswerEndpoint;
    /** Switch customers' sell-rate decks. */
    sellRates?: SellRateLookup;
    /** The Switch DNC's check of a customer's destination (asked at call admission). */
    dncRefuses?: DncRefuses;
  },
) {
  const { config, log } = core;
  const node = loadNodeId(config.paths.state);
  const counters = deps.counters ?? createCounters(core.redis, node, () => core.clock.now().getTime());
  const { sip } = deps;
  let b2bua: TrunkB2bua | null = null;
  const guard = supplierGuardFrom(config, {
    ...(core.self ? { isSelf: core.self.isSelf } : {}),
    ...(core.lookup ? { lookup: core.lookup } : {}),
  });
  const probe = async (t: HealthTarget): Promise<ProbeResult> => {
    if (!b2bua) throw serviceUnavailable('The SIP plane is not running');
    const transport = sipTransportOf(t.transport);
    // A refused endpoint is never sent anything (the health check counts it as failed). The probe
    // goes to the checked address; over TLS the name goes with it for the certificate check.
    const pinned = await guard.resolve(t.host, t.port);
    const servername = transport === 'tls' && isIP(t.host.replace(/^\[|\]$/g, '')) === 0 ? { servername: t.host } : {};
    return b2bua.probeEndpoint(
      { host: pinned.address, port: t.port, transport, ...servername },
      { timeoutMs: config.sip.options_timeout_ms },
    );
  };
  const health = createEndpointHealth({
    probe,
    targets: () => calls.repo.probeTargets(),
    log: log.child({ module: 'endpoint-health' }),
    failuresToDown: config.sip.options_failure_threshold,
    successesToUp: config.sip.options_recovery_threshold,
    intervalSeconds: config.sip.options_interval_seconds,
    now: () => core.clock.now().getTime(),
  });
  const calls = Object.assign(
    createSipTrunksService({
      ...core,
      ...deps,
      counters,
      node,
      log: log.child({ module: 'sip-trunks' }),
      endpointDown: (e) => health.isDown(e),
      resolveTarget: async (host, port) => (await guard.resolve(host, port)).address,
    }),
    { health, forward },
  );

  /**
   * An INVITE another module's handler took, forwarded as the payer's outbound call through the trunk
   * B2BUA (a revenue share number's `forward`): the same legs, failover, hold, settlement and CDRs
   * as a rented number's forward.
   */
  async function forward(
    req: SipRequest,
    tx: ServerTransaction,
    source: SipPeer,
    o: { forward: ForwardPlanInput; observer: CallObserver },
  ): Promise<BridgeOutcome> {
    if (!b2bua) return { reject: { status: 503, reason: 'Service Unavailable' } };
    const f = o.forward;
    return b2bua.bridge(req, tx, source, {
      attribution: { accountId: f.payer, via: 'handler' },
      to: f.target.kind === 'number' ? f.target.digits : f.dialled,
      plan: () => calls.policy.planForward(f),
      observer: o.observer,
    });
  }
  let loops: { stop(): Promise<void> }[] = [];

  const housekeeping = async () => {
    try {
      await calls.heartbeat();
      await counters.reconcile(calls.liveSlots());
      await calls.reconcileOrphans();
    } catch (err) {
      log.warn({ err }, 'call housekeeping failed');
    }
  };

  const module: Module = {
    name: 'sip-trunks',
    routes: callsRoutes(
      calls,
      deps.purchases,
      config.sip.primary_host,
      { routes: deps.routes, probe, record: health.record, guard },
      trunkIpPolicy(
        parseNetworks(config.security.private_trunk_networks, 'security.private_trunk_networks'),
        (ip) => core.self?.isOwnAddress(ip) ?? false,
      ),
    ),
    async start() {
      await calls.termsCache.start();
      await calls.pointsListener.start();
      // Before the SIP stack exists, so no API call of this daemon can be live yet.
      await calls.reconcileOrphans({ atStart: true });
      // Announces this daemon to the others sharing Redis and drops the shares it held before a
      // restart; left to the first housekeeping tick, for 30 s the other daemons would not count
      // this one's calls and this one would count its dead calls against every limit.
      await counters.reconcile(calls.liveSlots());
      const transport = await sip.listen();
      b2bua = createTrunkB2bua({
        stack: sip.stack,
        log: log.child({ plane: 'b2bua' }),
        clock: core.clock,
        realm: config.sip.primary_host,
        nonceSecret: sip.nonceSecret,
        loopMarker: sip.loopMarker,
        policy: calls.policy,
        sessionTimer: {
          minSeSeconds: config.sip.session_min_se_seconds,
          defaultSeconds: config.sip.session_expires_seconds,
        },
        ...(deps.asterisk
          ? { media: { openRelay: () => deps.asterisk!.get().openRelay() } }
          : deps.media
            ? { media: { openRelay: async () => createCallMediaRelay(await deps.media!.get().openRelay()) } }
            : {}),
      });
      const port = transport.port;
      core.health.register('sip', () => ({
        ok: true,
        port,
        tlsPort: transport.tlsPort,
        activeCalls: b2bua?.activeCalls() ?? 0,
      }));
      loops = [
        every(HOUSEKEEPING_MS, housekeeping),
        every(Math.min(HEALTH_TICK_MS, config.sip.options_interval_seconds * 1000), () =>
          health.checkDue().catch((err: unknown) => log.warn({ err }, 'endpoint health check failed')),
        ),
      ];
    },
    reload(tls) {
      // A CA file that cannot be read leaves the trust as it was: the error reaches the caller (and the log).
      const tlsCa = config.sip.tls_ca_file ? [readFileSync(config.sip.tls_ca_file)] : [];
      sip.stack.transport.reloadTls({ ...(tls ? { key: tls.key, cert: tls.cert } : {}), tlsCa });
    },
    ports: (): Record<string, number> => {
      if (!sip.listening) return {};
      const { port, tlsPort } = sip.stack.transport;
      return tlsPort === null ? { sip: port } : { sip: port, sip_tls: tlsPort };
    },
    async stop() {
      await Promise.all(loops.map((l) => l.stop()));
      if (b2bua) {
        b2bua.hangupAll();
        // Let the BYEs and the settlements they trigger finish, briefly.
        const until = Date.now() + 3000;
        while (calls.liveCallIds().length > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      }
      await sip.stack.close();
      await calls.termsCache.stop();
      await calls.pointsListener.stop();
    },
  };
  return { module, service: calls };
}
