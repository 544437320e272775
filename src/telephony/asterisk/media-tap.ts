import type { AriEvent } from 'ari-client';
import type { Logger } from 'pino';
import type { ActionMedia } from '../media/actions.js';
import { MediaError } from '../media/errors.js';
import type { MediaPool, MediaSession } from '../media/pool.js';
import type { AriHost } from './ari-host.js';
import type { ChannelBook, ChannelOwner } from './channels.js';

/**
 * The call's audio both ways on an Asterisk call, for an AI voice agent (and the transfer that may
 * follow it): an ARI externalMedia channel (chan_rtp, `UnicastRTP/…`) sending and taking G.711
 * µ-law RTP at one of our RTP worker's sessions, put in one mixing bridge with the caller's channel.
 * The caller's voice reaches the worker as it would on the native engine (`onAudio`), and the
 * agent's speech goes out of the same session, queued back to back and cut short by `stop`: one
 * continuous stream, not an ARI playback per prompt. Keys still come from the caller's channel
 * events (`ChannelDtmfReceived`).
 */

export interface MediaTapOptions {
  host: AriHost;
  book: ChannelBook;
  pool: MediaPool;
  /** The caller's channel (answered, in Stasis). */
  channelId: string;
  /** The call, which owns the tap's channel too (its events, host loss, resyncs). */
  owner: ChannelOwner;
  /** The tap's channel must enter Stasis within this. */
  stasisTimeoutMs: number;
  log: Logger;
}

export interface MediaTap {
  readonly channelId: string;
  readonly bridgeId: string;
  /** Resolves with the worker session once Asterisk is bridged to it; rejects when it cannot be. */
  readonly ready: Promise<MediaSession>;
  /** The tap as the call's media; `onDtmf` is the caller channel's. */
  media(onDtmf: ActionMedia['onDtmf']): ActionMedia;
  /** An event of the tap's own channel (the call's owner routes them here). */
  onEvent(event: AriEvent): void;
  close(): Promise<void>;
}

/** The address our session's SDP offer gives (where the worker takes RTP: `[rtp] advertise_address`). */
function offeredAddress(sdp: string): string {
  const m = /^c=IN IP4 (\S+)/m.exec(sdp);
  if (!m?.[1]) throw new MediaError('MEDIA_BAD_SDP', 'our own offer has no connection address');
  return m[1];
}

/** The SDP answer our session needs to send to Asterisk's UnicastRTP address (it speaks µ-law, PT 0). */
function unicastAnswer(address: string, port: number): string {
  return [
    'v=0',
    `o=- 0 0 IN IP4 ${address}`,
    's=-',
    `c=IN IP4 ${address}`,
    't=0 0',
    `m=audio ${port} RTP/AVP 0`,
    'a=rtpmap:0 PCMU/8000',
    'a=ptime:20',
    'a=sendrecv',
    '',
  ].join('\r\n');
}

