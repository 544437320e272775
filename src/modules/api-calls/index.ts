import type { Ledger } from '../../ledger/index.js';
import type { CoreDeps } from '../../platform/core.js';
import { loadNodeId } from '../../platform/node-id.js';
import { createVoicePlane, type VoicePlane } from '../../telephony/calls/voice-plane.js';
import type { SharedMediaPool } from '../../telephony/media/shared-pool.js';
import type { SharedAsteriskFarm } from '../../telephony/asterisk/index.js';
import type { AccountsService } from '../accounts/service.js';
import type { ApplicationService } from '../application/service.js';
import type { Module } from '../../platform/module.js';
import type { SipPlane } from '../../platform/sip-plane.js';
import type { Routing } from '../marketplace/routing/routing.js';
import { commsCallsRoutes } from './routes.js';
import { createApiCallsService, type ApiCallsDeps } from './service.js';

const HEARTBEAT_MS = 30_000;

/**
 * Calls placed through the API: POST/GET /comms/calls over the daemon's SIP plane (whose ports the
 * calls module binds) and the media engine (`[media] engine`: native or an Asterisk farm), started on
 * first use.
 */
export function buildApiCallsModule(
  core: CoreDeps,
  deps: {
    accounts: AccountsService;
    application: ApplicationService;
    ledger: Ledger;
    routing: Routing;
    /** The same stack, port and loop marker as trunk calls. */
    sip: SipPlane;
    admission: ApiCallsDeps['admission'];
    callRecords: ApiCallsDeps['callRecords'];
    cdrs: ApiCallsDeps['cdrs'];
    extendLease?: (accountId: string, key: string, seconds: number) => Promise<void>;
    /** The daemon's media pool (shared with trunk media relays); without it the plane starts its own. */
    media?: SharedMediaPool;
    /** AI voice agents holding calls named with `aiAgentId`. */
    agents?: ApiCallsDeps['agents'];
    /** `[media] engine = "asterisk"`: the daemon's farm (shared with anchored trunk media). */
    asterisk?: SharedAsteriskFarm;
    /** Switch customers' sell-rate decks. */
    sellRates?: ApiCallsDeps['sellRates'];
    /** The Switch DNC's check of a customer's destination. */
    dncRefuses?: ApiCallsDeps['dncRefuses'];
  },
) {
  const { config, log } = core;
  // Found at start rather than on the first call, which would otherwise fail with a 500.
  if (config.media.engine === 'asterisk' && config.asterisk.hosts.length === 0) {
    throw new Error('config: [media] engine = "asterisk" needs at least one [[asterisk.hosts]] entry');
  }
  let voice: VoicePlane | null = null;
  const service = createApiCallsService({
    ...core,
    ...deps,
    log: log.child({ module: 'api-calls' }),
    node: loadNodeId(config.paths.state),
    voice() {
      if (voice) return voice;
      if (!deps.sip.listening) return null;
      voice = createVoicePlane({
        stack: deps.sip.stack,
        loopMarker: deps.sip.loopMarker,
        log: log.child({ plane: 'media' }),
        media: {
          workers: config.rtp.workers,
          portMin: config.rtp.port_min,
          portMax: config.rtp.port_max,
          bindAddress: config.rtp.bind_address,
          ...(config.rtp.advertise_address ? { advertiseAddress: config.rtp.advertise_address } : {}),
          rtpTimeoutMs: config.rtp.timeout_ms,
          ttsCacheDir: `${config.paths.state}/tts-cache`,
          ...(deps.media ? { pool: deps.media.get() } : {}),
        },
        onLegEnded: (o) => service.noteLeg(o),
        ...(deps.asterisk ? { farm: deps.asterisk.get() } : {}),
      });
      return voice;
    },
  });
  let timer: NodeJS.Timeout | undefined;
  const module: Module = {
    name: 'api-calls',
    routes: commsCallsRoutes(service),
    start() {
      timer = setInterval(
        () => void service.heartbeat().catch((err: unknown) => log.warn({ err }, 'api call heartbeat failed')),
        HEARTBEAT_MS,
      );
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      await service.stop();
      await voice?.close();
      voice = null;
    },
  };
  return { module, service };
}
