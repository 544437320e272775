import { Type } from 'typebox';
import { DateTime, Money as MoneySchema, Nullable, Uuid } from '../../http/envelope.js';
import { Money } from '../../ledger/money.js';
import type { TopupRow } from './repo.js';

export const TopupMethods = ['card', 'wire', 'crypto', 'x402'] as const;
export const TopupStatuses = [
  'pending',
  'awaiting_funds',
  'succeeded',
  'failed',
  'canceled',
  'expired',
  'disputed',
  'charged_back',
] as const;

export const MethodName = Type.Unsafe<(typeof TopupMethods)[number]>(Type.String({ enum: [...TopupMethods] }));
export const StatusName = Type.Unsafe<(typeof TopupStatuses)[number]>(Type.String({ enum: [...TopupStatuses] }));

export const Card = Nullable(Type.Object({ brand: Nullable(Type.String()), last4: Nullable(Type.String()) }));

export const Topup = Type.Object({
  id: Uuid(),
  method: MethodName,
  origin: Type.Union([Type.Literal('customer'), Type.Literal('auto'), Type.Literal('operator')], {
    description: '`auto`: started by auto-recharge; `operator`: credited by the operator',
  }),
  status: StatusName,
  amount: MoneySchema('requested'),
  creditedAmount: Nullable(MoneySchema('credited to the balance; a wire is credited as received')),
  currency: Type.Literal('USD'),
  reference: Nullable(Type.String({ description: 'wire: the reference to put on the transfer' })),
  card: Card,
  clientSecret: Nullable(
    Type.String({ description: 'card, while pending: confirm the payment with Stripe.js using this' }),
  ),
  chargebackOutstanding: MoneySchema('a chargeback the balance could not cover yet: taken from the next credits'),
  failureReason: Nullable(Type.String()),
  receiptNumber: Nullable(Type.String({ description: 'set once credited' })),
  transactionId: Nullable(Uuid('the ledger transaction of the credit')),
  expiresAt: Nullable(DateTime()),
  createdAt: DateTime(),
  updatedAt: DateTime(),
  completedAt: Nullable(DateTime()),
});

export const receiptNumber = (n: string | null) => (n === null ? null : `R-${n.padStart(8, '0')}`);

export function presentTopup(t: TopupRow) {
  return {
    id: t.id,
    method: t.method,
    origin: t.origin,
    status: t.status,
    amount: Money.parse(t.amount).toString(),
    creditedAmount: t.creditedAmount === null ? null : Money.parse(t.creditedAmount).toString(),
    currency: 'USD' as const,
    reference: t.reference,
    card: t.cardLast4 ? { brand: t.cardBrand, last4: t.cardLast4 } : null,
    clientSecret: t.status === 'pending' ? t.stripeClientSecret : null,
    chargebackOutstanding: Money.parse(t.chargebackOutstanding).toString(),
    failureReason: t.failureReason,
    receiptNumber: receiptNumber(t.receiptNumber),
    transactionId: t.postingId,
    expiresAt: t.expiresAt?.toISOString() ?? null,
    createdAt: t.createdAt.toISOString(),
    updatedAt: t.updatedAt.toISOString(),
    completedAt: t.completedAt?.toISOString() ?? null,
  };
}

export const Receipt = Type.Object({
  receiptNumber: Type.String(),
  topupId: Uuid(),
  issuedAt: DateTime(),
  issuer: Type.Object({ name: Type.String() }),
  billedTo: Type.Object({}, { additionalProperties: true, description: 'the account as it was when credited' }),
  method: MethodName,
  card: Card,
  reference: Nullable(Type.String()),
  description: Type.String(),
  amount: MoneySchema(),
  currency: Type.Literal('USD'),
  transactionId: Uuid(),
  status: StatusName,
});

export function presentReceipt(t: TopupRow, issuer: string) {
  const method = { card: 'card', wire: 'bank wire', crypto: 'crypto', x402: 'x402' }[t.method];
  return {
    receiptNumber: receiptNumber(t.receiptNumber)!,
    topupId: t.id,
    issuedAt: (t.completedAt ?? t.updatedAt).toISOString(),
    issuer: { name: issuer },
    billedTo: t.billedTo ?? {},
    method: t.method,
    card: t.cardLast4 ? { brand: t.cardBrand, last4: t.cardLast4 } : null,
    reference: t.reference,
    description: `Prepaid balance top-up by ${method}`,
    amount: Money.parse(t.creditedAmount ?? t.amount).toString(),
    currency: 'USD' as const,
    transactionId: t.postingId!,
    status: t.status,
  };
}
