import { randomBytes, randomUUID } from 'node:crypto';
import type { AriEvent } from 'ari-client';
import type { Logger } from 'pino';
import type {
  ActionsOutcome,
  CallAction,
  CallEnd,
  CallEndCause,
  CallEngine,
  CallState,
  EngineCall,
  EngineCallEvents,
  GatherResult,
  OriginateRequest,
} from '../engine.js';
import { realClock, runActions, type ActionClock, type ActionMedia, type PromptRenderer } from '../media/actions.js';
import { isDtmfKey, type DtmfKey } from '../media/dtmf.js';
import { MediaError } from '../media/errors.js';
import { causeForStatus, type SignallingDialer, type SignallingLeg } from '../media/native-engine.js';
import type { AriHost } from './ari-host.js';
import type { AsteriskLeg, LegListener } from './leg-listener.js';
import type { AsteriskMetrics } from './metrics.js';
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
 * ChannelDtmfReceived.
 */

export interface AsteriskEngineOptions {
  hosts: readonly AriHost[];
  legs: Promise<LegListener>;
  dialer: SignallingDialer;
  renderer: PromptRenderer;
  prompts: PromptStore;
  /** The PJSIP endpoint in Asterisk facing the exchange. */
  pjsipEndpoint: string;
  /** Asterisk must bring a leg to the listener (and an answered leg into Stasis) within this. */
  legTimeoutMs: number;
  log: Logger;
  metrics: AsteriskMetrics;
  clock?: ActionClock;
  now?: () => Date;
}

/** How long Asterisk lets an originated channel ring; the exchange's dialer ends no-answer legs first. */
const ORIGINATE_TIMEOUT_S = 300;

type Listeners = { [E in keyof EngineCallEvents]: EngineCallEvents[E][] };

/** What the engine keeps per call to route ARI events and end it from outside. */
interface LiveCall {
  call: EngineCall;
  host: AriHost | null;
  channelId: string | null;
  /** The channel reached Stasis (answered and driveable). */
  onEvent(event: AriEvent): void;
  /** The host is gone or the channel vanished: end the call from our side. */
  abandon(cause: CallEndCause, reason: string): void;
  /** After a websocket gap: the channel's state as Asterisk reports it now (null: no such channel). */
  resync(state: string | null): void;
}

const channelOf = (e: AriEvent): string | undefined =>
  e.channel?.id ?? (e.playback?.target_uri?.startsWith('channel:') ? e.playback.target_uri.slice(8) : undefined);

