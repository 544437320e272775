import { ruleError, validationError } from '../../http/errors.js';
import type { Payer, RunnerDeps } from './runner.js';
import type { CampaignRow, DialerRepo } from './repo.js';
import { digitsOrFail } from './numbers.js';

export interface TestCallDeps {
  repo: DialerRepo;
  isBlocked(accountId: string, e164: string): Promise<boolean>;
  paused(accountId: string): Promise<Set<string>>;
  /** The runner's call placement; a test call needs only the call's id. */
  placeCall(payer: Payer, input: Parameters<RunnerDeps['placeCall']>[1]): Promise<{ callId: string }>;
  sendSms(
    payer: Payer,
    input: { to: string; from: string; message: string; routeId: string },
  ): Promise<{ messageId: string; status: string }>;
}

/**
 * One call (or message) of the campaign to a number the account names, before it starts: the
 * campaign's route, caller ID, actions or agent and `maxCallDuration`, billed as an ordinary API call
 * or message (a test campaign's is simulated). It is no attempt of the campaign: counters, results,
 * spend and the platform fee are untouched. The do-not-call list applies as to every campaign call.
 */
export function createTestCaller(deps: TestCallDeps) {
  return async function testCall(c: CampaignRow, input: { number: string; cli?: string | undefined }) {
    const [to] = digitsOrFail([input.number], 'number');
    if (await deps.isBlocked(c.accountId, to!)) throw ruleError('This number is on the do-not-call list');
    const payer: Payer = { accountId: c.accountId, parentId: c.parentId, mode: c.environment };
    if (c.kind === 'sms') {
      if (!c.messageBody || !c.senderId) throw ruleError('An SMS campaign needs messageBody and senderId to send');
      const m = await deps.sendSms(payer, {
        to: `+${to}`,
        from: c.senderId,
        message: c.messageBody,
        routeId: c.routeId,
      });
      return { kind: c.kind, to: `+${to}`, from: c.senderId, callId: null, messageId: m.messageId, status: m.status };
    }
    if (c.actions.length === 0 && !c.aiAgentId) {
      throw ruleError('A voice campaign needs actions to play, or an aiAgentId, for answered calls');
    }
    const set = c.cliSetId ? await deps.repo.cliSet(c.accountId, c.cliSetId) : null;
    const paused = await deps.paused(c.accountId);
    const clis = (set?.clis ?? []).map((x) => x.replace(/^\+/, '')).filter((x) => !paused.has(x));
    let from = clis[0];
    if (input.cli !== undefined) {
      const [want] = digitsOrFail([input.cli], 'cli');
      if (!clis.includes(want!)) {
        throw validationError([{ path: 'cli', message: "not an active caller ID of the campaign's caller-ID set" }]);
      }
      from = want;
    }
    if (!from) throw ruleError('The campaign has no active caller ID (cliSetId naming a caller-ID set)');
    const placed = await deps.placeCall(payer, {
      to: `+${to}`,
      from: `+${from}`,
      routeId: c.routeId,
      maxDuration: c.maxCallDuration,
      language: c.language,
      actions: c.aiAgentId ? [] : c.actions,
      ...(c.aiAgentId ? { aiAgentId: c.aiAgentId } : {}),
    });
    return { kind: c.kind, to: `+${to}`, from: `+${from}`, callId: placed.callId, messageId: null, status: 'queued' };
  };
}
