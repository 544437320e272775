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
  /** The offer `from` sent last was refused (a 4xx–6xx to its re-INVITE or UPDATE): its media stays as before. */
  refused(from: RelaySideName): void;
  /** The call was answered: from now on, silence both ways ends it (except while on hold). */
  answered(): void;
  onTimeout(listener: () => void): void;
  close(): Promise<void>;
}

export function createCallMediaRelay(relay: RtpRelay): CallMediaRelay {
  // Whether each side's latest SDP asks for audio both ways; on hold or one-way, silence is normal.
  const twoWay: Record<RelaySideName, boolean> = { caller: true, callee: true };
  // Where each side's latest SDP sends its audio, and what its latest SDP changed, for undoing a refused offer.
  const target: Record<RelaySideName, string | null> = { caller: null, callee: null };
  const undo: Record<RelaySideName, { twoWay: boolean; target: string | null; retarget: boolean } | null> = {
    caller: null,
    callee: null,
  };
  let answered = false;
  const rearm = () => {
    if (answered) relay.arm(twoWay.caller && twoWay.callee);
  };
  return {
    pass(from, body) {
      undo[from] = null;
      if (body.length === 0) return body;
      const text = body.toString('utf8');
      // The other side sends its audio to the port facing it.
      const via = { address: relay.address, port: from === 'caller' ? relay.calleePort : relay.callerPort };
      const rewritten = rewriteForRelay(text, via);
      if (rewritten === null) return body;
      const stream = relayedStream(text);
      const next = stream ? `${stream.address} ${stream.port}` : target[from];
      undo[from] = { twoWay: twoWay[from], target: target[from], retarget: next !== target[from] };
      if (stream) relay.setRemote(from, stream.address, stream.port);
      target[from] = next;
      twoWay[from] = stream?.twoWay ?? false;
      rearm();
      return Buffer.from(rewritten, 'utf8');
    },
    refused(from) {
      const u = undo[from];
      undo[from] = null;
      if (!u) return;
      if (u.retarget && u.target !== null) relay.revertRemote(from);
      target[from] = u.target;
      twoWay[from] = u.twoWay;
      rearm();
    },
    answered() {
      answered = true;
      rearm();
    },
    onTimeout: (listener) => relay.onTimeout(listener),
    close: () => relay.close(),
  };
}
