import { AppError, notFound, validationError } from '../../http/errors.js';
import type { Ledger } from '../../ledger/index.js';
import { Money } from '../../ledger/money.js';
import type { CoreDeps } from '../../platform/core.js';
import { newId } from '../../platform/ids.js';
import { emit } from '../../webhooks/emit.js';
import { writeAuditEntry, type AuditActor } from '../account-profile/audit.js';
import type { AccountsService } from '../accounts/service.js';
import type { TeamService } from '../team/service.js';
import type { DeletionRow, LifecycleRepo } from './repo.js';

/** What the deletion ends through the services that own them (numbers released, purchases cancelled). */
/** What the account still holds, each asked of the module that owns it. */
export interface OpenCommitments {
  liveCalls(accountId: string): Promise<number>;
  pendingPayout(accountId: string): Promise<boolean>;
  subAccounts(accountId: string): Promise<number>;
  numbers(accountId: string): Promise<string[]>;
  releaseNumber(accountId: string, id: string): Promise<unknown>;
  purchases(accountId: string): Promise<string[]>;
  cancelPurchase(accountId: string, id: string): Promise<unknown>;
}

const DAY = 86_400_000;

/**
 * Account deletion (docs/account.md "Account deletion"): scheduled by the holder with the
 * password, refused while money or traffic is still open, cancellable during the grace period,
 * then carried out by the sweep in one transaction: the closing entry of the balance, the login
 * closed and freed, memberships ended.
 */
