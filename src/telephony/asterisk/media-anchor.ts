import { randomBytes } from 'node:crypto';
import type { AriEvent } from 'ari-client';
import type { Logger } from 'pino';
import type { CallMediaRelay } from '../media/call-relay.js';
import type { RelaySideName } from '../media/rtp-protocol.js';
import { relayedStream, rewriteForRelay, type MediaTarget } from '../media/sdp-relay.js';
import { answerToOffer } from './anchor-sdp.js';
import type { AriHost } from './ari-host.js';
import type { ChannelBook, ChannelOwner } from './channels.js';
import type { AsteriskLeg, LegListener } from './leg-listener.js';

/**
 * The media of a trunk call on a route in proxy media mode, anchored in Asterisk: the same
 * `CallMediaRelay` the trunk B2BUA uses with the native RTP relay, so routing, failover, limits,
 * holds and CDRs stay in the B2BUA's one code path whichever engine carries the audio.
 *
 * Opening places two channels on a healthy host, both to the exchange's leg listener (as the
 * engine's API-call legs are placed): one faces the caller, one the supplier. Their INVITEs are
 * held unanswered; their SDP offers say where Asterisk takes each side's audio. The caller's offer
 * goes to the supplier pointed at the supplier-facing channel, the supplier's answer goes to the
 * caller pointed at the caller-facing channel. When the supplier answers, the exchange answers both
 * channels with the supplier's codec and each far end's address, and once both are in Stasis puts
 * them in one ARI bridge: audio flows caller ⇄ Asterisk ⇄ supplier.
 *
 * Asterisk ending a channel after answer (its `rtp_timeout`: no audio), or its host being lost,
 * reports a media timeout: the B2BUA ends the call and bills it to that moment.
 */

export interface MediaAnchorOptions {
  book: ChannelBook;
  legs: Promise<LegListener>;
  pjsipEndpoint: string;
  /** Asterisk must bring both channels to the listener (and, answered, into Stasis) within this. */
  legTimeoutMs: number;
  log: Logger;
}

/** How long Asterisk lets an anchoring channel wait for its answer; the B2BUA gives up sooner. */
const ORIGINATE_TIMEOUT_S = 300;

const SIDES: readonly RelaySideName[] = ['caller', 'callee'];
const other = (s: RelaySideName): RelaySideName => (s === 'caller' ? 'callee' : 'caller');

const newToken = (): string => `svcx${randomBytes(12).toString('hex')}`;

/** Opens an anchor on the first healthy host that brings both channels to the listener in time. */
export async function openMediaAnchor(opts: MediaAnchorOptions): Promise<CallMediaRelay> {
  const legs = await opts.legs;
  const { book } = opts;
  if (!book.hosts.some((h) => h.eligible)) await book.waitForHost(opts.legTimeoutMs);
  for (const host of book.candidates()) {
    try {
      return await anchorOn(host, legs, opts);
    } catch (err) {
      opts.log.warn({ err, host: host.name }, 'Asterisk could not anchor the media; next host');
    }
  }
  throw new Error('no Asterisk host could anchor the media');
}

