import type { RtpRelay } from './pool.js';
import type { RelaySideName } from './rtp-protocol.js';
import { relayedStream, rewriteForRelay } from './sdp-relay.js';

/**
 * What the trunk B2BUA needs of a media relay: SDP from one side rewritten for the other, and a
 * media timeout once the call is answered. Bodies that are not SDP with audio pass unchanged.
 */
export interface CallMediaRelay {
  /** The SDP `from` sent, as the other side must see it: its audio pointed at the relay. */
  pass(from: RelaySideName, body: Buffer): Buffer;
  /** The call was answered: from now on, silence both ways ends it (except while on hold). */
  answered(): void;
  onTimeout(listener: () => void): void;
  close(): Promise<void>;
}

export function createCallMediaRelay(relay: RtpRelay): CallMediaRelay {
  // Whether each side's latest SDP asks for audio both ways; on hold or one-way, silence is normal.
  const twoWay: Record<RelaySideName, boolean> = { caller: true, callee: true };
  let answered = false;
  const rearm = () => {
    if (answered) relay.arm(twoWay.caller && twoWay.callee);
  };
  return {
    pass(from, body) {
      if (body.length === 0) return body;
      const text = body.toString('utf8');
      // The other side sends its audio to the port facing it.
      const via = { address: relay.address, port: from === 'caller' ? relay.calleePort : relay.callerPort };
      const rewritten = rewriteForRelay(text, via);
      if (rewritten === null) return body;
      const stream = relayedStream(text);
      if (stream) relay.setRemote(from, stream.address, stream.port);
      twoWay[from] = stream?.twoWay ?? false;
      rearm();
      return Buffer.from(rewritten, 'utf8');
    },
    answered() {
      answered = true;
      rearm();
    },
    onTimeout: (listener) => relay.onTimeout(listener),
    close: () => relay.close(),
  };
}
