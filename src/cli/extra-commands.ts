import { newId } from '../platform/ids.js';
import { CliUsageError, registerCommand } from './commands.js';
import type { CliContext } from './context.js';

// Operator commands of the ledger and SIP planes, and Switch plans.

async function accountId(ctx: CliContext, email: unknown): Promise<string> {
  const account = await ctx.services.accounts.repo.byEmail(String(email));
  if (!account) throw new CliUsageError(`no account with e-mail ${String(email)}`);
  return account.id;
}

registerCommand({
  words: ['topup'],
  summary: 'credit a top-up (wire transfers are recorded this way); --reference makes it idempotent',
  options: {
    email: { type: 'string', required: true, description: 'account e-mail' },
    amount: { type: 'string', required: true, description: 'USD with up to 6 decimals, e.g. 100.000000' },
    source: { type: 'string', description: 'wire (default), card, crypto' },
    reference: { type: 'string', description: 'bank reference; the same reference never credits twice' },
  },
  async run(ctx, o) {
    const source = String(o['source'] ?? 'wire');
    if (!['wire', 'card', 'crypto'].includes(source)) throw new CliUsageError('--source must be wire, card or crypto');
    const id = await accountId(ctx, o['email']);
    const reference = typeof o['reference'] === 'string' ? o['reference'] : null;
    const r = await ctx.services.topups.topup({
      accountId: id,
      amount: String(o['amount']),
      source: source as 'wire' | 'card' | 'crypto',
      reference,
      postingKey: reference ? `svcctl:topup:${source}:${reference}` : `svcctl:topup:${newId()}`,
    });
    return { ...r };
  },
  render: (r) =>
    `${r['replayed'] ? 'already credited' : 'credited'} ${String(r['amount'])} USD; balance ${String(r['balance'])}`,
});

registerCommand({
  words: ['invite', 'create'],
  summary: 'create an invite code that grants test credit',
  options: {
    amount: { type: 'string', description: 'test credit in USD (default 10.000000)' },
    uses: { type: 'string', description: 'how many accounts may redeem it (default 1)' },
    note: { type: 'string', description: 'what it is for' },
  },
  async run(ctx, o) {
    const uses = o['uses'] === undefined ? 1 : Number(o['uses']);
    if (!Number.isInteger(uses) || uses < 1) throw new CliUsageError('--uses must be a positive integer');
    const r = await ctx.services.topups.createInviteCode({
      amount: String(o['amount'] ?? '10.000000'),
      maxRedemptions: uses,
      ...(typeof o['note'] === 'string' ? { note: o['note'] } : {}),
    });
    return { ...r };
  },
  render: (r) => `invite code ${String(r['code'])} (${String(r['amount'])} USD test credit)`,
});

registerCommand({
  words: ['trunk-ip', 'add'],
  summary: 'whitelist a source address: every SIP call from it bills the account',
  options: {
    email: { type: 'string', required: true, description: 'account e-mail' },
    ip: { type: 'string', required: true, description: 'IPv4 or IPv6 address' },
    label: { type: 'string', description: 'up to 60 characters' },
  },
  async run(ctx, o) {
    const id = await accountId(ctx, o['email']);
    const r = await ctx.services.calls.repo.addTrunkIp({
      id: newId(),
      accountId: id,
      ip: String(o['ip']),
      label: typeof o['label'] === 'string' ? o['label'] : null,
    });
    return { id: r.id, ip: r.ip, label: r.label, status: r.status };
  },
  render: (r) =>
    r['status'] === 'pending'
      ? `${String(r['ip'])} is held by another account: claim ${String(r['id'])} pending (trunk-ip approve)`
      : `whitelisted ${String(r['ip'])}`,
});

registerCommand({
  words: ['trunk-ip', 'list'],
  summary: 'list the whitelisted source addresses of an account',
  options: { email: { type: 'string', required: true, description: 'account e-mail' } },
  async run(ctx, o) {
    const rows = await ctx.services.calls.repo.listTrunkIps(await accountId(ctx, o['email']));
    return { addresses: rows.map((r) => ({ id: r.id, ip: r.ip, label: r.label, status: r.status })) };
  },
  render: (r) =>
    (r['addresses'] as { ip: string; label: string | null }[])
      .map((a) => `${a.ip}${a.label ? `  ${a.label}` : ''}`)
      .join('\n') || '(none)',
});

