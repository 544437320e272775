/**
 * The outbox events that become in-app notifications, with their wording. The list is mirrored by
 * the SQL function `notification_event` (migrations 242, 291, …, 301), which limits the feed's index to these
 * events: a kind added here needs a migration redefining that function.
 */
type Data = Record<string, unknown>;
const s = (v: unknown, dflt = '') => (typeof v === 'string' || typeof v === 'number' ? String(v) : dflt);
const route = (d: Data) => (d['routeName'] ? `the route "${s(d['routeName'])}"` : `route ${s(d['routeId'])}`);
const cap = (t: string) => t.charAt(0).toUpperCase() + t.slice(1);
const role = (v: unknown) => s(v, 'member').replace('_', '-');

/** An interconnection's terms in a sentence: the services and each side's discount. */
const terms = (d: Data) => {
  const services = Array.isArray(d['services']) ? (d['services'] as unknown[]).map((x) => s(x)).join(' and ') : '';
  return `${services}, requester ${s(d['requesterDiscountPct'])}% off, peer ${s(d['peerDiscountPct'])}% off`;
};
const because = (reason: unknown) => (typeof reason === 'string' && reason !== '' ? `: ${reason}` : '.');

export interface KindSpec {
  label: string;
  /** On unless the account turned it off. */
  inAppDefault: boolean;
  render(data: Data): { title: string; body: string };
}

