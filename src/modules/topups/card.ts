import type { Logger } from 'pino';
import type { Config } from '../../config/schema.js';
import type { Db, Sql } from '../../db/connection.js';
import { conflict, notFound, ruleError, serviceUnavailable, unauthorized, validationError } from '../../http/errors.js';
import type { Ledger } from '../../ledger/ledger.js';
import { Money } from '../../ledger/money.js';
import type { Clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import { emit } from '../../webhooks/emit.js';
import type { Chargebacks } from './chargebacks.js';
import type { CardGateway, StripeDispute, StripeEvent, StripePaymentIntent } from './stripe-gateway.js';
import type { TopupRow, TopupsRepo } from './repo.js';

/** The account's identity as a receipt shows it, read when a top-up is credited and frozen there. */
export type BillingIdentity = (accountId: string) => Promise<Record<string, unknown>>;

export const CARD_MIN = '5.00';

/** Stripe counts US dollars in cents; our amounts are decimal strings. */
export const toCents = (m: Money) => Number(m.times('100').toString().split('.')[0]);
export const fromCents = (cents: number) => Money.parse((cents / 100).toFixed(2)).toString();

export interface CardDeps {
  sql: Sql;
  clock: Clock;
  log: Logger;
  config: Readonly<Config>;
  ledger: Ledger;
  repo: TopupsRepo;
  chargebacks: Chargebacks;
  gateway: CardGateway | null;
  identity: BillingIdentity;
  email: (accountId: string) => Promise<string | null>;
}

/** Card top-ups: a PaymentIntent per top-up, credited only when Stripe's signed webhook says it succeeded. */
export function createCardTopups(deps: CardDeps) {
  const { sql, clock, ledger, repo, log } = deps;
  const b = deps.config.billing;

  function gateway(): CardGateway {
    if (!deps.gateway) throw ruleError('Card top-ups are not enabled on this exchange');
    return deps.gateway;
  }

  function cardAmount(raw: string): Money {
    const amount = Money.parse(raw);
    if (amount.cmp(CARD_MIN) < 0 || amount.cmp(b.card_max_amount) > 0)
      throw validationError([
        { path: 'amount', message: `card top-ups are between ${CARD_MIN} and ${Money.parse(b.card_max_amount)} USD` },
      ]);
    return amount;
  }

  /** Stripe failures reach the client as 503 (retry) unless the card itself was refused. */
  function stripeFailure(err: unknown, what: string): never {
    const e = err as { type?: string; message?: string; statusCode?: number };
    if (e.type === 'StripeCardError') throw ruleError(`The card was declined: ${e.message ?? 'declined'}`);
    if (e.type === 'StripeInvalidRequestError' && e.statusCode === 400)
      throw ruleError(`The card processor refused the request: ${e.message ?? 'invalid request'}`);
    log.warn({ err, what }, 'card processor request failed');
    throw serviceUnavailable('The card processor cannot be reached; retry later');
  }

  async function customerFor(accountId: string): Promise<string> {
    const saved = await repo.savedCard(sql, accountId);
    if (saved) return saved.customerId;
    let id: string;
    try {
      id = await gateway().createCustomer(accountId, await deps.email(accountId));
    } catch (err) {
      stripeFailure(err, 'customer');
    }
    await repo.saveCustomer(accountId, id, clock.now());
    return (await repo.savedCard(sql, accountId))!.customerId;
  }

  /** Credits a succeeded intent once: the ledger's posting key is the intent. In the caller's transaction. */
  async function credit(tx: Db, t: TopupRow, pi: StripePaymentIntent, card: { brand: string; last4: string } | null) {
    if (t.status === 'succeeded' || t.status === 'disputed' || t.status === 'charged_back') return t;
    const amount = fromCents(pi.amount_received || pi.amount);
    const r = await ledger.topup(
      {
        accountId: t.accountId,
        amount,
        source: 'card',
        reference: card ? `card ${card.brand} ${card.last4}` : 'card top-up',
        postingKey: `card:${pi.id}`,
      },
      tx,
    );
    await deps.chargebacks.recover(tx, t.accountId);
    const now = clock.now();
    const row = await repo.markCredited(tx, t.id, {
      creditedAmount: amount,
      postingId: r.postingId,
      billedTo: await deps.identity(t.accountId),
      card,
      at: now,
    });
    const pm = typeof pi.payment_method === 'string' ? pi.payment_method : (pi.payment_method?.id ?? null);
    if (pm && pi.setup_future_usage === 'off_session') await repo.saveCard(tx, t.accountId, pm, card, now);
    return row;
  }

  async function cardOf(pi: StripePaymentIntent) {
    const pm = typeof pi.payment_method === 'string' ? pi.payment_method : (pi.payment_method?.id ?? null);
    if (!pm) return null;
    try {
      return await gateway().card(pm);
    } catch (err) {
      // The receipt then shows no card digits; the credit itself must not wait on this.
      log.warn({ err }, 'card details not readable');
      return null;
    }
  }

  async function fail(tx: Db, t: TopupRow, status: 'failed' | 'canceled', reason: string | null) {
    if (t.status !== 'pending') return;
    await repo.setStatus(tx, t.id, status, clock.now(), reason);
    if (t.origin === 'auto') await repo.autoFailed(tx, t.accountId, reason ?? status);
    if (status === 'failed')
      await emit(tx, {
        accountId: t.accountId,
        event: t.origin === 'auto' ? 'auto_recharge.failed' : 'topup.failed',
        data: { topupId: t.id, amount: Money.parse(t.amount).toString(), method: 'card', reason },
        at: clock.now(),
      });
  }

  async function onDispute(tx: Db, d: StripeDispute, closed: boolean) {
    const intent = typeof d.payment_intent === 'string' ? d.payment_intent : (d.payment_intent?.id ?? null);
    if (!intent) return;
    const t = await repo.lockByIntent(tx, intent);
    if (!t || !t.postingId) return;
    const amount = fromCents(d.amount);
    const at = clock.now();
    if (!closed) {
      const r = await deps.chargebacks.open(tx, t, d.id, amount);
      await emit(tx, {
        accountId: t.accountId,
        event: 'topup.chargeback',
        data: {
          topupId: t.id,
          amount,
          taken: r.amount,
          outstanding: r.outstanding,
          reason: d.reason,
          balance: r.balanceAfter,
        },
        at,
      });
    } else if (d.status === 'won') {
      const r = await deps.chargebacks.won(tx, t, d.id, amount);
      await emit(tx, {
        accountId: t.accountId,
        event: 'topup.chargeback_reversed',
        data: { topupId: t.id, amount, returned: r.returned, ...(r.balanceAfter ? { balance: r.balanceAfter } : {}) },
        at,
      });
    } else if (d.status === 'lost') {
      await repo.setStatus(tx, t.id, 'charged_back', at);
    }
  }

  return {
    enabled: () => deps.gateway !== null,

    /** Starts a card top-up: the client confirms the returned `clientSecret` with Stripe.js. */
    async create(accountId: string, input: { amount: string; saveCard?: boolean | undefined }) {
      const amount = cardAmount(input.amount);
      const g = gateway();
      const id = newId();
      const now = clock.now();
      await repo.insert(sql, {
        id,
        accountId,
        method: 'card',
        origin: 'customer',
        amount: amount.toString(),
        status: 'pending',
        at: now,
      });
      const customer = input.saveCard ? await customerFor(accountId) : null;
      let pi: StripePaymentIntent;
      try {
        pi = await g.createIntent({
          amountCents: toCents(amount),
          topupId: id,
          accountId,
          idempotencyKey: `topup:${id}`,
          customer,
          save: input.saveCard === true,
        });
      } catch (err) {
        await repo.setStatus(sql, id, 'failed', clock.now(), 'the card processor could not start the payment');
        stripeFailure(err, 'payment intent');
      }
      await repo.setIntent(sql, id, pi.id, pi.client_secret, clock.now());
      return (await repo.byId(sql, accountId, id))!;
    },

    /** Charges the saved card off-session (auto-recharge); credits at once when Stripe says succeeded. */
    async chargeSaved(accountId: string, amount: string, customer: string, paymentMethod: string) {
      const g = gateway();
      const id = newId();
      await repo.insert(sql, {
        id,
        accountId,
        method: 'card',
        origin: 'auto',
        amount,
        status: 'pending',
        at: clock.now(),
      });
      let pi: StripePaymentIntent;
      try {
        pi = await g.createIntent({
          amountCents: toCents(Money.parse(amount)),
          topupId: id,
          accountId,
          idempotencyKey: `topup:${id}`,
          customer,
          paymentMethod,
          offSession: true,
        });
      } catch (err) {
        const e = err as { message?: string; raw?: { payment_intent?: { id?: string } } };
        const intent = e.raw?.payment_intent?.id;
        await sql.begin(async (tx) => {
          if (intent) await repo.setIntent(tx, id, intent, null, clock.now());
          const t = (await repo.lockById(tx, id))!;
          await fail(tx, t, 'failed', e.message ?? 'the card was refused');
        });
        return (await repo.byId(sql, accountId, id))!;
      }
      await repo.setIntent(sql, id, pi.id, null, clock.now());
      if (pi.status === 'succeeded') {
        const card = await cardOf(pi);
        await sql.begin(async (tx) => credit(tx, (await repo.lockById(tx, id))!, pi, card));
      }
      return (await repo.byId(sql, accountId, id))!;
    },

    async cancel(t: TopupRow) {
      if (t.stripePaymentIntent) {
        try {
          await gateway().cancelIntent(t.stripePaymentIntent);
        } catch (err) {
          const e = err as { code?: string };
          // Already succeeded or canceled at Stripe: the webhook carries the truth, not this call.
          if (e.code === 'payment_intent_unexpected_state')
            throw conflict('The payment has already been completed or canceled');
          stripeFailure(err, 'cancel');
        }
      }
      return sql.begin(async (tx) => {
        const row = await repo.lockById(tx, t.id);
        if (!row || row.status !== 'pending') throw conflict(`The top-up is ${row?.status ?? 'gone'}`);
        await fail(tx, row, 'canceled', null);
        return (await repo.byId(tx, t.accountId, t.id))!;
      });
    },

    /** Stripe's webhook: verified on the raw body, each event applied once, in one transaction. */
    async webhook(rawBody: string, signature: string | undefined): Promise<{ type: string; applied: boolean }> {
      if (!deps.gateway || !b.stripe_webhook_secret) throw notFound('Route');
      let event: StripeEvent;
      try {
        if (!signature) throw new Error('no signature');
        event = deps.gateway.verifyEvent(rawBody, signature, clock.now().getTime());
      } catch {
        throw unauthorized('Invalid Stripe signature');
      }
      const obj = event.data.object as unknown;
      // Card details are read before the transaction: no row lock waits on Stripe.
      const card = event.type === 'payment_intent.succeeded' ? await cardOf(obj as StripePaymentIntent) : null;
      const applied = await sql.begin(async (tx) => {
        if (!(await repo.claimEvent(tx, event.id, event.type, clock.now()))) return false;
        switch (event.type) {
          case 'payment_intent.succeeded':
          case 'payment_intent.payment_failed':
          case 'payment_intent.canceled': {
            const pi = obj as StripePaymentIntent;
            const t = pi.metadata?.['topupId']
              ? await repo.lockById(tx, pi.metadata['topupId'])
              : await repo.lockByIntent(tx, pi.id);
            if (!t) return false;
            if (!t.stripePaymentIntent) await repo.setIntent(tx, t.id, pi.id, null, clock.now());
            if (event.type === 'payment_intent.succeeded') await credit(tx, t, pi, card);
            else
              await fail(
                tx,
                t,
                event.type === 'payment_intent.canceled' ? 'canceled' : 'failed',
                pi.last_payment_error?.message ?? null,
              );
            return true;
          }
          case 'charge.dispute.created':
            await onDispute(tx, obj as StripeDispute, false);
            return true;
          case 'charge.dispute.closed':
            await onDispute(tx, obj as StripeDispute, true);
            return true;
          default:
            return false;
        }
      });
      if (applied) log.info({ type: event.type, eventId: event.id }, 'stripe event applied');
      return { type: event.type, applied };
    },
  };
}

export type CardTopups = ReturnType<typeof createCardTopups>;
