import type { AriEvent } from 'ari-client';
import type { Logger } from 'pino';
import type { CallEndCause } from '../engine.js';
import type { AriHost } from './ari-host.js';
import type { AsteriskMetrics } from './metrics.js';

/**
 * The farm's one book of channels: which call (an API call of the engine, or a media-anchored trunk
 * call's bridge) owns each channel of our ARI application on each host, and the host listeners that
 * route events to the owner, end an owner's calls when its host is lost, and hang up channels nobody
 * here owns (left by a process that died). Engines and bridges share it, so neither mistakes the
 * other's channels for strays.
 */
export interface ChannelOwner {
  /** The host carrying the owner's channels; null before one was chosen. */
  readonly host: AriHost | null;
  /** The owner's channels on `host` (none before they were placed). */
  channelIds(): readonly string[];
  onEvent(event: AriEvent): void;
  /** The host is gone: end the call from our side. */
  abandon(cause: CallEndCause, reason: string): void;
  /** After a websocket gap: the channel's state as Asterisk reports it now (null: no such channel). */
  resync(channelId: string, state: string | null): void;
}

export interface ChannelBook {
  readonly hosts: readonly AriHost[];
  /** Starts routing a channel's events to `owner` (and keeps `owner` for resyncs and host loss). */
  own(channelId: string, owner: ChannelOwner): void;
  disown(channelId: string): void;
  /**
   * Asterisk has answered the originate of this owned channel: from now a channel listing that
   * leaves it out means it is gone. Before, a listing may simply predate it.
   */
  placed(channelId: string): void;
  /** Bridges of ours (ids `<app>-…`) in use; any other of our application's bridges is a stray. */
  ownBridge(bridgeId: string): void;
  disownBridge(bridgeId: string): void;
  /** Forgets an owner whose call is over. */
  release(owner: ChannelOwner): void;
  /** One more (or one fewer) live call on `host`, for the spread and the metric. */
  count(host: AriHost, delta: number): void;
  /** Healthy hosts, fewest live calls first; ties taken in turn so a quiet farm still spreads. */
  candidates(): AriHost[];
  /** Resolves once some host is healthy, or after `ms`. */
  waitForHost(ms: number): Promise<void>;
  close(): void;
}

const channelOf = (e: AriEvent): string | undefined =>
  e.channel?.id ?? (e.playback?.target_uri?.startsWith('channel:') ? e.playback.target_uri.slice(8) : undefined);

export function createChannelBook(hosts: readonly AriHost[], log: Logger, metrics: AsteriskMetrics): ChannelBook {
  const byChannel = new Map<string, ChannelOwner>();
  const owners = new Set<ChannelOwner>();
  const perHost = new Map<AriHost, number>();
  const bridges = new Set<string>();
  const confirmed = new Set<string>();
  let turn = 0;
  let closed = false;

  const hangUp = (host: AriHost, channelId: string): void =>
    void host.request('hangup', (c) => c.channels.hangup({ channelId })).catch(() => undefined);

  /** Channels in our application that nothing of this process owns (a previous process's) are hung up. */
  async function reconcile(host: AriHost): Promise<void> {
    // Only channels known to exist before the listing was asked for can be judged by it: one whose
    // originate is still in flight may be created after Asterisk answers the listing.
    const judged = new Map<string, ChannelOwner>();
    for (const id of confirmed) {
      const owner = byChannel.get(id);
      if (owner?.host === host) judged.set(id, owner);
    }
    let channels: { id: string; state: string }[];
    try {
      channels = await host.request('list', (c) => c.channels.list());
    } catch (err) {
      log.warn({ err, host: host.name }, 'channel reconcile failed');
      return;
    }
    const present = new Map(channels.map((c) => [c.id, c.state]));
    for (const [id, owner] of judged) {
      if (byChannel.get(id) === owner && owners.has(owner)) owner.resync(id, present.get(id) ?? null);
    }
    for (const ch of channels) {
      if (!ch.id.startsWith(`${host.app}-`) || byChannel.has(ch.id)) continue;
      log.warn({ host: host.name, channelId: ch.id }, 'unknown channel of our application hung up');
      hangUp(host, ch.id);
    }
    // An anchored call's bridge outlives a process that died mid-call: destroy what nobody uses.
    let listed: { id: string }[] = [];
    try {
      listed = await host.request('list', (c) => c.bridges.list());
    } catch (err) {
      log.warn({ err, host: host.name }, 'bridge reconcile failed');
    }
    for (const b of listed) {
      if (!b.id.startsWith(`${host.app}-`) || bridges.has(b.id)) continue;
      log.warn({ host: host.name, bridgeId: b.id }, 'unknown bridge of our application destroyed');
      void host.request('bridge', (c) => c.bridges.destroy({ bridgeId: b.id })).catch(() => undefined);
    }
  }

  for (const host of hosts) {
    host.onEvent((event) => {
      const id = channelOf(event);
      if (!id) return;
      const owner = byChannel.get(id);
      if (owner) {
        owner.onEvent(event);
        return;
      }
      if (event.type === 'StasisStart') {
        // Nobody here drives it (left by a previous process, or sent in by hand): end it, as the
        // native plane ends calls a dead process left behind.
        log.warn({ host: host.name, channelId: id }, 'unknown channel entered Stasis; hung up');
        hangUp(host, id);
      }
    });
    host.onConnected(() => void reconcile(host));
    host.onLost(() => {
      for (const owner of [...owners]) {
        if (owner.host === host) owner.abandon('media_host_lost', `the media host ${host.name} stopped answering`);
      }
    });
  }

  return {
    hosts,
    own(channelId, owner) {
      byChannel.set(channelId, owner);
      owners.add(owner);
    },
    disown(channelId) {
      byChannel.delete(channelId);
      confirmed.delete(channelId);
    },
    placed(channelId) {
      if (byChannel.has(channelId)) confirmed.add(channelId);
    },
    ownBridge: (id) => void bridges.add(id),
    disownBridge: (id) => void bridges.delete(id),
    release(owner) {
      owners.delete(owner);
      for (const id of owner.channelIds()) {
        if (byChannel.get(id) !== owner) continue;
        byChannel.delete(id);
        confirmed.delete(id);
      }
    },
    count(host, delta) {
      const n = (perHost.get(host) ?? 0) + delta;
      perHost.set(host, n);
      metrics.liveCalls.set({ host: host.name }, n);
    },
    candidates() {
      const start = turn++ % Math.max(1, hosts.length);
      const order = hosts.map((_, i) => hosts[(start + i) % hosts.length]!);
      return order.filter((h) => h.eligible).sort((a, b) => (perHost.get(a) ?? 0) - (perHost.get(b) ?? 0));
    },
    async waitForHost(ms) {
      const deadline = Date.now() + ms;
      while (!closed && !hosts.some((h) => h.eligible) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    close() {
      closed = true;
    },
  };
}
