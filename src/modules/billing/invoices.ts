import { notFound } from '../../http/errors.js';
import { Money } from '../../ledger/money.js';
import type { TopupRow } from '../topups/repo.js';

/** Where the credited top-ups come from (the topups module). */
export interface CreditedTopups {
  list(accountId: string, cursor: string | undefined, max: number): Promise<TopupRow[]>;
  one(accountId: string, id: string): Promise<TopupRow | null>;
}

const METHOD = { card: 'card', wire: 'bank wire', crypto: 'crypto', x402: 'x402' } as const;

/** An invoice for a top-up: paid on issue, with the billing identity frozen when it was credited. */
export function invoiceOf(t: TopupRow, issuer: string) {
  const amount = Money.parse(t.creditedAmount ?? t.amount).toString();
  const issued = (t.completedAt ?? t.updatedAt).toISOString();
  return {
    id: t.id,
    invoiceNumber: `INV-${t.receiptNumber!.padStart(8, '0')}`,
    issueDate: issued.slice(0, 10),
    status: 'paid' as const,
    issuer: { name: issuer },
    billedTo: t.billedTo ?? {},
    identityFrozen: true as const,
    currency: 'USD' as const,
    lines: [
      {
        description: `Prepaid balance top-up (${METHOD[t.method]})`,
        quantity: 1,
        unitPrice: amount,
        amount,
      },
    ],
    subtotal: amount,
    tax: Money.zero.toString(),
    total: amount,
    amountPaid: amount,
    paidAt: issued,
    paymentMethod: t.method,
    paymentReference: t.reference ?? (t.cardLast4 ? `${t.cardBrand ?? 'card'} •••• ${t.cardLast4}` : null),
    transactionId: t.postingId,
    topupId: t.id,
  };
}

export type Invoice = ReturnType<typeof invoiceOf>;

export function createInvoices(deps: { topups: CreditedTopups; issuer: string }) {
  return {
    async list(accountId: string, cursor: string | undefined, max: number) {
      return (await deps.topups.list(accountId, cursor, max)).map((t) => invoiceOf(t, deps.issuer));
    },
    async one(accountId: string, id: string) {
      const t = await deps.topups.one(accountId, id);
      if (!t) throw notFound('Invoice');
      return invoiceOf(t, deps.issuer);
    },
  };
}

export type Invoices = ReturnType<typeof createInvoices>;
