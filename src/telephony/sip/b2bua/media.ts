/** The call's media relay, for routes in proxy media mode. */
import type { Call, Leg } from './types.js';

export function closeRelay(call: Call): void {
  const relay = call.relay;
  call.relay = undefined;
  relay?.close().catch((err: unknown) => call.log.warn({ err }, 'media relay close failed'));
}

/** SDP from one side as the other side gets it: through the relay when the leg's media is proxied. */
export function sdpVia(call: Call, leg: Leg | undefined, from: 'caller' | 'callee', body: Buffer): Buffer {
  return leg?.proxied && call.relay ? call.relay.pass(from, body) : body;
}