export function createAccountDeletion(
  deps: Pick<CoreDeps, 'config' | 'clock' | 'log'> & {
    repo: LifecycleRepo;
    ledger: Ledger;
    accounts: AccountsService;
    team: TeamService;
    open: OpenCommitments;
  },
) {
  const { repo, ledger, accounts, clock, log } = deps;
  const graceDays = deps.config.account.deletion_grace_days;

  /** Everything that stops the deletion, and what happens to the money; read live. */
  async function preview(accountId: string, forfeit: boolean) {
    const [bal, calls, payouts, subs, numbers, purchases] = await Promise.all([
      ledger.balanceOf(accountId),
      deps.open.liveCalls(accountId),
      deps.open.pendingPayout(accountId),
      deps.open.subAccounts(accountId),
      deps.open.numbers(accountId),
      deps.open.purchases(accountId),
    ]);
    const own = Money.parse(bal.balance).minus(Money.parse(bal.held));
    const refusals: { code: string; message: string }[] = [];
    if (Money.parse(bal.balance).isNegative())
      refusals.push({ code: 'negative_balance', message: 'The balance is negative: top up to zero first' });
    if (calls > 0) refusals.push({ code: 'live_calls', message: `${calls} call(s) are live` });
    if (payouts) refusals.push({ code: 'pending_payout', message: 'A payout waits for approval' });
    if (subs > 0)
      refusals.push({ code: 'open_sub_accounts', message: `${subs} sub-account(s) are open: close them first` });
    if (Money.parse(bal.payable).isPositive())
      refusals.push({ code: 'unpaid_earnings', message: 'Seller earnings are not paid out: request a payout first' });
    if (own.isPositive() && !forfeit)
      refusals.push({
        code: 'positive_balance',
        message: 'The balance is positive: spend or withdraw it, or send forfeitBalance: true to give it up',
      });
    return {
      deletable: refusals.length === 0,
      refusals,
      balance: own.isPositive() ? own.toString() : Money.parse('0').toString(),
      forfeited: own.isPositive() && forfeit ? own.toString() : Money.parse('0').toString(),
      testCreditLost: Money.parse(bal.testCredit).toString(),
      numbersReleased: numbers.length,
      purchasesCancelled: purchases.length,
      graceDays,
    };
  }

  const view = (d: DeletionRow) => ({
    id: d.id,
    state: d.state,
    forfeitBalance: d.forfeitBalance,
    reason: d.reason,
    requestedAt: d.requestedAt.toISOString(),
    scheduledFor: d.scheduledFor.toISOString(),
    cancelledAt: d.cancelledAt?.toISOString() ?? null,
    completedAt: d.completedAt?.toISOString() ?? null,
    blockedReason: d.blockedReason,
    outcome: d.outcome,
  });

  /** Carries out one due deletion; a refusal found now postpones it to the next sweep. */
  async function carryOut(d: DeletionRow) {
    const p = await preview(d.accountId, d.forfeitBalance);
    if (!p.deletable) {
      await repo.blockDeletion(d.id, p.refusals.map((r) => r.message).join('; '));
      return false;
    }
    for (const id of await deps.open.purchases(d.accountId)) await deps.open.cancelPurchase(d.accountId, id);
    for (const id of await deps.open.numbers(d.accountId)) await deps.open.releaseNumber(d.accountId, id);
    const ended = await repo.sql.begin(async (tx) => {
      const now = clock.now();
      const still = await repo.deletion(d.accountId, tx, true);
      if (still?.id !== d.id || still.state !== 'scheduled') return null;
      const bal = await ledger.balanceOf(d.accountId, tx);
      const own = Money.parse(bal.balance).minus(Money.parse(bal.held));
      const closing = own.isPositive()
        ? await ledger.forfeitBalance(
            {
              postingKey: `account-deletion:${d.id}`,
              accountId: d.accountId,
              amount: own.toString(),
              reference: 'account deleted: balance forfeited',
            },
            tx,
          )
        : null;
      const memberships = await deps.team.endMembershipsOf(tx, d.accountId);
      const sessions = await accounts.closeLogin(d.accountId, tx);
      const outcome = {
        forfeited: own.isPositive() ? own.toString() : '0.000000',
        closingPostingId: closing?.postingId ?? null,
        numbersReleased: p.numbersReleased,
        purchasesCancelled: p.purchasesCancelled,
        membershipsEnded: memberships,
        sessionsEnded: sessions.length,
      };
      await repo.completeDeletion(tx, d.id, now, outcome);
      await writeAuditEntry(tx, {
        accountId: d.accountId,
        actor: { actorId: null, credential: 'system', ip: null },
        action: 'account.deleted',
        changes: { status: { from: 'active', to: 'closed' }, ...outcome },
        at: now,
      });
      return sessions;
    });
    if (!ended) return false;
    accounts.forget(d.accountId, ended);
    log.info({ accountId: d.accountId, deletionId: d.id }, 'account deleted');
    return true;
  }

  return {
    preview: (accountId: string) => preview(accountId, true),

    async schedule(
      accountId: string,
      actor: AuditActor,
      input: { password: string; forfeitBalance?: boolean | undefined; reason?: string | undefined },
    ) {
      const login = await accounts.getAccount(accountId);
      if (!login?.email) throw notFound('Account');
      if (!(await accounts.checkPassword(accountId, input.password)))
        throw validationError([{ path: 'password', message: 'is not the current password' }]);
      const p = await preview(accountId, input.forfeitBalance ?? false);
      if (!p.deletable)
        throw new AppError(
          'CONFLICT',
          `The account cannot be deleted yet: ${p.refusals.map((r) => r.message).join('; ')}`,
          p.refusals.map((r) => ({ path: r.code, message: r.message })),
        );
      const now = clock.now();
      const row = await repo.insertDeletion({
        id: newId(),
        accountId,
        state: 'scheduled',
        forfeitBalance: input.forfeitBalance ?? false,
        reason: input.reason ?? null,
        requestedBy: accountId,
        requestedAt: now,
        scheduledFor: new Date(now.getTime() + graceDays * DAY),
      });
      await repo.sql.begin(async (tx) => {
        await writeAuditEntry(tx, {
          accountId,
          actor,
          action: 'account.deletion_scheduled',
          changes: { deletion: { from: null, to: { id: row.id, scheduledFor: row.scheduledFor.toISOString() } } },
          at: now,
        });
        await emit(tx, {
          accountId,
          event: 'account.deletion_scheduled',
          data: { deletionId: row.id, scheduledFor: row.scheduledFor.toISOString(), forfeited: p.forfeited },
          at: now,
        });
      });
      return { ...view(row), preview: p };
    },

    async get(accountId: string) {
      const d = await repo.deletion(accountId);
      if (!d) throw notFound('Deletion');
      return view(d);
    },

    async cancel(accountId: string, actor: AuditActor) {
      const d = await repo.deletion(accountId);
      if (!d || d.state !== 'scheduled') throw notFound('Scheduled deletion');
      const now = clock.now();
      const done = await repo.sql.begin(async (tx) => {
        const row = await repo.cancelDeletion(tx, d.id, now);
        if (!row) throw notFound('Scheduled deletion');
        await writeAuditEntry(tx, {
          accountId,
          actor,
          action: 'account.deletion_cancelled',
          changes: { deletion: { from: { id: d.id, state: 'scheduled' }, to: { id: d.id, state: 'cancelled' } } },
          at: now,
        });
        await emit(tx, { accountId, event: 'account.deletion_cancelled', data: { deletionId: d.id }, at: now });
        return row;
      });
      return view(done);
    },

    /** One pass of the sweep: the deletions due now. */
    async runDue(): Promise<number> {
      let done = 0;
      for (const d of await repo.dueDeletions(clock.now(), 50)) if (await carryOut(d)) done++;
      return done;
    },
  };
}

export type AccountDeletion = ReturnType<typeof createAccountDeletion>;
