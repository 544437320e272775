import { Decimal } from 'decimal.js';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import { fixture, sippMediaPort, sipp, type SippRun } from '../../telephony/sip/sipp.js';
import { afterCall, MANY, OPTIONS_FIRST } from '../../helpers/sipp-peers.js';

/** sipp callees for the call tests: answering (optionally playing RFC 2833 digits) or refusing. */
export const PCAPS = '/usr/share/sip-tester';
export const available =
  existsSync('/usr/bin/sipp') && existsSync(`${PCAPS}/dtmf_2833_pound.pcap`) && existsSync('/usr/bin/espeak-ng');

export { MANY };

/**
 * Callee: rings, answers with PCMU and telephone-event, runs `during` after the ACK, then takes our
 * BYE; `stop`: sipp exits after this call (a one-call peer, judged by its exit code).
 */
export const callee = (
  expectUser: string,
  during = '',
  stop = true,
): string => `<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="api call callee">
${OPTIONS_FIRST}
  <recv request="INVITE">
    <action>
      <ereg regexp="^INVITE sip:${expectUser}@" search_in="msg" check_it="true" assign_to="ruri"/>
      <ereg regexp="m=audio" search_in="body" check_it="true" assign_to="sdp"/>
    </action>
  </recv>
  <send>
    <![CDATA[
      SIP/2.0 180 Ringing
      [last_Via:]
      [last_From:]
      [last_To:];tag=[pid]SIPpTag01[call_number]
      [last_Call-ID:]
      [last_CSeq:]
      Contact: <sip:[local_ip]:[local_port];transport=[transport]>
      Content-Length: 0

    ]]>
  </send>
  <send retrans="500">
    <![CDATA[
      SIP/2.0 200 OK
      [last_Via:]
      [last_From:]
      [last_To:];tag=[pid]SIPpTag01[call_number]
      [last_Call-ID:]
      [last_CSeq:]
      Contact: <sip:[local_ip]:[local_port];transport=[transport]>
      Content-Type: application/sdp
      Content-Length: [len]

      v=0
      o=user1 53655765 2353687637 IN IP[local_ip_type] [local_ip]
      s=-
      c=IN IP[media_ip_type] [media_ip]
      t=0 0
      m=audio [media_port] RTP/AVP 0 101
      a=rtpmap:0 PCMU/8000
      a=rtpmap:101 telephone-event/8000
      a=fmtp:101 0-15
    ]]>
  </send>
  <Reference variables="ruri,sdp"/>
  <recv request="ACK" crlf="true"/>
${during}
  <recv request="BYE"/>
  <send>
    <![CDATA[
      SIP/2.0 200 OK
      [last_Via:]
      [last_From:]
      [last_To:]
      [last_Call-ID:]
      [last_CSeq:]
      Content-Length: 0

    ]]>
  </send>
${afterCall(stop)}
</scenario>
`;

/** Refuses with `code` (after a 180 when `ring`); `stop` as for `callee`. */
export const refuser = (
  code: number,
  text: string,
  ring = false,
  stop = true,
): string => `<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="api call refuser">
${OPTIONS_FIRST}
  <recv request="INVITE"/>
${ring ? fixture('uas-180.block') : ''}
  <send>
    <![CDATA[
      SIP/2.0 ${code} ${text}
      [last_Via:]
      [last_From:]
      [last_To:];tag=[pid]SIPpTag01[call_number]
      [last_Call-ID:]
      [last_CSeq:]
      Content-Length: 0

    ]]>
  </send>
  <recv request="ACK"/>
${afterCall(stop)}
</scenario>
`;

/** RFC 2833 keys from the pcaps sip-tester ships, `afterMs` after the ACK, 350 ms apart. */
export const keysAfter = (afterMs: number, keys: string[]): string =>
  [
    `  <pause milliseconds="${afterMs}"/>`,
    ...keys.map(
      (k, i) =>
        `  <nop><action><exec play_pcap_audio="${keyPcap(k, i)}"/></action></nop>\n  <pause milliseconds="350"/>`,
    ),
  ].join('\n');

/**
 * The Debian pcaps are cut from one recording: one SSRC, sequence numbers and timestamps in the
 * order 0–9, *, #. Replayed in another order, a key's event would be older than the one before it,
 * which an RTP stack that drops stale telephone-events (Asterisk's does, by timestamp) ignores, as
 * it should. So the key played `position`-th gets a copy whose sequence numbers and timestamp
 * follow the keys played before it, as a phone's would.
 */
const keyDir = join(tmpdir(), `svc-dtmf-${process.pid}`);
function keyPcap(key: string, position: number): string {
  const path = join(keyDir, `${position}_${key}.pcap`);
  if (existsSync(path)) return path;
  const pcap = Buffer.from(readFileSync(`${PCAPS}/dtmf_2833_${key}.pcap`));
  // pcap header 24 bytes; each record: 16-byte header, Ethernet 14 + IPv4 20 + UDP 8, then RTP.
  let first: number | null = null;
  for (let off = 24; off + 16 <= pcap.length;) {
    const incl = pcap.readUInt32LE(off + 8);
    const rtp = off + 16 + 42;
    if (incl >= 42 + 12) {
      const seq = pcap.readUInt16BE(rtp + 2);
      first ??= seq;
      pcap.writeUInt16BE((1000 + position * 100 + ((seq - first) & 0xffff)) & 0xffff, rtp + 2);
      pcap.writeUInt32BE(100_000 + position * 16_000, rtp + 4);
    }
    off += 16 + incl;
  }
  if (!existsSync(keyDir)) {
    mkdirSync(keyDir, { recursive: true });
    process.once('exit', () => rmSync(keyDir, { recursive: true, force: true }));
  }
  writeFileSync(path, pcap);
  return path;
}

export const digits = (keys: string[]): string => keysAfter(2000, keys);

/** `timeout`: how long sipp lives; longer where a daemon is started (or restarted) before the call reaches it. */
export const answering = async (tt: Test, user: string, during = '', timeout = '20s'): Promise<SippRun> =>
  sipp(tt, callee(user, during), ['-mp', String(await sippMediaPort())], { timeout, calls: MANY });

/** A callee for several calls, left running until the teardown: judge it by our call records. */
export const answeringMany = async (tt: Test, user: string): Promise<SippRun> =>
  sipp(tt, callee(user, '', false), ['-mp', String(await sippMediaPort())], { timeout: '30s', calls: MANY });

/** `timeout`: how long sipp lives; longer where the test does much work before the call reaches it. */
export const refusing = (tt: Test, code: number, text: string, ring = false, timeout = '15s'): Promise<SippRun> =>
  sipp(tt, refuser(code, text, ring), [], { calls: MANY, timeout });

/** A refuser for several calls, left running until the teardown. */
export const refusingMany = (tt: Test, code: number, text: string): Promise<SippRun> =>
  sipp(tt, refuser(code, text, false, false), [], { timeout: '30s', calls: MANY });

export async function exitOk(tt: Test, run: SippRun, what: string): Promise<void> {
  const code = await run.exited;
  tt.equal(code, 0, what, code === 0 ? {} : { diagnostic: true, output: run.output().slice(-2500) });
}

/** The price a connected leg must cost: billable seconds at rate plus the 0.002/min platform fee. */
export const expectedCost = (billable: number, rate: string): string =>
  new Decimal(rate).plus('0.002').times(billable).div(60).toDecimalPlaces(6).toFixed(6);
