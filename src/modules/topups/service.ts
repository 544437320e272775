import type { Logger } from 'pino';
import type { Config } from '../../config/schema.js';
import type { Sql } from '../../db/connection.js';
import { AppError, notFound, ruleError, serviceUnavailable, validationError } from '../../http/errors.js';
import type { Ledger, TopupSource } from '../../ledger/ledger.js';
import { Money, MoneyError } from '../../ledger/money.js';
import type { Clock } from '../../platform/clock.js';
import { newId, randomToken, sha256Hex } from '../../platform/ids.js';
import type { BillingIdentity } from './card.js';
import type { Chargebacks } from './chargebacks.js';
import type { TopupsRepo } from './repo.js';

/** x402 `PaymentRequirements` (protocol version 1, scheme "exact"). */
export interface X402Requirements {
  scheme: 'exact';
  network: string;
  maxAmountRequired: string;
  resource: string;
  description: string;
  mimeType: string;
  payTo: string;
  maxTimeoutSeconds: number;
  asset: string;
  extra: Record<string, unknown>;
}

export type X402Outcome =
  | { kind: 'payment_required'; body: { x402Version: 1; error: string; accepts: X402Requirements[] } }
  | {
      kind: 'credited';
      paymentResponse: string;
      data: {
        amount: string;
        balance: string;
        transactionId: string;
        network: string;
        transaction: string | null;
        payer: string | null;
        replayed: boolean;
      };
    };

// USDC and the like carry 6 decimals: atomic units are the 6-place amount without its point.
const toAtomic = (m: Money) =>
  m
    .toString()
    .replace('.', '')
    .replace(/^0+(?=\d)/, '');