export function openMediaTap(o: MediaTapOptions): MediaTap {
  const { host, book, log } = o;
  const channelId = `${o.channelId}-tap`;
  const bridgeId = `${o.channelId}-br`;
  let session: MediaSession | null = null;
  let closed = false;
  let channelPlaced = false;
  let bridgeMade = false;
  // `stop` before the session is up cuts the plays already waiting for it.
  let generation = 0;
  // Asterisk answers externalMedia before the channel is in Stasis (a thread of its own dials it and
  // then starts the application), and a bridge refuses a channel not yet there: the StasisStart
  // event, which may come before the answer does, is what says it can be bridged.
  let enteredStasis: () => void = () => undefined;
  let notInStasis: (err: Error) => void = () => undefined;
  const inStasis = new Promise<void>((resolve, reject) => {
    enteredStasis = resolve;
    notInStasis = reject;
  });
  inStasis.catch(() => undefined); // awaited by the set-up

  // Owned before it exists, so its StasisStart is never taken for a stray's.
  book.own(channelId, o.owner);

  /** Takes down whatever of the tap exists; run by close, and by the set-up when close came first. */
  async function cleanup(): Promise<void> {
    const s = session;
    session = null;
    const placed = channelPlaced;
    const made = bridgeMade;
    channelPlaced = bridgeMade = false;
    await Promise.all([
      s?.close(),
      placed ? host.request('hangup', (c) => c.channels.hangup({ channelId })).catch(() => undefined) : undefined,
      made ? host.request('bridge', (c) => c.bridges.destroy({ bridgeId })).catch(() => undefined) : undefined,
    ]);
  }
  /** Resolves once the tap's channel is in Stasis; rejects if it ends or does not get there in time. */
  async function stasisReached(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(
        () => reject(new MediaError('MEDIA_TAP_TIMEOUT', 'the channel carrying the call audio did not enter Stasis')),
        o.stasisTimeoutMs,
      );
    });
    try {
      await Promise.race([inStasis, late]);
    } finally {
      clearTimeout(timer);
    }
  }
  const ifClosed = async (): Promise<void> => {
    if (!closed) return;
    await cleanup();
    throw new MediaError('MEDIA_SESSION_CLOSED', 'the call ended');
  };

  const ready = (async (): Promise<MediaSession> => {
    const s = await o.pool.openSession({ codec: 'PCMU' });
    session = s;
    await ifClosed();
    const external = `${offeredAddress(s.offerSdp())}:${s.localPort}`;
    const ch = await host.request('media', (c) =>
      c.channels.externalMedia({
        app: host.app,
        channelId,
        external_host: external,
        format: 'ulaw',
        encapsulation: 'rtp',
        transport: 'udp',
        direction: 'both',
      }),
    );
    channelPlaced = true;
    book.placed(channelId);
    await ifClosed();
    const vars = ch.channelvars ?? {};
    let address = vars['UNICASTRTP_LOCAL_ADDRESS'];
    let port = vars['UNICASTRTP_LOCAL_PORT'];
    // Older ARI answers leave the variables out of the channel: ask for them.
    if (!address || !port) {
      const get = (variable: string) =>
        host.request('media', (c) => c.channels.getChannelVar({ channelId, variable })).then((r) => r.value);
      [address, port] = await Promise.all([get('UNICASTRTP_LOCAL_ADDRESS'), get('UNICASTRTP_LOCAL_PORT')]);
    }
    if (!address || !port || !Number(port)) throw new MediaError('MEDIA_BAD_SDP', 'Asterisk gave no RTP address');
    s.acceptAnswer(unicastAnswer(address, Number(port)));
    book.ownBridge(bridgeId);
    await host.request('bridge', (c) => c.bridges.create({ type: 'mixing', bridgeId }));
    bridgeMade = true;
    await ifClosed();
    await stasisReached();
    await ifClosed();
    await host.request('bridge', (c) => c.bridges.addChannel({ bridgeId, channel: `${o.channelId},${channelId}` }));
    await ifClosed();
    log.debug({ external, asterisk: `${address}:${port}` }, 'call audio tapped');
    return s;
  })();
  ready.catch(() => undefined); // every user awaits it

  return {
    channelId,
    bridgeId,
    ready,
    media(onDtmf) {
      return {
        codec: 'PCMU',
        gapless: true,
        async play(audio) {
          const mine = generation;
          const s = await ready;
          if (mine !== generation) return { interrupted: true };
          return s.play(audio);
        },
        stop() {
          generation++;
          session?.stop();
        },
        onDtmf,
        onAudio(listener) {
          let off: (() => void) | null = null;
          let gone = false;
          ready.then(
            (s) => {
              if (!gone) off = s.onAudio(listener);
            },
            () => undefined,
          );
          return () => {
            gone = true;
            off?.();
          };
        },
      };
    },
    onEvent(event) {
      if (event.type === 'StasisStart') enteredStasis();
      else if (event.type === 'ChannelDestroyed')
        notInStasis(new MediaError('MEDIA_SESSION_CLOSED', 'the channel carrying the call audio ended'));
    },
    async close() {
      if (closed) return;
      closed = true;
      notInStasis(new MediaError('MEDIA_SESSION_CLOSED', 'the call ended'));
      await cleanup();
      book.disownBridge(bridgeId);
      book.disown(channelId);
    },
  };
}
