import type { Logger } from 'pino';
import type { CallEngine } from '../engine.js';
import { createAsteriskFarm, type AsteriskFarm, type AsteriskSettings } from '../asterisk/index.js';
import { createMediaPlane, type MediaPlane, type MediaPlaneOptions } from '../media/index.js';
import type { LoopMarker } from '../sip/loop-marker.js';
import type { SipStack } from '../sip/stack.js';
import { createSipDialer, type LegOutcome, type SipDialer, type SipDialerOptions } from './sip-dialer.js';

/** What the call API needs to place calls: an engine, and the safe downloader for `play` URLs. */
export interface VoicePlane {
  engine: CallEngine;
  dialer: SipDialer;
  download(url: string): Promise<Uint8Array>;
  close(): Promise<void>;
}

/**
 * The SIP dialer over `stack` behind a call engine: the native media plane's, or (`asterisk` given)
 * the ARI engine over an Asterisk farm. Either way the dialer carries every supplier leg, and the
 * native plane renders prompts (TTS, MP3) and downloads `play` URLs.
 */
export function createVoicePlane(opts: {
  stack: SipStack;
  log: Logger;
  media: Omit<MediaPlaneOptions, 'log'>;
  dialer?: Omit<SipDialerOptions, 'log' | 'onLegEnded' | 'loopMarker'>;
  /** The trunk B2BUA's loop marker (the calls module's), put on every INVITE the dialer sends. */
  loopMarker: LoopMarker;
  onLegEnded(outcome: LegOutcome): void;
  /** `[media] engine = "asterisk"`: the farm's settings (a farm of its own, closed with the plane)… */
  asterisk?: AsteriskSettings;
  /** …or the daemon's shared farm, which the plane does not close. */
  farm?: AsteriskFarm;
}): VoicePlane {
  const plane: MediaPlane = createMediaPlane({ ...opts.media, log: opts.log });
  const dialer = createSipDialer(opts.stack, {
    ...opts.dialer,
    log: opts.log.child({ plane: 'sip-dialer' }),
    loopMarker: opts.loopMarker,
    onLegEnded: opts.onLegEnded,
  });
  const own: AsteriskFarm | null = opts.asterisk ? createAsteriskFarm(opts.asterisk, opts.log) : null;
  const farm = own ?? opts.farm ?? null;
  const engine = farm ? farm.createEngine(dialer, plane.renderer, plane.pool) : plane.createEngine(dialer);
  return {
    engine,
    dialer,
    download: (url) => plane.downloader.download(url),
    async close() {
      // A shared farm outlives the plane: only this plane's engine (its calls) ends here.
      if (own) await own.close();
      else if (farm) await engine.close();
      await plane.close();
    },
  };
}