async function anchorOn(host: AriHost, legs: LegListener, opts: MediaAnchorOptions): Promise<CallMediaRelay> {
  const { book } = opts;
  const base = newToken();
  const tokens: Record<RelaySideName, string> = { caller: newToken(), callee: newToken() };
  const ids: Record<RelaySideName, string> = {
    caller: `${host.app}-${tokens.caller}`,
    callee: `${host.app}-${tokens.callee}`,
  };
  const bridgeId = `${host.app}-${base}`;
  const log = opts.log.child({ asteriskHost: host.name, anchor: bridgeId });
  const placed: Partial<Record<RelaySideName, AsteriskLeg>> = {};
  const inStasis = new Set<string>();
  const timeoutListeners: Array<() => void> = [];
  // The latest SDP each side sent, and the one before it (for an offer the other side refused).
  const latest: Record<RelaySideName, string | null> = { caller: null, callee: null };
  const previous: Record<RelaySideName, string | null> = { caller: null, callee: null };
  let answered = false;
  let bridged = false;
  let broken = false;
  let closed = false;
  let timedOut = false;
  let stasisTimer: NodeJS.Timeout | undefined;

  const timeout = (why: string): void => {
    if (timedOut || closed) return;
    timedOut = true;
    log.info({ why }, 'anchored media ended');
    for (const l of timeoutListeners.splice(0)) l();
  };
  /** A channel is gone: after answer the call has no audio path left; before, it cannot get one. */
  const lost = (why: string): void => {
    if (!broken) log.debug({ why }, 'an anchoring channel was lost');
    broken = true;
    if (answered) timeout(why);
  };

  const owner: ChannelOwner = {
    host,
    channelIds: () => SIDES.map((s) => ids[s]),
    onEvent(event: AriEvent) {
      const id = event.channel?.id;
      if (!id) return;
      if (event.type === 'StasisStart') {
        inStasis.add(id);
        void bridge();
      } else if (event.type === 'ChannelDestroyed') {
        lost(`Asterisk ended a channel (${event.cause_txt ?? 'destroyed'})`);
      }
    },
    abandon: (_cause, reason) => lost(reason),
    resync(id, state) {
      if (state === null) lost('a channel was gone after the ARI connection came back');
      else if (state === 'Up') {
        inStasis.add(id);
        void bridge();
      }
    },
  };

  async function bridge(): Promise<void> {
    if (bridged || closed || !answered || !SIDES.every((s) => inStasis.has(ids[s]))) return;
    bridged = true;
    clearTimeout(stasisTimer);
    book.ownBridge(bridgeId);
    try {
      await host.request('bridge', (c) => c.bridges.create({ type: 'mixing', bridgeId }));
      await host.request('bridge', (c) => c.bridges.addChannel({ bridgeId, channel: `${ids.caller},${ids.callee}` }));
      log.debug('anchored media bridged');
    } catch (err) {
      log.error({ err }, 'Asterisk could not bridge the anchored legs');
      timeout('the two legs could not be bridged');
    }
  }

  function hangUp(side: RelaySideName): void {
    const leg = placed[side];
    host
      .request('hangup', (c) => c.channels.hangup({ channelId: ids[side] }))
      .catch(() => {
        // ARI unreachable: end Asterisk's leg over SIP instead.
        leg?.bye();
        leg?.refuse(487, 'Request Terminated');
      });
  }

  async function close(): Promise<void> {
    if (closed) return;
    closed = true;
    clearTimeout(stasisTimer);
    book.release(owner);
    book.count(host, -1);
    for (const side of SIDES) hangUp(side);
    if (!bridged) return;
    await host.request('bridge', (c) => c.bridges.destroy({ bridgeId })).catch(() => undefined);
    book.disownBridge(bridgeId);
  }

  // Both channels are placed at once; the call waits for both offers.
  for (const side of SIDES) book.own(ids[side], owner);
  book.count(host, 1);
  const forget: Array<() => void> = [];
  let timer: NodeJS.Timeout | undefined;
  try {
    const arrivals = SIDES.map(
      (side) =>
        new Promise<void>((resolve) =>
          forget.push(
            legs.expect(tokens[side], (leg) => {
              placed[side] = leg;
              leg.onEnd(() => lost('Asterisk hung up an anchoring leg'));
              resolve();
            }),
          ),
        ),
    );
    await Promise.all(
      SIDES.map(async (side) => {
        await host.request('originate', (c) =>
          c.channels.originate({
            endpoint: `PJSIP/${opts.pjsipEndpoint}/${legs.uri(tokens[side])}`,
            app: host.app,
            appArgs: 'anchor',
            channelId: ids[side],
            timeout: ORIGINATE_TIMEOUT_S,
          }),
        );
        book.placed(ids[side]);
      }),
    );
    const arrived = await Promise.race([
      Promise.all(arrivals).then(() => true),
      new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), opts.legTimeoutMs))),
    ]);
    if (!arrived) throw new Error('Asterisk did not bring the anchoring legs to the exchange in time');
  } catch (err) {
    await close();
    throw err;
  } finally {
    clearTimeout(timer);
    for (const f of forget) f();
  }

  const anchors = {} as Record<RelaySideName, MediaTarget>;
  for (const side of SIDES) {
    const stream = relayedStream(placed[side]!.offerSdp);
    if (!stream) {
      await close();
      throw new Error('Asterisk offered no audio stream');
    }
    anchors[side] = stream;
  }
  log.debug('media anchor ready');

  return {
    pass(from, body) {
      previous[from] = null;
      if (body.length === 0) return body;
      const text = body.toString('utf8');
      // The other side sends its audio to the channel facing it.
      const rewritten = rewriteForRelay(text, anchors[other(from)]);
      if (rewritten === null) return body;
      previous[from] = latest[from];
      latest[from] = text;
      return Buffer.from(rewritten, 'utf8');
    },
    refused(from) {
      if (previous[from] !== null) latest[from] = previous[from];
      previous[from] = null;
    },
    answered() {
      if (answered || closed) return;
      answered = true;
      if (broken) {
        queueMicrotask(() => timeout('an anchoring channel was gone before answer'));
        return;
      }
      // Asterisk's own offers are answered now: the supplier's codec, each far end's address.
      const supplier = latest.callee ?? '';
      for (const side of SIDES) {
        const far = latest[side];
        const target = far ? relayedStream(far) : null;
        const sdp = answerToOffer(placed[side]!.offerSdp, supplier, target);
        if (sdp) placed[side]!.answer(sdp);
      }
      stasisTimer = setTimeout(() => timeout('Asterisk did not bring the anchoring legs up'), opts.legTimeoutMs);
      stasisTimer.unref();
    },
    onTimeout(listener) {
      if (timedOut) queueMicrotask(listener);
      else timeoutListeners.push(listener);
    },
    close,
  };
}