export const NotificationKinds: Record<string, KindSpec> = {
  'balance.low': {
    label: 'Low balance',
    inAppDefault: true,
    render: (d) => ({
      title: 'Low balance',
      body: `Your balance fell to ${s(d['balance'])} USD. Top up to keep traffic flowing.`,
    }),
  },
  'topup.confirmed': {
    label: 'Top-up confirmed',
    inAppDefault: true,
    render: (d) => ({
      title: 'Top-up confirmed',
      body: `${s(d['amount'])} USD was added (${s(d['source'], 'top-up')}); your balance is ${s(d['balance'])} USD.`,
    }),
  },
  'sub_account.balance_low': {
    label: 'Sub-account low balance',
    inAppDefault: true,
    render: (d) => ({
      title: 'Sub-account balance low',
      body: `Sub-account ${s(d['subAccountId'])} is down to ${s(d['balance'])} USD.`,
    }),
  },
  'sub_account.suspended': {
    label: 'Sub-account suspended',
    inAppDefault: true,
    render: (d) => ({
      title: 'Sub-account suspended',
      body: `Sub-account ${s(d['subAccountId'])} was suspended (${s(d['reason'], 'no reason given')}).`,
    }),
  },
  'sub_account.resumed': {
    label: 'Sub-account resumed',
    inAppDefault: true,
    render: (d) => ({
      title: 'Sub-account resumed',
      body: `Sub-account ${s(d['subAccountId'])} is active again (${s(d['reason'], 'resumed')}).`,
    }),
  },
  'sub_account.topup_requested': {
    label: 'Sub-account top-up request',
    inAppDefault: true,
    render: (d) => ({ title: 'Top-up requested', body: `Sub-account ${s(d['subAccountId'])} asked for a top-up.` }),
  },
  'sub_account.margin_below_floor': {
    label: 'Margin below floor',
    inAppDefault: true,
    render: (d) => ({
      title: 'Margin below floor',
      body: `Sub-account ${s(d['subAccountId'])} is selling below your margin floor.`,
    }),
  },
  'offer.received': {
    label: 'Offer received',
    inAppDefault: true,
    render: () => ({ title: 'New offer', body: 'You received an offer on one of your routes.' }),
  },
  'route.purchased': {
    label: 'Route purchased',
    inAppDefault: true,
    render: (d) => ({ title: 'Route purchased', body: `Route ${s(d['routeId'])} was purchased.` }),
  },
  'sell_rate.changed': {
    label: 'Rate changes',
    inAppDefault: true,
    render: (d) => ({
      title: 'Rates changed',
      body: `Rates changed${d['effectiveAt'] ? `, effective ${s(d['effectiveAt'])}` : ''}.`,
    }),
  },
  'cost_rate.scheduled': {
    label: 'Rate increase scheduled',
    inAppDefault: true,
    render: (d) => ({
      title: 'Rate change scheduled',
      body: `A supplier rate change is scheduled${d['effectiveAt'] ? ` for ${s(d['effectiveAt'])}` : ''}.`,
    }),
  },
  'invoice.issued': {
    label: 'Invoice issued',
    inAppDefault: true,
    render: (d) => ({ title: 'Invoice issued', body: `Invoice ${s(d['number'] ?? d['invoiceId'])} was issued.` }),
  },
  'invoice.payment': {
    label: 'Invoice payment',
    inAppDefault: true,
    render: (d) => ({
      title: 'Invoice payment',
      body: `A payment was recorded on invoice ${s(d['number'] ?? d['invoiceId'])}.`,
    }),
  },
  'campaign.completed': {
    label: 'Campaign completed',
    inAppDefault: true,
    render: (d) => ({ title: 'Campaign completed', body: `Campaign ${s(d['name'] ?? d['campaignId'])} finished.` }),
  },
  'payout.requested': {
    label: 'Payout requested',
    inAppDefault: true,
    render: (d) => ({ title: 'Payout requested', body: `A payout of ${s(d['amount'])} USD is waiting for approval.` }),
  },
  'payout.approved': {
    label: 'Payout approved',
    inAppDefault: true,
    render: (d) => ({ title: 'Payout approved', body: `Your payout of ${s(d['amount'])} USD was approved.` }),
  },
  'payout.rejected': {
    label: 'Payout rejected',
    inAppDefault: true,
    render: (d) => ({
      title: 'Payout rejected',
      body: `Your payout of ${s(d['amount'])} USD was rejected${d['reason'] ? `: ${s(d['reason'])}` : '.'}`,
    }),
  },
  'payout.paid': {
    label: 'Payout paid',
    inAppDefault: true,
    render: (d) => ({ title: 'Payout sent', body: `Your payout of ${s(d['amount'])} USD was sent.` }),
  },
  'kyc.verified': {
    label: 'Identity verified',
    inAppDefault: true,
    render: () => ({ title: 'Identity verified', body: 'Your identity verification was approved.' }),
  },
  'kyc.rejected': {
    label: 'Identity verification rejected',
    inAppDefault: true,
    render: (d) => ({
      title: 'Identity verification rejected',
      body: `Your identity verification was rejected: ${s(d['reason'], 'see the details')}. Correct it and submit again.`,
    }),
  },
  'support_ticket.replied': {
    label: 'Support replies',
    inAppDefault: true,
    render: (d) => ({ title: 'Support replied', body: `Support replied to your ticket "${s(d['subject'])}".` }),
  },

  // Newer events (issue 24): marketplace trades, reports and notices, card top-ups, billing alerts
  // and exports, numbers, revenue share, interconnections, the team and the account's own life.
  'offer.accepted': {
    label: 'Offer accepted',
    inAppDefault: true,
    render: (d) => ({
      title: 'Offer accepted',
      body: `Your offer on ${route(d)} was accepted; its rates apply for ${s(d['validDays'], 'the agreed')} days.`,
    }),
  },
  'offer.declined': {
    label: 'Offer declined',
    inAppDefault: true,
    render: (d) => ({
      title: 'Offer declined',
      body: `Your offer on ${route(d)} was declined by the ${s(d['by'], 'other side')}.`,
    }),
  },
  'offer.expired': {
    label: 'Offer expired',
    inAppDefault: true,
    render: (d) => ({ title: 'Offer expired', body: `An offer on ${route(d)} expired without an answer.` }),
  },
  'route.access_requested': {
    label: 'Route access requests',
    inAppDefault: true,
    render: (d) => ({
      title: 'Access requested',
      body: `A buyer asked for access to your private route ${route(d)}${d['note'] ? `: "${s(d['note'])}"` : '.'}`,
    }),
  },
  'route.access_decided': {
    label: 'Route access decisions',
    inAppDefault: true,
    render: (d) => ({
      title: d['status'] === 'approved' ? 'Access granted' : 'Access denied',
      body:
        d['status'] === 'approved'
          ? `You can now buy the private route ${route(d)}.`
          : `Your request for the private route ${route(d)} was denied${d['reason'] ? `: ${s(d['reason'])}` : '.'}`,
    }),
  },
  'route.message_received': {
    label: 'Route messages',
    inAppDefault: true,
    render: (d) => ({
      title: `Message from the ${s(d['from'], 'other side')}`,
      body: `About ${route(d)}: "${s(d['preview'])}"`,
    }),
  },
  'route.report_received': {
    label: 'Route reports received',
    inAppDefault: true,
    render: (d) => ({
      title: 'Route reported',
      body: `A buyer reported a problem (${s(d['category'], 'other')}) on ${route(d)}. Answer it from the report.`,
    }),
  },
  'route.report_answered': {
    label: 'Route report answers',
    inAppDefault: true,
    render: (d) => ({ title: 'Report answered', body: `The seller answered your report on ${route(d)}.` }),
  },
  'route.report_resolved': {
    label: 'Route reports closed',
    inAppDefault: true,
    render: (d) => ({
      title: 'Report closed',
      body: `The report ${s(d['reportId'])} on route ${s(d['routeId'])} was closed: ${s(d['outcome'], 'resolved')}${d['note'] ? ` (${s(d['note'])})` : ''}.`,
    }),
  },
  'route.suspended': {
    label: 'Route suspended or restored',
    inAppDefault: true,
    render: (d) =>
      d['suspended'] === false
        ? { title: 'Route restored', body: `${cap(route(d))} carries traffic again.` }
        : {
            title: 'Route suspended',
            body: `${cap(route(d))} was suspended${d['reason'] ? `: ${s(d['reason'])}` : ''}; it takes no new traffic.`,
          },
  },
  'route.rate_increase_scheduled': {
    label: 'Rate increase notices',
    inAppDefault: true,
    render: (d) => ({
      title: 'Rate increase scheduled',
      body: `${cap(route(d))}: ${s(d['increases'], '0')} rate increase(s) and ${s(d['removals'], '0')} removal(s) take effect from ${s(d['firstEffectiveAt'])}.`,
    }),
  },
  'topup.failed': {
    label: 'Top-up failed',
    inAppDefault: true,
    render: (d) => ({
      title: 'Top-up failed',
      body: `Your ${s(d['method'], 'card')} top-up of ${s(d['amount'])} USD failed${d['reason'] ? `: ${s(d['reason'])}` : '.'}`,
    }),
  },
  'topup.chargeback': {
    label: 'Chargebacks',
    inAppDefault: true,
    render: (d) => ({
      title: 'Chargeback opened',
      body: `The card payment of top-up ${s(d['topupId'])} is disputed (${s(d['reason'], 'no reason given')}); ${s(d['taken'])} USD was taken from your balance.`,
    }),
  },
  'topup.chargeback_reversed': {
    label: 'Chargebacks won',
    inAppDefault: true,
    render: (d) => ({
      title: 'Chargeback won',
      body: `The dispute on top-up ${s(d['topupId'])} was decided for you; ${s(d['returned'])} USD was returned.`,
    }),
  },
  'auto_recharge.failed': {
    label: 'Auto-recharge failed',
    inAppDefault: true,
    render: (d) => ({
      title: 'Auto-recharge failed',
      body: `The automatic top-up of ${s(d['amount'])} USD failed${d['reason'] ? `: ${s(d['reason'])}` : ''}. Check your card.`,
    }),
  },
  'billing.spending_alert': {
    label: 'Spending alerts',
    inAppDefault: true,
    render: (d) => ({
      title: 'Spending alert',
      body: `You spent ${s(d['spend'])} USD this ${s(d['period'], 'period')} (${s(d['periodKey'])}), over your ${s(d['threshold'])} USD alert.`,
    }),
  },
  'billing.export_completed': {
    label: 'Billing exports',
    inAppDefault: true,
    render: (d) => ({
      title: 'Export ready',
      body: `Your ${s(d['kind'], 'billing')} export (${s(d['rowCount'], '0')} rows) is ready to download.`,
    }),
  },
  'number.purchased': {
    label: 'Number ordered',
    inAppDefault: true,
    render: (d) => ({
      title: 'Number ordered',
      body: `A number was ordered for ${s(d['amount'])} USD; it is being set up.`,
    }),
  },
  'number.activated': {
    label: 'Number active',
    inAppDefault: true,
    render: (d) => ({ title: 'Number active', body: `${s(d['number'], 'Your number')} is active.` }),
  },
  'number.renewed': {
    label: 'Number renewed',
    inAppDefault: true,
    render: (d) => ({
      title: d['reactivated'] ? 'Number reactivated' : 'Number renewed',
      body: `${s(d['number'], 'Your number')} was renewed for ${s(d['amount'])} USD until ${s(d['nextRenewalAt'])}.`,
    }),
  },
  'number.suspended': {
    label: 'Number suspended',
    inAppDefault: true,
    render: (d) => ({
      title: 'Number suspended',
      body: `${s(d['number'], 'Your number')} was suspended: the balance could not pay ${s(d['amount'])} USD. Top up before ${s(d['releaseAt'])} to keep it.`,
    }),
  },
  'number.released': {
    label: 'Number released',
    inAppDefault: true,
    render: (d) => ({
      title: 'Number released',
      body: `${s(d['number'], 'Your number')} was released (${s(d['reason'], 'released').replace(/_/g, ' ')}).`,
    }),
  },
  'number.listing_request.reviewed': {
    label: 'Number listing requests',
    inAppDefault: true,
    render: (d) => ({
      title: `Listing request ${s(d['status'], 'reviewed')}`,
      body: `Your request to list numbers was ${s(d['status'], 'reviewed')}${d['note'] ? `: ${s(d['note'])}` : '.'}`,
    }),
  },
  'revenue_share.fraud_flagged': {
    label: 'Revenue share fraud flags',
    inAppDefault: true,
    render: (d) => ({
      title: 'Traffic flagged',
      body: `Calls to ${s(d['number'], 'a revenue share number')} tripped the ${s(d['rule'], 'fraud')} rule; their earnings are held for review.`,
    }),
  },
  'revenue_share.flag_resolved': {
    label: 'Revenue share reviews',
    inAppDefault: true,
    render: (d) => ({
      title: d['status'] === 'confirmed' ? 'Flagged earnings clawed back' : 'Flag cleared',
      // Cleared earnings go back on hold (released as usual); confirmed ones are taken back.
      body:
        d['status'] === 'confirmed'
          ? `A fraud flag over ${s(d['calls'], '0')} call(s) was confirmed; ${s(d['payout'], 'their')} USD of earnings was clawed back.`
          : `A fraud flag over ${s(d['calls'], '0')} call(s) was cleared; ${s(d['payout'], 'their')} USD of earnings is back on hold until its release.`,
    }),
  },
  'revenue_share.earnings_released': {
    label: 'Revenue share earnings',
    inAppDefault: true,
    render: (d) => ({
      title: 'Earnings released',
      body: `${s(d['amount'])} USD from ${s(d['calls'], '0')} call(s) moved to your payable balance.`,
    }),
  },
  'interconnection.requested': {
    label: 'Interconnection proposals',
    inAppDefault: true,
    render: (d) => ({
      title: d['kind'] === 'counter' ? 'Interconnection counter-proposal' : 'Interconnection proposed',
      body:
        `Account ${s(d['counterpartyId'])} ${d['kind'] === 'counter' ? 'answered with new terms' : 'proposes an interconnection'} ` +
        `(${terms(d)}); it stays open until ${s(d['expiresAt'], 'it expires')}.`,
    }),
  },
  'interconnection.accepted': {
    label: 'Interconnection accepted',
    inAppDefault: true,
    render: (d) => ({
      title: 'Interconnection in force',
      body: `Account ${s(d['counterpartyId'])} accepted the terms (${terms(d)}); they run until ${s(d['validUntil'])}.`,
    }),
  },
  'interconnection.declined': {
    label: 'Interconnection declined',
    inAppDefault: true,
    render: (d) => ({
      title: 'Interconnection declined',
      body: `Account ${s(d['counterpartyId'])} declined your terms${because(d['reason'])}`,
    }),
  },
  'interconnection.suspended': {
    label: 'Interconnection suspended',
    inAppDefault: true,
    render: (d) => ({
      title: 'Interconnection suspended',
      body: `Account ${s(d['counterpartyId'])} suspended your interconnection: traffic between you goes at list prices until it resumes${because(d['reason'])}`,
    }),
  },
  'interconnection.resumed': {
    label: 'Interconnection resumed',
    inAppDefault: true,
    render: (d) => ({
      title: 'Interconnection resumed',
      body: `Account ${s(d['counterpartyId'])} resumed your interconnection: the agreed terms apply again.`,
    }),
  },
  'interconnection.ended': {
    label: 'Interconnection ended',
    inAppDefault: true,
    render: (d) => ({
      title: d['reason'] === 'cancelled' ? 'Interconnection proposal withdrawn' : 'Interconnection terminated',
      body:
        d['reason'] === 'cancelled'
          ? `Account ${s(d['counterpartyId'])} withdrew its proposal.`
          : `Account ${s(d['counterpartyId'])} terminated your interconnection${because(d['note'])}`,
    }),
  },
  'interconnection.expired': {
    label: 'Interconnection expired',
    inAppDefault: true,
    render: (d) => ({
      title: d['kind'] === 'term' ? 'Interconnection term ended' : 'Interconnection proposal expired',
      body:
        d['kind'] === 'term'
          ? `Your interconnection with account ${s(d['counterpartyId'])} reached the end of its term; traffic between you goes at list prices.`
          : `The interconnection proposal between you and account ${s(d['counterpartyId'])} expired unanswered.`,
    }),
  },
  'interconnection.statement_ready': {
    label: 'Interconnection statements',
    inAppDefault: true,
    render: (d) => ({
      title: 'Interconnection statement ready',
      body: `The settlement statement with account ${s(d['counterpartyId'])} for ${s(d['periodStart'])} to ${s(d['periodEnd'])} is ready.`,
    }),
  },
  'team.invitation_sent': {
    label: 'Team invitations',
    inAppDefault: true,
    render: (d) => ({
      title: 'Invitation sent',
      body: `${s(d['email'])} was invited to the team as ${role(d['role'])}.`,
    }),
  },
  'team.member_joined': {
    label: 'Team member joined',
    inAppDefault: true,
    render: (d) => ({ title: 'New team member', body: `${s(d['email'])} joined the team as ${role(d['role'])}.` }),
  },
  'team.member_role_changed': {
    label: 'Team role changes',
    inAppDefault: true,
    render: (d) => ({
      title: 'Team role changed',
      body: `${s(d['email'])} is now ${role(d['role'])} (was ${role(d['previousRole'])}).`,
    }),
  },
  'team.member_removed': {
    label: 'Team member removed',
    inAppDefault: true,
    render: (d) => ({ title: 'Team member removed', body: `${s(d['email'])} was removed from the team.` }),
  },
  'account.deletion_scheduled': {
    label: 'Account deletion',
    inAppDefault: true,
    render: (d) => ({
      title: 'Account deletion scheduled',
      body: `Your account will be deleted on ${s(d['scheduledFor'])}. Cancel before then to keep it.`,
    }),
  },
  'account.deletion_cancelled': {
    label: 'Account deletion cancelled',
    inAppDefault: true,
    render: () => ({ title: 'Account deletion cancelled', body: 'The deletion of your account was cancelled.' }),
  },
  'account.export_completed': {
    label: 'Account data export',
    inAppDefault: true,
    render: (d) => ({
      title: 'Your data export is ready',
      body: `The archive of your account's data is ready to download until ${s(d['expiresAt'])}.`,
    }),
  },
  'number.port_in.updated': {
    label: 'Number port-in orders',
    inAppDefault: true,
    render: (d) => ({
      title: `Port-in order ${s(d['status'], 'updated').replace('_', ' ')}`,
      body: `Your order to bring ${Array.isArray(d['numbers']) ? d['numbers'].length : 'your'} number(s) in is now ${s(d['status'], 'updated').replace('_', ' ')}${d['note'] ? `: ${s(d['note'])}` : '.'}`,
    }),
  },
  'interconnection.cap_reached': {
    label: 'Interconnection caps reached',
    inAppDefault: true,
    render: (d) => {
      const theirs = d['payerAccountId'] !== undefined && d['payerAccountId'] === d['counterpartyId'];
      const what = d['cap'] === 'minutes' ? 'minutes' : d['cap'] === 'messages' ? 'messages' : 'amount';
      const until = d['periodEnd'] ? ` until ${s(d['periodEnd'])}` : ' for the rest of the period';
      const after =
        d['overCap'] === 'refuse'
          ? `${theirs ? 'its' : 'your'} traffic does not go over ${theirs ? 'your' : 'its'} routes${until}.`
          : `${theirs ? 'its' : 'your'} traffic over ${theirs ? 'your' : 'its'} routes goes at list prices${until}.`;
      return {
        title: 'Interconnection cap reached',
        body: theirs
          ? `Account ${s(d['counterpartyId'])} reached the ${what} cap (${s(d['limit'], 'agreed')}) of your interconnection: ${after}`
          : `You reached the ${what} cap (${s(d['limit'], 'agreed')}) of your interconnection with account ${s(d['counterpartyId'])}: ${after}`,
      };
    },
  },
  'number.provisioning.updated': {
    label: 'Number caller name and emergency address provisioning',
    inAppDefault: true,
    render: (d) => {
      const what = d['kind'] === 'emergency' ? 'emergency address' : d['kind'] === 'cnam' ? 'caller name' : 'listing';
      const on = d['number'] ? `+${s(d['number'])}` : 'your number';
      const status = s(d['status'], 'updated').replace('_', ' ');
      return {
        title: `Number ${what} ${status}`,
        body: `The ${what} of ${on} is now ${status} at the provider${because(d['error'])}`,
      };
    },
  },
};
