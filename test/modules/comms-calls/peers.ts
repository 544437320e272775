import { Decimal } from 'decimal.js';
import { existsSync } from 'node:fs';
import type { Test } from 'tap';
import { fill, fixture, freePort, sipp, type SippRun } from '../../telephony/sip/sipp.js';

/** sipp callees for the call tests: answering (optionally playing RFC 2833 digits) or refusing. */
export const PCAPS = '/usr/share/sip-tester';
export const available = existsSync('/usr/bin/sipp') && existsSync(`${PCAPS}/dtmf_2833_pound.pcap`) && existsSync('/usr/bin/espeak-ng');

/** Callee: rings, answers with PCMU and telephone-event, runs `during` after the ACK, then takes our BYE. */
export const callee = (expectUser: string, during = ''): string => `<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="api call callee">
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
</scenario>
`;

export const digits = (keys: string[]): string =>
  ['  <pause milliseconds="2000"/>', ...keys.map((k) => `  <nop><action><exec play_pcap_audio="${PCAPS}/dtmf_2833_${k}.pcap"/></action></nop>\n  <pause milliseconds="350"/>`)].join('\n');

export const answering = async (tt: Test, user: string, during = ''): Promise<SippRun> =>
  sipp(tt, callee(user, during), ['-mp', String(await freePort())], { timeout: '20s' });
export const refusing = (tt: Test, code: number, text: string, ring = false): Promise<SippRun> =>
  sipp(tt, fill(fixture('uas-final.xml'), { CODE: String(code), TEXT: text, PROVISIONAL_BLOCK: ring ? fixture('uas-180.block') : '' }), []);

export async function exitOk(tt: Test, run: SippRun, what: string): Promise<void> {
  const code = await run.exited;
  tt.equal(code, 0, what, code === 0 ? {} : { diagnostic: true, output: run.output().slice(-2500) });
}

/** The price a connected leg must cost: billable seconds at rate plus the 0.002/min platform fee. */
export const expectedCost = (billable: number, rate: string): string => new Decimal(rate).plus('0.002').times(billable).div(60).toDecimalPlaces(6).toFixed(6);

