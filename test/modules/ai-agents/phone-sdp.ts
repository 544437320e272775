import type { RtpPeer } from '../../telephony/media/helpers/rtp-peer.js';

/**
 * A sipp scenario whose SDP answer points at `peer` instead of sipp's own media port, so the
 * phone's audio is sent and read by the test (sipp keeps the signalling).
 */
export const sdpAt = (scenario: string, peer: RtpPeer): string =>
  scenario.replace(/v=0\n[\s\S]*?(\n\s*\]\]>)/, `${peer.answerSdp().trim().split('\r\n').join('\n      ')}$1`);
