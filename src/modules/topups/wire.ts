import { randomInt } from 'node:crypto';
import type { Config } from '../../config/schema.js';
import type { Sql } from '../../db/connection.js';
import { conflict, notFound, ruleError, validationError } from '../../http/errors.js';
import type { Ledger } from '../../ledger/ledger.js';
import { Money } from '../../ledger/money.js';
import type { Clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import type { BillingIdentity } from './card.js';
import type { Chargebacks } from './chargebacks.js';
import type { TopupsRepo } from './repo.js';

export const WIRE_MIN = '100.00';

// Crockford's base32 without I, L, O, U: a reference read aloud or retyped from a bank statement
// survives the usual confusions, which `normalizeReference` undoes.
const REF_ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

function newReference(): string {
  let s = '';
  for (let i = 0; i < 10; i++) s += REF_ALPHABET[randomInt(REF_ALPHABET.length)];
  return `SVC-${s.slice(0, 5)}-${s.slice(5)}`;
}

/** Banks drop dashes and spaces, change case, and people type O for 0 and I or L for 1. */
export function normalizeReference(raw: string): string | null {
  const s = raw
    .toUpperCase()
    .replace(/[\s\-_.]/g, '')
    .replace(/O/g, '0')
    .replace(/[IL]/g, '1');
  const m = /^SVC([0-9A-Z]{10})$/.exec(s);
  if (!m) return null;
  const body = m[1]!;
  if ([...body].some((c) => !REF_ALPHABET.includes(c))) return null;
  return `SVC-${body.slice(0, 5)}-${body.slice(5)}`;
}

export function createWireTopups(deps: {
  sql: Sql;
  clock: Clock;
  config: Readonly<Config>;
  ledger: Ledger;
  repo: TopupsRepo;
  chargebacks: Chargebacks;
  identity: BillingIdentity;
}) {
  const { sql, clock, ledger, repo } = deps;
  const b = deps.config.billing;

  const instructions = () => ({
    bankName: b.wire_bank_name,
    accountName: b.wire_account_name,
    iban: b.wire_iban || null,
    accountNumber: b.wire_account_number || null,
    routingNumber: b.wire_routing_number || null,
    swift: b.wire_swift || null,
    bankAddress: b.wire_bank_address || null,
  });

  return {
    enabled: () => b.wire_bank_name !== '' && b.wire_account_name !== '',
    instructions,

    /** A wire top-up awaiting funds under a unique reference the customer puts on the transfer. */
    async create(accountId: string, amountRaw: string) {
      if (!b.wire_bank_name || !b.wire_account_name) throw ruleError('Wire top-ups are not enabled on this exchange');
      const amount = Money.parse(amountRaw);
      if (amount.cmp(WIRE_MIN) < 0)
        throw validationError([{ path: 'amount', message: `the minimum wire top-up is ${WIRE_MIN} USD` }]);
      const now = clock.now();
      for (let attempt = 0; ; attempt++) {
        try {
          return await repo.insert(sql, {
            id: newId(),
            accountId,
            method: 'wire',
            origin: 'customer',
            amount: amount.toString(),
            status: 'awaiting_funds',
            reference: newReference(),
            expiresAt: new Date(now.getTime() + b.wire_expiry_days * 86_400_000),
            at: now,
          });
        } catch (err) {
          // 32^10 references: a clash is rare; another try with a new reference.
          if ((err as { code?: string }).code !== '23505' || attempt >= 3) throw err;
        }
      }
    },

    /**
     * The operator saw a transfer arrive: matched by its reference (as the bank statement shows
     * it), the received amount is credited once. An expired reference is still honoured: the money came.
     */
    async confirm(input: { reference: string; amount: string; bankReference?: string | null | undefined }) {
      const reference = normalizeReference(input.reference);
      if (!reference) throw validationError([{ path: 'reference', message: 'is not a wire top-up reference' }]);
      const received = Money.parse(input.amount);
      return sql.begin(async (tx) => {
        const t = await repo.lockByReference(tx, reference);
        if (!t) throw notFound('Wire top-up');
        if (t.status === 'succeeded') throw conflict('This wire top-up was already credited');
        if (t.status !== 'awaiting_funds' && t.status !== 'expired' && t.status !== 'canceled')
          throw conflict(`The wire top-up is ${t.status}`);
        const r = await ledger.topup(
          {
            accountId: t.accountId,
            amount: received.toString(),
            source: 'wire',
            reference: input.bankReference ? `wire ${reference} (${input.bankReference})` : `wire ${reference}`,
            postingKey: `wire:${t.id}`,
          },
          tx,
        );
        await deps.chargebacks.recover(tx, t.accountId);
        return repo.markCredited(tx, t.id, {
          creditedAmount: received.toString(),
          postingId: r.postingId,
          billedTo: await deps.identity(t.accountId),
          at: clock.now(),
        });
      });
    },

    async cancel(accountId: string, id: string) {
      return sql.begin(async (tx) => {
        const t = await repo.lockById(tx, id);
        if (!t || t.accountId !== accountId) throw notFound('Top-up');
        if (t.status !== 'awaiting_funds') throw conflict(`The top-up is ${t.status}`);
        await repo.setStatus(tx, id, 'canceled', clock.now());
        return (await repo.byId(tx, accountId, id))!;
      });
    },
  };
}

export type WireTopups = ReturnType<typeof createWireTopups>;