export function createAsteriskEngine(options: AsteriskEngineOptions): CallEngine {
  const { hosts, dialer, renderer, prompts, metrics } = options;
  const clock = options.clock ?? realClock;
  const now = options.now ?? (() => new Date());
  const byChannel = new Map<string, LiveCall>();
  const live = new Set<LiveCall>();
  const perHost = new Map<AriHost, number>();
  let turn = 0;
  let closed = false;

  const count = (host: AriHost, delta: number): void => {
    const n = (perHost.get(host) ?? 0) + delta;
    perHost.set(host, n);
    metrics.liveCalls.set({ host: host.name }, n);
  };

  /** Healthy hosts, fewest live calls first; ties taken in turn so a quiet farm still spreads. */
  function candidates(): AriHost[] {
    const start = turn++ % Math.max(1, hosts.length);
    const order = hosts.map((_, i) => hosts[(start + i) % hosts.length]!);
    return order.filter((h) => h.eligible).sort((a, b) => (perHost.get(a) ?? 0) - (perHost.get(b) ?? 0));
  }

  async function waitForHost(ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    while (!closed && !hosts.some((h) => h.eligible) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Channels in our application that no call of this process owns (a previous process's) are hung up. */
  async function reconcile(host: AriHost): Promise<void> {
    const prefix = `${host.app}-`;
    let channels: { id: string; state: string }[];
    try {
      channels = await host.request('list', (c) => c.channels.list());
    } catch (err) {
      options.log.warn({ err, host: host.name }, 'channel reconcile failed');
      return;
    }
    const present = new Map(channels.map((c) => [c.id, c.state]));
    for (const lc of [...live]) {
      if (lc.host !== host || lc.channelId === null) continue;
      lc.resync(present.get(lc.channelId) ?? null);
    }
    for (const ch of channels) {
      if (!ch.id.startsWith(prefix) || byChannel.has(ch.id)) continue;
      options.log.warn({ host: host.name, channelId: ch.id }, 'unknown channel of our application hung up');
      void host.request('hangup', (c) => c.channels.hangup({ channelId: ch.id })).catch(() => undefined);
    }
  }

  for (const host of hosts) {
    host.onEvent((event) => {
      const id = channelOf(event);
      if (!id) return;
      const lc = byChannel.get(id);
      if (lc) {
        lc.onEvent(event);
        return;
      }
      if (event.type === 'StasisStart') {
        // Nobody here drives it (left by a previous process, or sent in by hand): end it, as the
        // native plane ends calls a dead process left behind.
        options.log.warn({ host: host.name, channelId: id }, 'unknown channel entered Stasis; hung up');
        void host.request('hangup', (c) => c.channels.hangup({ channelId: id })).catch(() => undefined);
      }
    });
    host.onConnected(() => void reconcile(host));
    host.onLost(() => {
      for (const lc of [...live]) {
        if (lc.host === host) lc.abandon('media_host_lost', `the media host ${host.name} stopped answering`);
      }
    });
  }

  function originate(req: OriginateRequest): EngineCall {
    const log = options.log.child({ callId: req.callId });
    const listeners: Listeners = { ringing: [], answered: [], ended: [] };
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

    function emit<E extends keyof EngineCallEvents>(event: E, ...args: Parameters<EngineCallEvents[E]>): void {
      for (const l of listeners[event]) {
        try {
          (l as (...a: Parameters<EngineCallEvents[E]>) => void)(...args);
        } catch (err) {
          log.error({ err, event }, 'call event listener failed');
        }
      }
    }

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
      live.delete(entry);
      if (channelId) byChannel.delete(channelId);
      if (host) count(host, -1);
      hangupChannel();
      log.info({ cause, by, sipStatus, host: host?.name }, 'call ended');
      emit('ended', endResult);
      resolveEnded(endResult);
      return endResult;
    }

    async function endLocally(cause: CallEndCause, reason: string): Promise<CallEnd> {
      if (endResult) return endResult;
      const l = leg;
      const result = finish(cause, 'local', null, reason);
      try {
        await l?.hangup();
      } catch (err) {
        log.warn({ err }, 'signalling hangup failed');
      }
      return result;
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
        if (state !== 'answered' || !h || !id) throw new MediaError('MEDIA_SESSION_CLOSED', 'call is not answered');
        const uri = await prompts.publish(audio);
        if (endResult) return { interrupted: true };
        const playbackId = randomUUID();
        const done = new Promise<{ interrupted: boolean }>((resolve) => playbacks.set(playbackId, resolve));
        current = playbackId;
        try {
          await h.request('play', (c) => c.channels.play({ channelId: id, media: uri, playbackId }));
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
    };

    const entry: LiveCall = {
      call: undefined as unknown as EngineCall,
      get host() {
        return host;
      },
      get channelId() {
        return channelId;
      },
      onEvent(event) {
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
      resync(channelState) {
        // A channel still being originated may not be listed yet: only placed legs are judged.
        if (!uas) return;
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
      if (!hosts.some((h) => h.eligible)) await waitForHost(options.legTimeoutMs);
      for (const h of candidates()) {
        if (endResult) return;
        const token = `svcx${randomBytes(12).toString('hex')}`;
        const id = `${h.app}-${token}`;
        let arrived: (l: AsteriskLeg) => void = () => undefined;
        const legArrives = new Promise<AsteriskLeg>((resolve) => (arrived = resolve));
        const forget = legs.expect(token, (l) => arrived(l));
        host = h;
        channelId = id;
        channelGone = false;
        byChannel.set(id, entry);
        count(h, 1);
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
        byChannel.delete(id);
        count(h, -1);
        host = null;
        channelId = null;
      }
      if (!endResult) finish('failed', 'local', null, 'no Asterisk host could take the call');
    }

    async function run(
      actions: readonly CallAction[],
      onGathered?: (r: GatherResult) => void,
    ): Promise<ActionsOutcome> {
      if (state !== 'answered') throw new MediaError('MEDIA_SESSION_CLOSED', 'call is not answered');
      return runActions({
        media,
        actions,
        language: req.language ?? 'en',
        renderer,
        clock,
        signal: abort.signal,
        onGathered,
      });
    }

    const call: EngineCall = {
      callId: req.callId,
      get state() {
        return state;
      },
      ended,
      on(event, listener) {
        listeners[event].push(listener);
      },
      async speak(text, opts) {
        if (state !== 'answered') throw new MediaError('MEDIA_SESSION_CLOSED', 'call is not answered');
        return media.play(await renderer.say(text, opts?.language ?? req.language ?? 'en', media.codec));
      },
      async play(mp3) {
        if (state !== 'answered') throw new MediaError('MEDIA_SESSION_CLOSED', 'call is not answered');
        return media.play(await renderer.play(mp3, media.codec));
      },
      async gather(spec) {
        const outcome = await run([{ gather: spec }]);
        return outcome.gathered[0] ?? { index: 0, digits: null, status: 'no_input' };
      },
      async pause(seconds) {
        await run([{ pause: seconds }]);
      },
      runActions: (actions, opts) => run(actions, opts?.onGathered),
      hangup: () =>
        endLocally(
          state === 'answered' ? 'completed' : 'cancelled',
          state === 'answered' ? 'hung up by the platform' : 'cancelled before answer',
        ),
    };
    entry.call = call;
    live.add(entry);
    start().catch((err: unknown) => {
      log.error({ err }, 'call could not start');
      finish('failed', 'local', null, 'call could not start');
    });
    return call;
  }

  return {
    originate,
    async close() {
      closed = true;
      await Promise.all([...live].map((lc) => lc.call.hangup()));
    },
  };
}
