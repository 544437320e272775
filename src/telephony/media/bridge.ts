import type { EngineCall } from '../engine.js';

/**
 * Connects two answered calls' audio: each side's frames go out on the other as they arrive (an AI
 * agent's transfer joins the caller and the target this way). Both legs' media stay ours, so the
 * RTP timeout still watches each side and either leg can be recorded or cut without renegotiating.
 */

/**
 * Frames of one direction still waiting for their send slot. The two legs' clocks drift and the
 * far end's packets jitter; past this many (100 ms) a frame is dropped rather than letting the
 * delay between the two parties grow for the rest of the call.
 */
const MAX_QUEUED = 5;

export interface CallBridge {
  /** Frames carried each way so far (a -> b, b -> a), and frames dropped to keep the delay bounded. */
  stats(): { aToB: number; bToA: number; dropped: number };
  /** Stops carrying audio; the calls stay up. Idempotent. */
  close(): void;
}

export function bridgeCalls(a: EngineCall, b: EngineCall): CallBridge {
  const counts = { aToB: 0, bToA: 0, dropped: 0 };
  let open = true;
  const direction = (from: EngineCall, to: EngineCall, counted: 'aToB' | 'bToA') => {
    let queued = 0;
    return from.listen((frame, codec) => {
      if (!open) return;
      if (queued >= MAX_QUEUED || to.state !== 'answered') {
        counts.dropped++;
        return;
      }
      queued++;
      counts[counted]++;
      // A leg that ended between the check and the send rejects; its end is handled by whoever ends the bridge.
      to.send(frame, codec).then(
        () => queued--,
        () => queued--,
      );
    });
  };
  const stopAToB = direction(a, b, 'aToB');
  const stopBToA = direction(b, a, 'bToA');
  return {
    stats: () => ({ ...counts }),
    close() {
      if (!open) return;
      open = false;
      stopAToB();
      stopBToA();
    },
  };
}
