import { randomBytes, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { CallEnd, CallEndCause, CallEngine, CallState, EngineCall, OriginateRequest } from '../engine.js';
import { realClock, type ActionClock, type ActionMedia, type PromptRenderer } from '../media/actions.js';
import { createCallEvents, endThenHangUp, engineCall, notAnswered } from '../media/engine-call.js';
import { isDtmfKey, type DtmfKey } from '../media/dtmf.js';
import { MediaError } from '../media/errors.js';
import type { MediaPool } from '../media/pool.js';
import { causeForStatus, type SignallingDialer, type SignallingLeg } from '../media/native-engine.js';
import { AriRequestError, type AriHost } from './ari-host.js';
import type { ChannelBook, ChannelOwner } from './channels.js';
import type { AsteriskLeg, LegListener } from './leg-listener.js';
import { openMediaTap, type MediaTap } from './media-tap.js';
import type { PromptStore } from './prompts.js';

/**
 * The ARI engine: the media of a call runs on an Asterisk host, its signalling towards the supplier
 * stays on the exchange's SIP plane.
 *
 * `originate` asks a healthy host to place a channel to `PJSIP/<endpoint>/sip:<token>@<our listener>`
 * in our Stasis application. Asterisk's INVITE reaches the leg listener, and the engine dials the
 * route with the exchange's dialer (the one the native engine uses), Asterisk's SDP as the offer:
 * RTP flows between Asterisk and the supplier, while ringing, answer, refusals, failover, limits and
 * billing are decided where they are for the native engine. The supplier's answer goes back to
 * Asterisk as the 200; once the channel is up in Stasis the call counts as answered and its actions
 * run over ARI: prompts (rendered by the exchange to G.711) played with `sound:`, keys read from
 * ChannelDtmfReceived. A call whose audio is asked for (`listen`: an AI voice agent) is tapped
 * through an externalMedia channel to one of our RTP sessions (`media-tap.ts`); from then on its
 * speech goes out of that session too.
 */

export interface AsteriskEngineOptions {
  book: ChannelBook;
  legs: Promise<LegListener>;
  dialer: SignallingDialer;
  renderer: PromptRenderer;
  prompts: PromptStore;
  /** RTP sessions for calls whose audio an AI agent hears and speaks over (absent: `listen` is refused). */
  pool?: MediaPool;
  /** The PJSIP endpoint in Asterisk facing the exchange. */
  pjsipEndpoint: string;
  /** Asterisk must bring a leg to the listener (and an answered leg into Stasis) within this. */
  legTimeoutMs: number;
  log: Logger;
  clock?: ActionClock;
  now?: () => Date;
}

/** How long Asterisk lets an originated channel ring; the exchange's dialer ends no-answer legs first. */
const ORIGINATE_TIMEOUT_S = 300;

export function createAsteriskEngine(options: AsteriskEngineOptions): CallEngine {
  const { book, dialer, renderer, prompts } = options;
  const clock = options.clock ?? realClock;
  const now = options.now ?? (() => new Date());
  const live = new Set<EngineCall>();

  function originate(req: OriginateRequest): EngineCall {
    const log = options.log.child({ callId: req.callId });
    const events = createCallEvents(log);
    const emit = events.emit;
    const abort = new AbortController();
    let state: CallState = 'dialling';
    let host: AriHost | null = null;
    let channelId: string | null = null;
    let channelGone = false;
    let uas: AsteriskLeg | null = null;
    let leg: SignallingLeg | null = null;
    let answeredAt: Date | null = null;
    let maxTimer: unknown = null;
    let stasisTimer: unknown = null;
    let endResult: CallEnd | null = null;
    let resolveEnded: (end: CallEnd) => void = () => undefined;
    const ended = new Promise<CallEnd>((resolve) => {
      resolveEnded = resolve;
    });
    const playbacks = new Map<string, (r: { interrupted: boolean }) => void>();
    const stopped = new Set<string>();
    let current: string | null = null;
    const keyListeners = new Set<(key: DtmfKey) => void>();
    let tap: MediaTap | null = null;
    let tapMedia: ActionMedia | null = null;

    const hangupChannel = (): void => {
      const h = host;
      const id = channelId;
      if (!h || !id || channelGone) return;
      h.request('hangup', (c) => c.channels.hangup({ channelId: id })).catch((err: unknown) => {
        // ARI unreachable: end Asterisk's leg over SIP instead (it still answers SIP if only ARI died).
        log.warn({ err }, 'ARI hangup failed; ending the leg over SIP');
        uas?.bye();
        uas?.refuse(503, 'Service Unavailable');
      });
    };

    /** Ends the call once; later calls return the first result. */
    function finish(cause: CallEndCause, by: 'local' | 'remote', sipStatus: number | null, reason: string): CallEnd {
      if (endResult) return endResult;
      state = 'ended';
      endResult = { cause, by, sipStatus, reason, answeredAt, endedAt: now() };
      if (maxTimer !== null) clock.clearTimeout(maxTimer);
      if (stasisTimer !== null) clock.clearTimeout(stasisTimer);
      abort.abort();
      for (const resolve of playbacks.values()) resolve({ interrupted: true });
      playbacks.clear();
      live.delete(call);
      void tap?.close();
      book.release(entry);
      if (host) book.count(host, -1);
      hangupChannel();
      log.info({ cause, by, sipStatus, host: host?.name }, 'call ended');
      emit('ended', endResult);
      resolveEnded(endResult);
      return endResult;
    }

    async function endLocally(cause: CallEndCause, reason: string): Promise<CallEnd> {
      if (endResult) return endResult;
      return endThenHangUp(() => finish(cause, 'local', null, reason), leg, log);
    }

    function inStasis(): void {
      if (endResult || state === 'answered' || !answeredAt) return;
      if (stasisTimer !== null) clock.clearTimeout(stasisTimer);
      stasisTimer = null;
      state = 'answered';
      maxTimer = clock.setTimeout(
        () => void endLocally('max_duration', 'maximum duration reached'),
        Math.max(0, req.maxDurationSec * 1000 - (now().getTime() - answeredAt.getTime())),
      );
      emit('answered', answeredAt);
    }

    const media: ActionMedia = {
      codec: 'PCMU',
      async play(audio) {
        const h = host;
        const id = channelId;
        if (state !== 'answered' || !h || !id) throw notAnswered();
        const uri = await prompts.publish(audio);
        if (endResult) return { interrupted: true };
        const playbackId = randomUUID();
        const done = new Promise<{ interrupted: boolean }>((resolve) => playbacks.set(playbackId, resolve));
        current = playbackId;
        const send = (): Promise<unknown> =>
          h.request('play', (c) => c.channels.play({ channelId: id, media: uri, playbackId }));
        try {
          try {
            await send();
          } catch (err) {
            // No answer at all (a connection cut with the websocket): the call lives on, so does its script.
            if (endResult || !(err instanceof AriRequestError) || err.status !== null) throw err;
            log.warn({ err }, 'ARI play got no answer; asking again once the host is back');
            await replayAfterGap(h, playbackId, send);
          }
        } catch (err) {
          playbacks.delete(playbackId);
          if (endResult) return { interrupted: true };
          throw err;
        }
        // A key that came while the request was in flight asked to stop a playback not yet known.
        if (stopped.has(playbackId)) media.stop();
        const result = await done;
        if (current === playbackId) current = null;
        stopped.delete(playbackId);
        return result;
      },
      stop() {
        const h = host;
        const id = current;
        if (!h || !id) return;
        stopped.add(id);
        void h.request('stop', (c) => c.playbacks.stop({ playbackId: id })).catch(() => undefined);
      },
      onDtmf(listener) {
        keyListeners.add(listener);
        return () => keyListeners.delete(listener);
      },
      onAudio(listener) {
        return tapped().onAudio!(listener);
      },
    };

    /** The call's media through its tap, opened on first use; the call ends when Asterisk cannot give one. */
    function tapped(): ActionMedia {
      if (tapMedia) return tapMedia;
      const h = host;
      const id = channelId;
      if (!options.pool) throw new MediaError('MEDIA_UNSUPPORTED', 'this Asterisk engine has no RTP pool to tap calls');
      if (state !== 'answered' || !h || !id) throw notAnswered();
      const t = openMediaTap({
        host: h,
        book,
        pool: options.pool,
        channelId: id,
        owner: entry,
        stasisTimeoutMs: options.legTimeoutMs,
        log,
      });
      tap = t;
      tapMedia = t.media(media.onDtmf);
      t.ready.catch((err: unknown) => {
        if (endResult) return;
        log.error({ err }, 'Asterisk could not hand the call audio over; ending the call');
        void endLocally('failed', 'the media server could not carry the call audio');
      });
      return tapMedia;
    }

    /**
     * After a play request got no answer: once the host answers again, a playback Asterisk knows is
     * watched until it ends (its PlaybackFinished may have been lost with the socket); one it does not
     * know is asked for again (a short prompt that already ended is then heard twice, the lesser harm).
     */
    async function replayAfterGap(h: AriHost, playbackId: string, send: () => Promise<unknown>): Promise<void> {
      const deadline = Date.now() + options.legTimeoutMs;
      while (!h.eligible && !endResult && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      if (endResult) return;
      // Any failure means Asterisk cannot show it: ask again (a host still down fails that too).
      const known = await h
        .request('get', (c) => c.playbacks.get({ playbackId }))
        .then(
          () => true,
          () => false,
        );
      if (!known) {
        await send();
        return;
      }
      const watch = async (): Promise<void> => {
        while (!endResult && playbacks.has(playbackId)) {
          await new Promise((r) => setTimeout(r, 250));
          // Gone, or the host unreachable again: either way the script goes on.
          const gone = await h
            .request('get', (c) => c.playbacks.get({ playbackId }))
            .then(
              () => false,
              () => true,
            );
          if (gone) {
            playbacks.get(playbackId)?.({ interrupted: stopped.has(playbackId) });
            playbacks.delete(playbackId);
          }
        }
      };
      void watch();
    }

    const entry: ChannelOwner = {
      get host() {
        return host;
      },
      channelIds: () => (channelId ? (tap ? [channelId, tap.channelId] : [channelId]) : []),
      onEvent(event) {
        if (tap && event.channel?.id === tap.channelId) {
          // The tap's own channel: its entry into Stasis lets it be bridged; its end ends the call
          // (the agent can no longer hear or speak).
          tap.onEvent(event);
          if (event.type === 'ChannelDestroyed') asteriskEnded('the channel carrying the call audio ended');
          return;
        }
        switch (event.type) {
          case 'StasisStart':
            inStasis();
            return;
          case 'ChannelDtmfReceived': {
            const key = event.digit;
            if (state !== 'answered' || !key || !isDtmfKey(key)) return;
            for (const l of [...keyListeners]) l(key);
            return;
          }
          case 'PlaybackFinished': {
            const id = event.playback?.id;
            const resolve = id ? playbacks.get(id) : undefined;
            if (!id || !resolve) return;
            playbacks.delete(id);
            if (event.playback?.state === 'failed') log.warn({ playbackId: id }, 'Asterisk could not play a prompt');
            resolve({ interrupted: stopped.has(id) });
            return;
          }
          case 'ChannelDestroyed':
            channelGone = true;
            asteriskEnded(event.cause_txt ?? 'channel destroyed');
            return;
          default:
            return;
        }
      },
      abandon(cause, reason) {
        channelGone = cause === 'media_host_lost' ? channelGone : true;
        void endLocally(cause, reason);
      },
      resync(id, channelState) {
        // A channel still being originated may not be listed yet: only placed legs are judged.
        if (!uas) return;
        if (tap && id === tap.channelId) {
          if (channelState === null) asteriskEnded('the channel carrying the call audio was gone after the ARI gap');
          return;
        }
        if (channelState === null) {
          channelGone = true;
          asteriskEnded('the channel was gone after the ARI connection came back');
        } else if (channelState === 'Up' && answeredAt) inStasis();
      },
    };

    /** Asterisk ended its side first (RTP timeout, an operator, a failure there). */
    function asteriskEnded(why: string): void {
      if (endResult) return;
      const answered = state === 'answered' || answeredAt !== null;
      void endLocally(
        answered ? 'media_timeout' : 'failed',
        answered ? `Asterisk ended the call (${why})` : `Asterisk could not place the leg (${why})`,
      );
    }

    function onLeg(legOnAsterisk: AsteriskLeg): void {
      if (endResult) {
        legOnAsterisk.refuse(487, 'Request Terminated');
        return;
      }
      uas = legOnAsterisk;
      legOnAsterisk.onEnd(() => {
        channelGone = true;
        asteriskEnded('Asterisk hung up its leg');
      });
      emit('dialling', now());
      leg = dialer.dial(
        { callId: req.callId, to: req.to, from: req.from, endpoint: req.endpoint, offerSdp: legOnAsterisk.offerSdp },
        {
          ringing() {
            if (state !== 'dialling') return;
            state = 'ringing';
            legOnAsterisk.ringing();
            emit('ringing');
          },
          answered(answerSdp) {
            if (endResult || answeredAt) return;
            answeredAt = now();
            legOnAsterisk.answer(answerSdp);
            stasisTimer = clock.setTimeout(
              () => void endLocally('failed', 'Asterisk did not bring the answered call up'),
              options.legTimeoutMs,
            );
          },
          ended(info) {
            if (answeredAt) {
              finish('completed', 'remote', null, info.reason);
              return;
            }
            const status = info.sipStatus !== null && info.sipStatus >= 300 ? info.sipStatus : 480;
            legOnAsterisk.refuse(status, info.reason.slice(0, 100) || 'Unavailable');
            finish(causeForStatus(info.sipStatus), 'remote', info.sipStatus, info.reason);
          },
        },
      );
    }

    /** Places the channel on the first host that brings its leg to the listener in time. */
    async function start(): Promise<void> {
      const legs = await options.legs;
      if (!book.hosts.some((h) => h.eligible)) await book.waitForHost(options.legTimeoutMs);
      for (const h of book.candidates()) {
        if (endResult) return;
        const token = `svcx${randomBytes(12).toString('hex')}`;
        const id = `${h.app}-${token}`;
        let arrived: (l: AsteriskLeg) => void = () => undefined;
        const legArrives = new Promise<AsteriskLeg>((resolve) => (arrived = resolve));
        const forget = legs.expect(token, (l) => arrived(l));
        host = h;
        channelId = id;
        channelGone = false;
        book.own(id, entry);
        book.count(h, 1);
        let timer: NodeJS.Timeout | undefined;
        try {
          await h.request('originate', (c) =>
            c.channels.originate({
              endpoint: `PJSIP/${options.pjsipEndpoint}/${legs.uri(token)}`,
              app: h.app,
              channelId: id,
              callerId: req.from,
              timeout: ORIGINATE_TIMEOUT_S,
            }),
          );
          book.placed(id);
          const got = await Promise.race([
            legArrives,
            new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), options.legTimeoutMs))),
          ]);
          if (got) {
            onLeg(got);
            return;
          }
          log.warn({ host: h.name }, 'Asterisk did not bring the leg to the exchange in time; next host');
        } catch (err) {
          log.warn({ err, host: h.name }, 'originate failed; next host');
        } finally {
          clearTimeout(timer);
          forget();
        }
        if (endResult) return;
        // This host failed the call before any supplier was dialled: nothing to undo but its channel.
        hangupChannel();
        book.disown(id);
        book.count(h, -1);
        host = null;
        channelId = null;
      }
      if (!endResult) finish('failed', 'local', null, 'no Asterisk host could take the call');
    }

    const call: EngineCall = engineCall({
      callId: req.callId,
      state: () => state,
      ended,
      events,
      media: () => {
        if (state !== 'answered') throw notAnswered();
        return tapMedia ?? media;
      },
      renderer,
      language: req.language ?? 'en',
      clock,
      signal: abort.signal,
      endLocally,
    });
    live.add(call);
    start().catch((err: unknown) => {
      log.error({ err }, 'call could not start');
      finish('failed', 'local', null, 'call could not start');
    });
    return call;
  }

  return {
    originate,
    async close() {
      await Promise.all([...live].map((c) => c.hangup()));
    },
  };
}
