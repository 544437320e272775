/**
 * Pieces every sipp supplier peer of the call tests shares (API calls, route checks, caller-ID tests).
 *
 * The daemon's endpoint health check probes every supplier endpoint with OPTIONS, the first time
 * within seconds of a route's creation. sipp in server mode starts a "call" for it, which would
 * take one of its `-m` calls (or fail an INVITE-only scenario), so every callee answers an OPTIONS
 * with 200 as a call of its own, and a one-call callee stops itself after its real call
 * (`stop_gracefully`) instead of counting calls.
 */
import { fixture } from '../telephony/sip/sipp.js';

export const OPTIONS_FIRST = '  <recv request="OPTIONS" optional="true" next="options"/>';
const OPTIONS_BRANCH = `  <label id="options"/>
  <send>
    <![CDATA[
      SIP/2.0 200 OK
      [last_Via:]
      [last_From:]
      [last_To:];tag=[pid]opt[call_number]
      [last_Call-ID:]
      [last_CSeq:]
      Content-Length: 0

    ]]>
  </send>
  <label id="done"/>`;

/** What follows a callee's call: stop after it (`stop`), else wait for the next; the OPTIONS answer. */
export const afterCall = (stop: boolean): string =>
  `${stop ? '  <nop><action><exec int_cmd="stop_gracefully"/></action></nop>\n' : ''}  <nop next="done"/>\n${OPTIONS_BRANCH}`;

/** How many calls a callee is started for; OPTIONS never count, the real calls stop it. */
export const MANY = 100;

/** A fixture scenario (test/fixtures/sipp) made to answer OPTIONS probes too, as the peers above. */
export const withOptions = (name: string, stop = false, edit: (s: string) => string = (s) => s): string =>
  edit(fixture(name))
    .replace(/(<scenario[^>]*>\n)/, `$1${OPTIONS_FIRST}\n`)
    .replace('</scenario>', `${afterCall(stop)}\n</scenario>`);
