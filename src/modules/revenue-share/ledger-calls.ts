/** Typed calls of the revenue share ledger functions (migration 227); every money move goes through them. */
import type { Db } from '../../db/connection.js';

interface Posting {
  postingId: string;
  replayed: boolean;
}

async function first(query: Promise<{ r: Posting }[]>): Promise<Posting> {
  const [row] = await query;
  return row!.r;
}

export function createRevshareLedger() {
  return {
    /** An answered call: supplier owes `charge`, holder earns `payout` (held), the platform keeps the rest. */
    credit(
      db: Db,
      i: { key: string; holderId: string; charge: string; payout: string; callId: string; reference: string; at: Date },
    ) {
      return first(db<{ r: Posting }[]>`
        select ledger_revshare_credit(${i.key}, ${i.holderId}, ${i.charge}::numeric, ${i.payout}::numeric, ${i.callId},
                                      ${i.reference}, ${i.at}) as r`);
    },
    /** Held earnings to the holder's payable balance. */
    release(db: Db, i: { key: string; holderId: string; amount: string; reference: string; at: Date }) {
      return first(db<{ r: Posting }[]>`
        select ledger_revshare_release(${i.key}, ${i.holderId}, ${i.amount}::numeric, ${i.reference}, ${i.at}) as r`);
    },
    /** Confirmed fraud: the calls' credits reversed. */
    clawback(
      db: Db,
      i: { key: string; holderId: string; charge: string; payout: string; reference: string; at: Date },
    ) {
      return first(db<{ r: Posting }[]>`
        select ledger_revshare_clawback(${i.key}, ${i.holderId}, ${i.charge}::numeric, ${i.payout}::numeric,
                                        ${i.reference}, ${i.at}) as r`);
    },
    /** A supplier's payment for its ranges' traffic. */
    supplierPayment(db: Db, i: { key: string; supplierId: string; amount: string; reference: string; at: Date }) {
      return first(db<{ r: Posting }[]>`
        select ledger_revshare_supplier_payment(${i.key}, ${i.supplierId}, ${i.amount}::numeric, ${i.reference}, ${i.at}) as r`);
    },
  };
}

export type RevshareLedger = ReturnType<typeof createRevshareLedger>;