registerCommand({
  words: ['trunk-ip', 'pending'],
  summary: 'list address claims waiting for approval (an address another account already holds)',
  options: {},
  async run(ctx) {
    const rows = await ctx.services.calls.repo.pendingTrunkIps();
    return {
      pending: rows.map((r) => ({
        id: r.id,
        ip: r.ip,
        accountId: r.accountId,
        heldBy: r.heldBy,
        label: r.label,
        createdAt: r.createdAt.toISOString(),
      })),
    };
  },
  render: (r) =>
    (r['pending'] as { id: string; ip: string; accountId: string; heldBy: string | null }[])
      .map((p) => `${p.id}  ${p.ip}  claimed by ${p.accountId}${p.heldBy ? `, held by ${p.heldBy}` : ''}`)
      .join('\n') || '(none)',
});

registerCommand({
  words: ['trunk-ip', 'approve'],
  summary: 'give an address to a pending claim; the account that held it keeps a pending claim',
  options: { id: { type: 'string', required: true, description: 'the pending claim (trunk-ip pending)' } },
  async run(ctx, o) {
    if (!(await ctx.services.calls.repo.approveTrunkIp(ctx.sql, String(o['id']))))
      throw new CliUsageError(`no pending claim ${String(o['id'])}`);
    return { approved: String(o['id']) };
  },
  render: (r) => `approved ${String(r['approved'])}`,
});

registerCommand({
  words: ['trunk-ip', 'reject'],
  summary: 'drop a pending address claim',
  options: { id: { type: 'string', required: true, description: 'the pending claim (trunk-ip pending)' } },
  async run(ctx, o) {
    if (!(await ctx.services.calls.repo.rejectTrunkIp(String(o['id']))))
      throw new CliUsageError(`no pending claim ${String(o['id'])}`);
    return { rejected: String(o['id']) };
  },
  render: (r) => `rejected ${String(r['rejected'])}`,
});

registerCommand({
  words: ['switch-plan', 'set'],
  summary: 'give an account a Switch plan or trial from now (replaces the one it has)',
  options: {
    email: { type: 'string', required: true, description: 'account e-mail' },
    trial: { type: 'string', description: 'a trial of this many days' },
    until: { type: 'string', description: 'a plan ending at this ISO date or time (default: no end)' },
  },
  async run(ctx, o) {
    const id = await accountId(ctx, o['email']);
    let kind: 'trial' | 'plan' = 'plan';
    let endsAt: Date | null = null;
    if (o['trial'] !== undefined) {
      const days = Number(o['trial']);
      if (!Number.isInteger(days) || days < 1 || days > 365)
        throw new CliUsageError('--trial must be a whole number of days, 1 to 365');
      if (o['until'] !== undefined) throw new CliUsageError('--trial and --until exclude each other');
      kind = 'trial';
      endsAt = new Date(Date.now() + days * 86_400_000);
    } else if (o['until'] !== undefined) {
      endsAt = new Date(String(o['until']));
      if (Number.isNaN(endsAt.getTime()) || endsAt <= new Date())
        throw new CliUsageError('--until must be an ISO date or time in the future');
    }
    const s = await ctx.services.switchSubscriptions.grant(id, kind, endsAt);
    return { kind: s.kind, startedAt: s.startedAt.toISOString(), endsAt: s.endsAt?.toISOString() ?? null };
  },
  render: (r) =>
    `Switch ${String(r['kind'])} from ${String(r['startedAt'])}${r['endsAt'] ? ` until ${String(r['endsAt'])}` : ', no end date'}`,
});

registerCommand({
  words: ['switch-plan', 'end'],
  summary: "end an account's Switch plan or trial now",
  options: { email: { type: 'string', required: true, description: 'account e-mail' } },
  async run(ctx, o) {
    return { ended: await ctx.services.switchSubscriptions.end(await accountId(ctx, o['email'])) };
  },
  render: (r) => (r['ended'] ? 'Switch plan ended' : 'the account had no Switch plan'),
});
