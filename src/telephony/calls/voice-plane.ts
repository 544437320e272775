import type { Logger } from 'pino';
import type { CallEngine } from '../engine.js';
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

/** The native media plane with the SIP dialer over `stack` behind its engine. */
export function createVoicePlane(opts: {
  stack: SipStack;
  log: Logger;
  media: Omit<MediaPlaneOptions, 'log'>;
  dialer?: Omit<SipDialerOptions, 'log' | 'onLegEnded' | 'loopMarker'>;
  /** The trunk B2BUA's loop marker (the calls module's), put on every INVITE the dialer sends. */
  loopMarker: LoopMarker;
  onLegEnded(outcome: LegOutcome): void;
}): VoicePlane {
  const plane: MediaPlane = createMediaPlane({ ...opts.media, log: opts.log });
  const dialer = createSipDialer(opts.stack, {
    ...opts.dialer,
    log: opts.log.child({ plane: 'sip-dialer' }),
    loopMarker: opts.loopMarker,
    onLegEnded: opts.onLegEnded,
  });
  const engine = plane.createEngine(dialer);
  return {
    engine,
    dialer,
    download: (url) => plane.downloader.download(url),
    close: () => plane.close(),
  };
}
