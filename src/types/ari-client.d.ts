/** The part of npm `ari-client` (untyped, resources generated from Asterisk's Swagger) the ARI engine uses. */
declare module 'ari-client' {
  import type { EventEmitter } from 'node:events';

  export interface AriEvent {
    type: string;
    application?: string;
    timestamp?: string;
    channel?: { id: string; name?: string; state?: string };
    playback?: { id: string; state?: string; target_uri?: string };
    digit?: string;
    cause?: number;
    cause_txt?: string;
    args?: string[];
  }

  export interface AriChannelJson {
    id: string;
    name: string;
    state: string;
    /** externalMedia answers UNICASTRTP_LOCAL_ADDRESS and UNICASTRTP_LOCAL_PORT here. */
    channelvars?: Record<string, string>;
  }

  export interface AriClient extends EventEmitter {
    start(apps: string | string[], subscribeAll?: boolean): Promise<void>;
    stop(): void;
    asterisk: { getInfo(params?: Record<string, unknown>): Promise<{ system?: { version?: string } }> };
    channels: {
      originate(params: {
        endpoint: string;
        app: string;
        appArgs?: string;
        channelId?: string;
        callerId?: string;
        timeout?: number;
        variables?: Record<string, string>;
      }): Promise<AriChannelJson>;
      hangup(params: { channelId: string; reason?: string }): Promise<void>;
      get(params: { channelId: string }): Promise<AriChannelJson>;
      list(): Promise<AriChannelJson[]>;
      play(params: { channelId: string; media: string; playbackId?: string }): Promise<unknown>;
      externalMedia(params: {
        app: string;
        channelId?: string;
        external_host: string;
        format: string;
        encapsulation?: string;
        transport?: string;
        direction?: string;
      }): Promise<AriChannelJson>;
      getChannelVar(params: { channelId: string; variable: string }): Promise<{ value: string }>;
    };
    playbacks: {
      stop(params: { playbackId: string }): Promise<void>;
      get(params: { playbackId: string }): Promise<{ id: string; state?: string }>;
    };
    bridges: {
      create(params: { type?: string; bridgeId?: string; name?: string }): Promise<{ id: string }>;
      addChannel(params: { bridgeId: string; channel: string }): Promise<void>;
      destroy(params: { bridgeId: string }): Promise<void>;
      list(): Promise<{ id: string; channels: string[] }[]>;
    };
  }

  export function connect(url: string, username: string, password: string): Promise<AriClient>;
  const ari: { connect: typeof connect };
  export default ari;
}
