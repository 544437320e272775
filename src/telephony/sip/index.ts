/** Public surface of the SIP stack and trunk B2BUA (ARCHITECTURE "Why our own SIP stack"). */
export {
  createSipTransport,
  type SipTransport,
  type SipTransportOptions,
  type SipPeer,
  type SipTransportName,
} from './transport.js';
export { createSipStack, type SipStack, type SipStackOptions, type SipRequestHandler } from './stack.js';
export {
  realTimers,
  DEFAULT_TIMERS,
  type SipTimers,
  type TimerValues,
  type ClientTransaction,
  type ServerTransaction,
} from './transaction.js';
export {
  createTrunkB2bua,
  orderEndpoints,
  type TrunkB2bua,
  type TrunkB2buaOptions,
  type TrunkPolicy,
  type TrunkCandidate,
  type TrunkEndpoint,
  type CallPlan,
  type PlanCallInput,
  type CallAttribution,
  type AttemptRecord,
  type CallEndedEvent,
  type HangupCause,
} from './b2bua/index.js';
export { createOverloadGuard, type OverloadGuard, type OverloadMetrics, type OverloadSettings } from './overload.js';
export { createLoopMarker, LOOP_HEADER, type LoopMarker } from './loop-marker.js';
export { probeEndpoint, type ProbeResult } from './probe.js';
export { computeHa1, createDigestServer, answerChallenge, type DigestServer } from './digest.js';
export { parseMessage, SipParseError, SipMessageError } from './parser.js';
export { serialize, type SipMessage, type SipRequest, type SipResponse, type HeaderField } from './message.js';
