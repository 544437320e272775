import type { Sql } from '../../db/connection.js';
import type { ActionItem } from '../api-calls/actions.js';
import type { CampaignInput, CampaignsService, CliStrategy } from './campaigns.js';
import type { CampaignRow } from './repo.js';

/** Which numbers a clone takes from its source. */
export type CloneNumbers = 'none' | 'all' | 'not_answered';

/**
 * A new draft with the source's settings (route, pacing, window, attempts, budget, caller IDs,
 * actions or agent), in the source's environment, and optionally its numbers: every number, or
 * those not answered (failed, pending or being dialled, never the do-not-call blocked ones), each
 * fresh with no attempt. The create rules apply again (the route must still be usable).
 */
export function createCampaignCloner(deps: { sql: Sql; campaigns: CampaignsService }) {
  const { sql, campaigns } = deps;
  return async function clone(source: CampaignRow, input: { name?: string | undefined; numbers?: CloneNumbers }) {
    const settings: CampaignInput & { name: string; routeId: string } = {
      name: input.name ?? `${source.name} (copy)`.slice(0, 255),
      routeId: source.routeId,
      kind: source.kind,
      messageBody: source.messageBody,
      senderId: source.senderId,
      targetAcd: source.targetAcd,
      targetAsr: source.targetAsr,
      concurrency: source.concurrency,
      maxCallDuration: source.maxCallDuration,
      callInterval: source.callInterval,
      notes: source.notes,
      windowStartHour: source.windowStartHour,
      windowEndHour: source.windowEndHour,
      windowTz: source.windowTz,
      maxAttempts: source.maxAttempts,
      retryDelayMinutes: source.retryDelayMinutes,
      maxSpend: source.maxSpend,
      aiAgentId: source.aiAgentId,
      cliSetId: source.cliSetId,
      cliStrategy: source.cliStrategy as CliStrategy | null,
      language: source.language,
      ...(source.actions.length ? { actions: source.actions as ActionItem[] } : {}),
    };
    const created = await campaigns.create(source.accountId, source.parentId, source.environment, settings);
    const which = input.numbers ?? 'none';
    if (which !== 'none') {
      await sql.begin(async (tx) => {
        const r = await tx`
          insert into dialer_numbers (campaign_id, number, name, fields)
          select ${created.id}::uuid, number, name, fields from dialer_numbers
          where campaign_id = ${source.id}
            ${which === 'not_answered' ? tx`and state in ('pending', 'dialing', 'failed')` : tx``}
          order by id`;
        await tx`update dialer_campaigns set total_numbers = ${r.count} where id = ${created.id}`;
      });
    }
    return campaigns.get(source.accountId, created.id);
  };
}
