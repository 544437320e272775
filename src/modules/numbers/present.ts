import { money6 } from '../../ledger/money.js';
import type { DidRow } from './did-repo.js';

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

/** A DID as the API shows it (spec "Phone number (DID)"); `number` stays null until it is active. */
export function presentDid(d: DidRow) {
  return {
    id: d.id,
    number: d.status === 'pending' || d.status === 'failed' ? null : d.number,
    country: d.country,
    city: d.city,
    areaPrefix: d.areaPrefix,
    didType: d.didType,
    countryCode: d.countryCode,
    channelsIncluded: d.channels,
    status: d.status,
    pointMode: d.pointMode,
    pointsTo: d.pointsTo,
    pointsToBackup: d.pointsToBackup,
    ringTimeoutSeconds: d.ringTimeoutSeconds,
    autoRenew: d.autoRenew,
    setupPrice: money6(d.setupPrice),
    monthlyPrice: money6(d.monthlyPrice),
    orderedAt: d.orderedAt.toISOString(),
    activatedAt: iso(d.activatedAt),
    nextRenewalAt: iso(d.nextRenewalAt),
    suspendedAt: iso(d.suspendedAt),
    releasedAt: iso(d.releasedAt),
    endpointReachable: d.endpointReachable,
    endpointCause: d.endpointCause,
    endpointCheckedAt: iso(d.endpointCheckedAt),
    aiAgentId: d.aiAgentId,
    graceDays: d.graceDays,
    label: d.label,
    tags: d.tags,
    callerName: d.callerName,
    emergencyAddress: d.emergencyAddress,
    releaseAt: iso(d.releaseAt),
    accountId: d.accountId,
    origin: d.origin,
    portInId: d.portInId,
  };
}

export type DidView = ReturnType<typeof presentDid>;

/** The same day of a later month in UTC, clamped to the month's last day (31 Jan + 1 month = 28/29 Feb). */
export function addMonths(d: Date, n: number): Date {
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth() + n;
  const last = new Date(Date.UTC(y, m + 1, 0)).getUTCDate();
  return new Date(
    Date.UTC(
      y,
      m,
      Math.min(d.getUTCDate(), last),
      d.getUTCHours(),
      d.getUTCMinutes(),
      d.getUTCSeconds(),
      d.getUTCMilliseconds(),
    ),
  );
}
