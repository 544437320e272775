import { CliUsageError, registerCommand } from './commands.js';

// Operator commands of payouts and bank wires: the decisions the operator takes by hand.

registerCommand({
  words: ['payout', 'list'],
  summary: 'payouts waiting for approval, oldest first',
  options: {},
  async run(ctx) {
    return { pending: await ctx.services.payouts.pending() };
  },
  render: (r) =>
    (r['pending'] as { id: string; accountId: string; amount: string; destination: { accountName: string } }[])
      .map((p) => `${p.id}  ${p.amount} USD  account ${p.accountId}  to ${p.destination.accountName}`)
      .join('\n') || 'no payouts waiting',
});

registerCommand({
  words: ['payout', 'approve'],
  summary: 'pay out a requested payout: posts the ledger payout entry',
  options: {
    id: { type: 'string', required: true, description: 'payout id' },
    note: { type: 'string', description: 'note shown to the seller' },
  },
  async run(ctx, o) {
    return await ctx.services.payouts.approve(String(o['id']), null, typeof o['note'] === 'string' ? o['note'] : null);
  },
  render: (r) => `payout ${String(r['id'])} paid: ${String(r['amount'])} USD`,
});

registerCommand({
  words: ['payout', 'reject'],
  summary: 'refuse a requested payout, saying why',
  options: {
    id: { type: 'string', required: true, description: 'payout id' },
    reason: { type: 'string', required: true, description: 'shown to the seller' },
  },
  async run(ctx, o) {
    return await ctx.services.payouts.reject(String(o['id']), null, String(o['reason']));
  },
  render: (r) => `payout ${String(r['id'])} rejected`,
});

registerCommand({
  words: ['wire', 'confirm'],
  summary: 'credit an arrived bank wire, matched by the reference on the transfer',
  options: {
    reference: { type: 'string', required: true, description: 'the SVC-XXXXX-XXXXX reference' },
    amount: { type: 'string', required: true, description: 'USD received' },
    'bank-reference': { type: 'string', description: "the bank's own transaction id" },
  },
  async run(ctx, o) {
    if (!/^\d+(\.\d{1,6})?$/.test(String(o['amount']))) throw new CliUsageError('--amount must be a USD amount');
    const t = await ctx.services.topups.wire.confirm({
      reference: String(o['reference']),
      amount: String(o['amount']),
      bankReference: typeof o['bank-reference'] === 'string' ? o['bank-reference'] : null,
    });
    return { id: t.id, accountId: t.accountId, credited: t.creditedAmount };
  },
  render: (r) => `credited ${String(r['credited'])} USD to account ${String(r['accountId'])}`,
});