export function createTopupsService(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  config: Readonly<Config>;
  ledger: Ledger;
  repo: TopupsRepo;
  chargebacks: Chargebacks;
  identity: BillingIdentity;
}) {
  const { sql, ledger, clock, config, repo } = deps;

  /** A credit made elsewhere (operator, x402) joins the top-up history, with its receipt. */
  async function recordCredited(
    db: Parameters<TopupsRepo['insert']>[0],
    t: { accountId: string; method: 'card' | 'wire' | 'crypto' | 'x402'; origin: 'customer' | 'operator' },
    r: { postingId: string; amount: string; reference: string | null },
  ) {
    await deps.chargebacks.recover(db, t.accountId);
    const at = clock.now();
    const row = await repo.insert(db, {
      id: newId(),
      accountId: t.accountId,
      method: t.method,
      origin: t.origin,
      amount: r.amount,
      status: 'pending',
      at,
    });
    await repo.markCredited(db, row.id, {
      creditedAmount: r.amount,
      postingId: r.postingId,
      billedTo: await deps.identity(t.accountId),
      at,
    });
  }
  const b = config.billing;

  function parseAmount(raw: string, field = 'amount'): Money {
    try {
      return Money.parse(raw);
    } catch (err) {
      if (err instanceof MoneyError)
        throw new AppError('VALIDATION_ERROR', 'Request validation failed', [
          { path: field, message: 'must be an amount with at most 6 decimals' },
        ]);
      throw err;
    }
  }

  async function facilitator(path: 'verify' | 'settle', body: unknown): Promise<Record<string, unknown>> {
    let res: Response;
    try {
      res = await fetch(
        new URL(path, b.x402_facilitator_url.endsWith('/') ? b.x402_facilitator_url : b.x402_facilitator_url + '/'),
        {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(15_000),
        },
      );
    } catch (err) {
      deps.log.warn({ err, path }, 'x402 facilitator unreachable');
      throw serviceUnavailable('The x402 facilitator cannot be reached; retry later');
    }
    const text = await res.text();
    try {
      return JSON.parse(text) as Record<string, unknown>;
    } catch {
      deps.log.warn({ status: res.status, path }, 'x402 facilitator answered without JSON');
      throw serviceUnavailable('The x402 facilitator answered unexpectedly; retry later');
    }
  }

  const service = {
    /** Records a top-up (svcctl topup: the operator's wire transfers; card and crypto processors). Idempotent by postingKey. */
    async topup(input: {
      accountId: string;
      amount: string;
      source: TopupSource;
      reference?: string | null;
      postingKey: string;
    }) {
      const r = await sql.begin(async (tx) => {
        const r = await ledger.topup(input, tx);
        if (!r.replayed)
          await recordCredited(
            tx,
            { accountId: input.accountId, method: input.source, origin: 'operator' },
            { postingId: r.postingId, amount: r.amount ?? input.amount, reference: input.reference ?? null },
          );
        return r;
      });
      return {
        transactionId: r.postingId,
        accountId: input.accountId,
        amount: r.amount ?? input.amount,
        balance: r.balanceAfter ?? null,
        source: input.source,
        replayed: r.replayed,
      };
    },

    /** Creates an invite code granting test credit (svcctl). */
    async createInviteCode(input: {
      amount: string;
      maxRedemptions?: number;
      expiresAt?: Date | null;
      code?: string;
      note?: string | null;
    }) {
      const amount = parseAmount(input.amount);
      if (!amount.isPositive()) throw ruleError('Invite code amount must be greater than zero');
      const code = input.code ?? `INV-${randomToken(12)}`;
      const [row] = await sql<{ code: string; amount: string; maxRedemptions: number; expiresAt: Date | null }[]>`
        insert into invite_codes (code, amount, max_redemptions, expires_at, note)
        values (${code}, ${amount.toString()}::numeric, ${input.maxRedemptions ?? 1}, ${input.expiresAt ?? null}, ${input.note ?? null})
        returning code, amount::text, max_redemptions, expires_at`;
      return { ...row!, amount: Money.parse(row!.amount).toString(), expiresAt: row!.expiresAt?.toISOString() ?? null };
    },

    /** Redeems an invite code once per account: test credit through the ledger. */
    async redeemInviteCode(accountId: string, code: string) {
      return sql.begin(async (tx) => {
        const [inv] = await tx<
          { code: string; amount: string; maxRedemptions: number; redemptions: number; expiresAt: Date | null }[]
        >`
          select code, amount::text, max_redemptions, redemptions, expires_at from invite_codes where code = ${code} for update`;
        if (!inv) throw notFound('Invite code');
        const [prior] = await tx`select 1 from invite_redemptions where code = ${code} and account_id = ${accountId}`;
        if (prior) throw ruleError('This invite code was already redeemed by this account');
        if (inv.expiresAt && inv.expiresAt <= clock.now()) throw ruleError('This invite code has expired');
        if (inv.redemptions >= inv.maxRedemptions) throw ruleError('This invite code has been used up');
        const r = await ledger.grantTestCredit(
          {
            postingKey: `invite:${code}:${accountId}`,
            accountId,
            amount: inv.amount,
            reference: `invite code ${code}`,
          },
          tx,
        );
        await tx`update invite_codes set redemptions = redemptions + 1 where code = ${code}`;
        await tx`insert into invite_redemptions (code, account_id, posting_id) values (${code}, ${accountId}, ${r.postingId})`;
        const bal = await ledger.balanceOf(accountId, tx);
        return {
          code,
          amount: Money.parse(inv.amount).toString(),
          testCredit: bal.testCredit,
          transactionId: r.postingId,
        };
      });
    },

    /**
     * x402 (https://x402.org, version 1): without `X-PAYMENT` the answer is 402 with the payment
     * requirements; with it, the payment is verified and settled through the facilitator, then
     * credited once per payment.
     */
    async x402(
      accountId: string,
      input: { amount: string; resource: string; paymentHeader: string | undefined },
    ): Promise<X402Outcome> {
      if (!b.x402_facilitator_url || !b.x402_pay_to) throw ruleError('x402 top-ups are not enabled on this exchange');
      const amount = parseAmount(input.amount);
      if (amount.cmp(b.x402_min_amount) < 0 || amount.cmp(b.x402_max_amount) > 0) {
        throw validationError([
          {
            path: 'amount',
            message: `x402 top-ups are between ${Money.parse(b.x402_min_amount).toString()} and ${Money.parse(b.x402_max_amount).toString()} USD`,
          },
        ]);
      }
      const requirements: X402Requirements = {
        scheme: 'exact',
        network: b.x402_network,
        maxAmountRequired: toAtomic(amount),
        resource: input.resource,
        description: `svc-exchange balance top-up of ${amount.toString()} USD`,
        mimeType: 'application/json',
        payTo: b.x402_pay_to,
        maxTimeoutSeconds: 300,
        asset: b.x402_asset,
        extra: { name: 'USD Coin', version: '2' },
      };
      const required = (error: string): X402Outcome => ({
        kind: 'payment_required',
        body: { x402Version: 1, error, accepts: [requirements] },
      });
      if (!input.paymentHeader) return required('X-PAYMENT header is required');

      let payload: Record<string, unknown>;
      try {
        payload = JSON.parse(Buffer.from(input.paymentHeader, 'base64').toString('utf8')) as Record<string, unknown>;
        if (typeof payload !== 'object' || payload === null || typeof payload['payload'] !== 'object')
          throw new Error('shape');
      } catch {
        return required('X-PAYMENT is not a base64-encoded x402 payment payload');
      }
      const paymentHash = sha256Hex(input.paymentHeader);
      const credited = async (
        replayed: boolean,
        transaction: string | null,
        payer: string | null,
        postingId: string,
      ) => {
        const bal = await ledger.balanceOf(accountId);
        const settlement = { success: true, transaction, network: b.x402_network, payer };
        return {
          kind: 'credited' as const,
          paymentResponse: Buffer.from(JSON.stringify(settlement)).toString('base64'),
          data: {
            amount: amount.toString(),
            balance: bal.balance,
            transactionId: postingId,
            network: b.x402_network,
            transaction,
            payer,
            replayed,
          },
        };
      };
      const [seen] = await sql<
        { accountId: string; amount: string; transaction: string | null; payer: string | null; postingId: string }[]
      >`
        select account_id, amount::text, transaction, payer, posting_id from x402_payments where payment_hash = ${paymentHash}`;
      if (seen) {
        if (seen.accountId !== accountId || Money.parse(seen.amount).cmp(amount) !== 0)
          return required('This payment was already used');
        return credited(true, seen.transaction, seen.payer, seen.postingId);
      }

      const request = { x402Version: 1, paymentPayload: payload, paymentRequirements: requirements };
      const verified = await facilitator('verify', request);
      if (verified['isValid'] !== true) return required(String(verified['invalidReason'] ?? 'payment is not valid'));
      const settled = await facilitator('settle', request);
      if (settled['success'] !== true)
        return required(String(settled['errorReason'] ?? 'payment could not be settled'));
      const transaction = typeof settled['transaction'] === 'string' ? settled['transaction'] : null;
      const payer =
        typeof settled['payer'] === 'string'
          ? settled['payer']
          : typeof verified['payer'] === 'string'
            ? verified['payer']
            : null;
      const postingId = await sql.begin(async (tx) => {
        const r = await ledger.topup(
          {
            accountId,
            amount: amount.toString(),
            source: 'x402',
            reference: transaction ? `x402 ${transaction}` : 'x402',
            postingKey: `x402:${paymentHash}`,
          },
          tx,
        );
        await tx`
          insert into x402_payments (payment_hash, account_id, amount, network, payer, transaction, posting_id)
          values (${paymentHash}, ${accountId}, ${amount.toString()}::numeric, ${b.x402_network}, ${payer}, ${transaction}, ${r.postingId})
          on conflict (payment_hash) do nothing`;
        if (!r.replayed)
          await recordCredited(
            tx,
            { accountId, method: 'x402', origin: 'customer' },
            { postingId: r.postingId, amount: amount.toString(), reference: transaction },
          );
        return r.postingId;
      });
      deps.log.info({ accountId, amount: amount.toString(), network: b.x402_network }, 'x402 top-up credited');
      return credited(false, transaction, payer, postingId);
    },
  };
  return service;
}

export type TopupsService = ReturnType<typeof createTopupsService>;
