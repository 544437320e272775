import { readFileSync } from 'node:fs';
import { Agent } from 'node:https';
import type Stripe from 'stripe';
import type { Config } from '../../config/schema.js';

export type StripeEvent = Stripe.Event;
export type StripePaymentIntent = Stripe.PaymentIntent;
export type StripeDispute = Stripe.Dispute;

export interface IntentInput {
  amountCents: number;
  topupId: string;
  accountId: string;
  /** Stripe's own idempotency: a retried create never makes a second intent. */
  idempotencyKey: string;
  customer?: string | null;
  paymentMethod?: string | null;
  /** Keep the card on the customer for auto-recharge. */
  save?: boolean;
  /** Charge a saved card now, the customer absent (auto-recharge). */
  offSession?: boolean;
}

/** What the card flow needs of Stripe, so a test or another processor can stand in. */
export interface CardGateway {
  createCustomer(accountId: string, email: string | null): Promise<string>;
  createIntent(input: IntentInput): Promise<StripePaymentIntent>;
  cancelIntent(id: string): Promise<StripePaymentIntent>;
  /** Brand and last 4 digits of a card payment method; null when it is not a card. */
  card(paymentMethodId: string): Promise<{ brand: string; last4: string } | null>;
  /** Checks Stripe's signature header on the raw body; throws when it does not match or is stale. */
  verifyEvent(rawBody: string, signature: string, nowMs: number): StripeEvent;
}

/**
 * The Stripe gateway from `[billing] stripe_*`; null when cards are not enabled. Stripe's client is
 * loaded only then: its import (the largest package the daemon has) cost every daemon start CPU.
 */
export async function createStripeGateway(b: Readonly<Config['billing']>): Promise<CardGateway | null> {
  if (!b.stripe_secret_key) return null;
  const { default: StripeClient } = await import('stripe');
  const url = new URL(b.stripe_api_url);
  const stripe = new StripeClient(b.stripe_secret_key, {
    host: url.hostname,
    port: url.port || (url.protocol === 'http:' ? 80 : 443),
    protocol: url.protocol === 'http:' ? 'http' : 'https',
    maxNetworkRetries: 2,
    timeout: 20_000,
    ...(b.stripe_ca_file ? { httpAgent: new Agent({ keepAlive: true, ca: readFileSync(b.stripe_ca_file) }) } : {}),
  });
  return {
    async createCustomer(accountId, email) {
      const c = await stripe.customers.create(
        { ...(email ? { email } : {}), metadata: { accountId } },
        { idempotencyKey: `customer:${accountId}` },
      );
      return c.id;
    },
    createIntent(i) {
      return stripe.paymentIntents.create(
        {
          amount: i.amountCents,
          currency: 'usd',
          metadata: { topupId: i.topupId, accountId: i.accountId },
          description: 'Balance top-up',
          ...(i.customer ? { customer: i.customer } : {}),
          ...(i.paymentMethod ? { payment_method: i.paymentMethod } : {}),
          ...(i.offSession
            ? { confirm: true, off_session: true }
            : {
                automatic_payment_methods: { enabled: true, allow_redirects: 'never' },
                ...(i.save ? { setup_future_usage: 'off_session' } : {}),
              }),
        },
        { idempotencyKey: i.idempotencyKey },
      );
    },
    cancelIntent: (id) => stripe.paymentIntents.cancel(id),
    async card(id) {
      const pm = await stripe.paymentMethods.retrieve(id);
      return pm.card ? { brand: pm.card.brand, last4: pm.card.last4 } : null;
    },
    verifyEvent(rawBody, signature, nowMs) {
      if (!b.stripe_webhook_secret) throw new Error('no Stripe webhook secret configured');
      return stripe.webhooks.constructEvent(rawBody, signature, b.stripe_webhook_secret, 300, undefined, nowMs);
    },
  };
}
