import type { CoreDeps } from '../../../platform/core.js';
import type { Module } from '../../../platform/module.js';
import type { SipPlane } from '../../../platform/sip-plane.js';
import { createMediaPlane, type MediaPlane } from '../../../telephony/media/index.js';
import type { SharedMediaPool } from '../../../telephony/media/shared-pool.js';
import type { AgentCalls } from '../../api-calls/agent.js';
import type { NumberManagement } from '../manage.js';
import { createNumberAnswering, type NumberAnsweringDeps } from './answering.js';
import { createGreetingCache } from './greeting-cache.js';
import { voicemailRoutes } from './routes.js';
import { createVoicemailService } from './service.js';

/**
 * Numbers answered by the exchange itself: voicemail (settings, messages, recordings) and the
 * hand-off to an attached AI voice agent. Its SIP request handler is registered here, at build
 * time, so it sees the exchange's own answering INVITEs before the trunk B2BUA (registered at
 * the calls module's start) would take them for trunk calls.
 */
export function buildNumberVoice(
  core: CoreDeps,
  deps: {
    sip: SipPlane;
    media: SharedMediaPool;
    manage: NumberManagement;
    agents?: AgentCalls | undefined;
    /** An agent's transfer on a number's call, placed as the renter's own outbound call. */
    transfer?: NumberAnsweringDeps['transfer'];
    /** The agent handed a number's caller over: the trunk call's agent fee stops there. */
    agentLeft?: NumberAnsweringDeps['agentLeft'];
  },
) {
  const { config } = core;
  const log = core.log.child({ module: 'numbers-voice' });
  const stateDir = config.paths.state;
  // Prompts (TTS, MP3 greetings) and the guarded downloader, made on the first answered call.
  let plane: MediaPlane | null = null;
  const media = (): MediaPlane =>
    (plane ??= createMediaPlane({
      log,
      pool: deps.media.get(),
      workers: config.rtp.workers,
      portMin: config.rtp.port_min,
      portMax: config.rtp.port_max,
      ttsCacheDir: `${stateDir}/tts-cache`,
    }));
  // Decoded greetings, kept across calls; the voicemail settings drop a number's when they change it.
  const greetings = createGreetingCache({
    decode: (mp3, codec) => media().renderer.play(mp3, codec),
    clock: core.clock,
  });
  const answering = createNumberAnswering({
    sip: deps.sip,
    media: () => deps.media.get(),
    renderer: () => media().renderer,
    download: (url) => media().downloader.download(url),
    sql: core.sql,
    clock: core.clock,
    log,
    stateDir,
    speechLevel: config.ai.speech_level,
    greetings,
    agents: deps.agents,
    transfer: deps.transfer,
    agentLeft: deps.agentLeft,
  });
  const voicemail = createVoicemailService({
    sql: core.sql,
    clock: core.clock,
    log,
    manage: deps.manage,
    stateDir,
    greetingChanged: (didId) => greetings.invalidate(didId),
  });
  const module: Module = {
    name: 'numbers-voice',
    routes: voicemailRoutes(voicemail),
    async start() {
      const n = await voicemail.finishDeletions();
      if (n) log.info({ voicemails: n }, 'finished voicemail deletions a stop interrupted');
    },
    async stop() {
      await answering.hangupAll();
      await plane?.close();
    },
  };
  return { module, service: { answering, voicemail, greetings } };
}
