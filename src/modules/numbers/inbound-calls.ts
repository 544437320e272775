import { Decimal } from 'decimal.js';
import type { Sql } from '../../db/connection.js';
import type { NumberCalls, NumberCallTarget } from '../sip-trunks/number-calls.js';
import { parseSipTarget, type SipTarget } from './manage.js';

interface TargetRow {
  id: string;
  accountId: string;
  sellerId: string | null;
  status: 'active' | 'suspended';
  pointMode: 'unrouted' | 'sip' | 'forward';
  pointsTo: string | null;
  pointsToBackup: string | null;
  inboundRate: string | null;
  voicemailMode: 'off' | 'always' | 'fallback';
  ringTimeoutSeconds: number;
  /** The attached agent when it exists on the renter's account and is enabled. */
  agentId: string | null;
}

/**
 * Where a call for a rented (or ported) number goes, asked by the SIP plane for every trunk INVITE: only the
 * number's seller brings calls in for it (from its trunk, attributed as any trunk call), so a call
 * from anyone else to the same digits is an ordinary outbound call. Inbound minutes cost the
 * group's `inbound_rate`; the seller earns it less `platform_fee_percent`, as on rent. An enabled
 * AI voice agent attached to the number answers every call (when agents have their providers),
 * voicemail answers as the number's setting says.
 */
export function createNumberCalls(deps: {
  sql: Sql;
  platformFeePercent: string;
  /** `[ai] agent_fee_per_minute`. */
  agentFeePerMinute: string;
  /** Chat and speech-to-text providers are configured: agents can hold calls. */
  agentsAvailable: boolean;
  /** `[numbers] ported_inbound_trunk`: the carrier account bringing ported numbers' calls in (empty: none). */
  portedInboundTrunk?: string;
}): NumberCalls {
  const portedCarrier = deps.portedInboundTrunk ? deps.portedInboundTrunk : null;
  const { sql } = deps;
  const sellerShare = new Decimal(100).minus(deps.platformFeePercent).div(100);
  const agentFee = new Decimal(deps.agentFeePerMinute);
  return async (callerId: string, to: string): Promise<NumberCallTarget | null> => {
    const [row] = await sql<TargetRow[]>`
      select d.id, d.account_id, d.seller_id, d.status, d.point_mode, d.points_to, d.points_to_backup,
             g.inbound_rate::text as inbound_rate, d.voicemail_mode,
             d.ring_timeout_seconds, a.id as agent_id
      from dids d left join did_groups g on g.id = d.group_id
      left join ai_agents a on a.id = d.ai_agent_id and a.account_id = d.account_id and a.enabled
      where d.number = ${to} and d.status in ('active', 'suspended')
        and (d.seller_id = ${callerId}
             or (d.origin = 'ported' and coalesce(d.inbound_carrier_id, ${portedCarrier}::uuid) = ${callerId}))
      limit 1`;
    if (!row) return null;
    // A ported number has no seller and no inbound rate (free minutes): the carrier that brought the
    // call in stands as the leg's seller on the CDR, and no money moves to it.
    const price = new Decimal(row.inboundRate ?? 0);
    const targets = [row.pointsTo, row.pointsToBackup].filter((t): t is string => t !== null);
    const answer =
      row.agentId && deps.agentsAvailable
        ? { kind: 'ai_agent' as const, when: 'always' as const, feePerMinute: agentFee }
        : row.voicemailMode !== 'off'
          ? { kind: 'voicemail' as const, when: row.voicemailMode, feePerMinute: new Decimal(0) }
          : null;
    return {
      didId: row.id,
      ownerId: row.accountId,
      sellerId: row.sellerId ?? callerId,
      status: row.status,
      pointMode: row.pointMode,
      sipTargets: row.pointMode === 'sip' ? targets.map(parseSipTarget).filter((t): t is SipTarget => t !== null) : [],
      forwardTo: row.pointMode === 'forward' ? row.pointsTo : null,
      forwardBackup: row.pointMode === 'forward' ? row.pointsToBackup : null,
      ringTimeoutSeconds: row.ringTimeoutSeconds,
      price,
      sellerRate: price.times(sellerShare).toDecimalPlaces(6, Decimal.ROUND_DOWN),
      answer,
    };
  };
}
