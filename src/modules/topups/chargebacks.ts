import type { Db } from '../../db/connection.js';
import { Money } from '../../ledger/money.js';
import type { Clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import type { TopupRow, TopupsRepo } from './repo.js';

interface Taken {
  postingId: string | null;
  amount: string;
  outstanding: string;
  balanceAfter: string;
}

/**
 * Card chargebacks: the card network takes the disputed money back whatever the balance holds.
 * What the balance cannot give now stays outstanding on the top-up and is taken from the
 * account's next credits, so a disputed card top-up that was already spent is still repaid.
 */
export function createChargebacks(deps: { clock: Clock; repo: TopupsRepo }) {
  const { clock, repo } = deps;

  async function post(tx: Db, key: string, accountId: string, amount: string, reference: string): Promise<Taken> {
    const [row] = await tx<{ r: Taken }[]>`
      select ledger_card_chargeback(${key}, ${accountId}::uuid, ${amount}::numeric, ${reference}, ${clock.now()}) as r`;
    return row!.r;
  }

  return {
    /** Takes a disputed amount now, as far as the balance goes; the rest stays outstanding on the top-up. */
    async open(tx: Db, t: TopupRow, disputeId: string, amount: string): Promise<Taken> {
      const r = await post(tx, `dispute:${disputeId}`, t.accountId, amount, `card dispute ${disputeId}`);
      await repo.chargeback(tx, t.id, {
        status: 'disputed',
        postingId: r.postingId,
        outstanding: r.outstanding,
        at: clock.now(),
      });
      return r;
    },

    /** A won dispute: what was taken comes back, what was still outstanding is forgiven. */
    async won(tx: Db, t: TopupRow, disputeId: string, amount: string) {
      const taken = Money.parse(amount).minus(t.chargebackOutstanding);
      let r: { postingId: string; balanceAfter: string } | null = null;
      if (taken.isPositive()) {
        const [row] = await tx<{ r: { postingId: string; balanceAfter: string } }[]>`
          select ledger_card_chargeback_won(${`dispute-won:${disputeId}`}, ${t.accountId}::uuid, ${taken.toString()}::numeric,
                                            ${`card dispute ${disputeId} won`}, ${clock.now()}) as r`;
        r = row!.r;
      }
      await repo.chargeback(tx, t.id, {
        status: 'succeeded',
        postingId: r?.postingId ?? t.chargebackPostingId,
        outstanding: '0',
        at: clock.now(),
      });
      return { returned: taken.isPositive() ? taken.toString() : Money.zero.toString(), balanceAfter: r?.balanceAfter };
    },

    /** After a credit, in its transaction: outstanding chargebacks are taken from it, oldest first. */
    async recover(tx: Db, accountId: string) {
      for (const t of await repo.lockOutstanding(tx, accountId)) {
        const r = await post(
          tx,
          `dispute-recover:${t.id}:${newId()}`,
          accountId,
          t.chargebackOutstanding,
          `card dispute recovery ${t.id}`,
        );
        if (r.postingId === null) return;
        await repo.chargeback(tx, t.id, {
          status: t.status,
          postingId: t.chargebackPostingId,
          outstanding: r.outstanding,
          at: clock.now(),
        });
      }
    },
  };
}

export type Chargebacks = ReturnType<typeof createChargebacks>;
