/**
 * The outbox events that become in-app notifications, with their wording. The list is mirrored by
 * the SQL function `notification_event` (migrations 242, 291), which limits the feed's index to these
 * events: a kind added here needs a migration redefining that function.
 */
type Data = Record<string, unknown>;
const s = (v: unknown, dflt = '') => (typeof v === 'string' || typeof v === 'number' ? String(v) : dflt);

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
};
