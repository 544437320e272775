import { Decimal } from 'decimal.js';
import type { Sql } from '../../db/connection.js';
import type { NumberCalls, NumberCallTarget } from '../sip-trunks/number-calls.js';
import { parseSipTarget } from './manage.js';

interface TargetRow {
  id: string;
  accountId: string;
  sellerId: string;
  status: 'active' | 'suspended';
  pointMode: 'unrouted' | 'sip' | 'forward';
  pointsTo: string | null;
  pointsToBackup: string | null;
  inboundRate: string | null;
}

/**
 * Where a call for a rented number goes, asked by the SIP plane for every trunk INVITE: only the
 * number's seller brings calls in for it (from its trunk, attributed as any trunk call), so a call
 * from anyone else to the same digits is an ordinary outbound call. Inbound minutes cost the
 * group's `inbound_rate`; the seller earns it less `platform_fee_percent`, as on rent.
 */
export function createNumberCalls(deps: { sql: Sql; platformFeePercent: string }): NumberCalls {
  const { sql } = deps;
  const sellerShare = new Decimal(100).minus(deps.platformFeePercent).div(100);
  return async (callerId: string, to: string): Promise<NumberCallTarget | null> => {
    const [row] = await sql<TargetRow[]>`
      select d.id, d.account_id, d.seller_id, d.status, d.point_mode, d.points_to, d.points_to_backup,
             g.inbound_rate::text as inbound_rate
      from dids d join did_groups g on g.id = d.group_id
      where d.number = ${to} and d.status in ('active', 'suspended') and d.seller_id = ${callerId}`;
    if (!row) return null;
    const price = new Decimal(row.inboundRate ?? 0);
    const targets = [row.pointsTo, row.pointsToBackup].filter((t): t is string => t !== null);
    return {
      didId: row.id,
      ownerId: row.accountId,
      sellerId: row.sellerId,
      status: row.status,
      pointMode: row.pointMode,
      sipTargets:
        row.pointMode === 'sip'
          ? targets.map(parseSipTarget).filter((t): t is { host: string; port: number } => t !== null)
          : [],
      forwardTo: row.pointMode === 'forward' ? row.pointsTo : null,
      price,
      sellerRate: price.times(sellerShare).toDecimalPlaces(6, Decimal.ROUND_DOWN),
    };
  };
}
