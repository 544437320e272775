import type { Test } from 'tap';
import { sippMediaPort, sipp, type SippRun } from '../../telephony/sip/sipp.js';
import { withOptions } from '../../helpers/sipp-peers.js';
import { callee, MANY } from '../api-calls/peers.js';

/** sipp peers for route checks: a self-answering test line, a false answerer, a route that rings until cancelled. */

/** The test line: rings, answers `answerAfterMs` later (a real line takes over 1.5 s), takes our BYE. */
export const testLine = async (t: Test, user: string, answerAfterMs = 1800): Promise<SippRun> =>
  sipp(
    t,
    callee(user, '', false).replace(
      '  <send retrans="500">',
      `  <pause milliseconds="${answerAfterMs}"/>\n  <send retrans="500">`,
    ),
    ['-mp', String(await sippMediaPort())],
    { timeout: '60s', calls: MANY },
  );

/** A route that answers at once without ringing: what a false-answer supplier does. */
export const falseAnswerer = async (t: Test, user: string): Promise<SippRun> => {
  const scenario = callee(user, '', false).replace(
    / {2}<send>\s*<!\[CDATA\[\s*SIP\/2\.0 180 Ringing[\s\S]*?<\/send>\n/,
    '',
  );
  if (scenario.includes('180 Ringing')) throw new Error('the 180 was not removed');
  return sipp(t, scenario, ['-mp', String(await sippMediaPort())], { timeout: '60s', calls: MANY });
};

/** Rings and waits for our CANCEL (200 to it, 487 to the INVITE): a light check or an unanswered ring-me. */
export const ringing = (t: Test, expectUser: string): Promise<SippRun> =>
  sipp(
    t,
    withOptions('uas-ring-cancel.xml', false, (s) =>
      s.replace(
        '<recv request="INVITE"/>',
        `<recv request="INVITE">
    <action>
      <ereg regexp="^INVITE sip:${expectUser}@" search_in="msg" check_it="true" assign_to="ruri"/>
    </action>
  </recv>
  <Reference variables="ruri"/>`,
      ),
    ),
    [],
    { timeout: '60s', calls: MANY },
  );
