/**
 * Event names of the spec ("Events", "Subscribable events"). `ping` is only ever sent by
 * `POST /account/webhooks/{id}/test`, so it can be neither emitted nor subscribed to.
 */
export const SubscribableEvents = [
  'call.completed',
  'sms.sent',
  'sms.dlr',
  'campaign.started',
  'campaign.completed',
  'topup.confirmed',
  'balance.low',
  'offer.received',
  'route.purchased',
  'sub_account.balance_low',
  'sub_account.suspended',
  'sub_account.resumed',
  'sub_account.topup_requested',
  'number.call.received',
  'number.sms.received',
  'number.voicemail.received',
  'invoice.created',
  'invoice.issued',
  'invoice.sent',
  'invoice.voided',
  'invoice.reissued',
  'invoice.payment',
  'credit_note.issued',
  'payable.created',
  'netting.run',
  'sell_rate.changed',
  'cost_rate.scheduled',
  'cost_rate.activated',
  'cost_rate.rolled_back',
  'sub_account.margin_below_floor',
  // "Also delivered": asynchronous call progress and carrier receipts.
  'call.ringing',
  'call.answered',
  'call.gathered',
  'sms.delivered',
  'sms.failed',
  // Verify (docs/verify.md): a code approved, locked after five wrong tries, canceled.
  'verify.approved',
  'verify.max_attempts',
  'verify.canceled',
  // Phone numbers (docs/numbers.md): a rented number's life, and a seller's listing request reviewed.
  'number.purchased',
  'number.activated',
  'number.renewed',
  'number.suspended',
  'number.released',
  'number.listing_request.reviewed',
  // Marketplace (docs/marketplace.md): offers traded after `offer.received`, access to private listings,
  // buyer-seller messages, route reports and rate increases buyers are given notice of.
  'offer.accepted',
  'offer.declined',
  'offer.expired',
  'route.access_requested',
  'route.access_decided',
  'route.message_received',
  'route.report_received',
  'route.report_answered',
  'route.report_resolved',
  'route.suspended',
  'route.rate_increase_scheduled',
  // Identity verification decisions and support replies (issue 24); they also feed the in-app notifications.
  'kyc.verified',
  'kyc.rejected',
  'support_ticket.replied',
  // Top-ups and payouts beyond the spec's list: what a user of a card-funded account is told.
  'topup.failed',
  'topup.chargeback',
  'topup.chargeback_reversed',
  'auto_recharge.failed',
  'payout.requested',
  'payout.paid',
  'payout.rejected',
  'billing.spending_alert',
  'billing.export_completed',
  // Revenue share numbers (docs/revenue-share.md): a fraud rule tripped on a number, its review, held
  // earnings released to the payable balance.
  'revenue_share.fraud_flagged',
  'revenue_share.flag_resolved',
  'revenue_share.earnings_released',
  // Interconnections between two accounts (docs/interconnections.md): proposals and counters, then the agreement's life.
  'interconnection.requested',
  'interconnection.accepted',
  'interconnection.declined',
  'interconnection.suspended',
  'interconnection.resumed',
  'interconnection.ended',
  // Team members (docs/account.md): invitations sent or resent, members joining, role changes, removals.
  'team.invitation_sent',
  'team.member_joined',
  'team.member_role_changed',
  'team.member_removed',
  // The account's own life (docs/account.md): a deletion scheduled or cancelled in its grace period, a data export ready.
  'account.deletion_scheduled',
  'account.deletion_cancelled',
  'account.export_completed',
  // Interconnections, complete: the sweep's expiry of a proposal or a term, a settlement statement ready.
  'interconnection.expired',
  'interconnection.statement_ready',
  // Port-in orders (docs/numbers.md): every step of an order, to its buyer.
  'number.port_in.updated',
  // Interconnections: a side reached a cap of the period (both sides are told once per side, period and cap).
  'interconnection.cap_reached',
  // A number's CNAM listing or emergency address changed status at the provisioning provider (docs/numbers.md).
  'number.provisioning.updated',
] as const;

export type EventName = (typeof SubscribableEvents)[number];
/** Every name a delivery can carry. */
export type DeliveredEventName = EventName | 'ping';

const known: ReadonlySet<string> = new Set(SubscribableEvents);

export const isEventName = (name: string): name is EventName => known.has(name);

/** Subscribes an endpoint to every event, present and future. */
export const ALL_EVENTS = '*';
