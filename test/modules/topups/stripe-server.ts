import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generate } from 'selfsigned';

type Teardown = { teardown(fn: () => unknown): void };
type Obj = Record<string, unknown>;

/** Stripe's form encoding (`metadata[topupId]=…`, `automatic_payment_methods[enabled]=true`) back into objects. */
function parseForm(text: string): Obj {
  const out: Obj = {};
  for (const [key, value] of new URLSearchParams(text)) {
    const path = key.replace(/\]/g, '').split('[');
    let at = out;
    for (const p of path.slice(0, -1)) at = (at[p] ??= {}) as Obj;
    at[path[path.length - 1]!] = value;
  }
  return out;
}

const id = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;

/**
 * A local HTTPS server speaking the part of Stripe's API the card flow uses (customers,
 * PaymentIntents create/cancel, payment methods), with Stripe's shapes, error envelope and
 * idempotency keys, and a sender of webhooks signed with Stripe's scheme
 * (`Stripe-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`).
 */
export async function startStripeServer(t: Teardown, webhookSecret: string) {
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }],
  });
  const dir = mkdtempSync(join(tmpdir(), 'svc-stripe-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const caFile = join(dir, 'stripe-ca.pem');
  writeFileSync(caFile, pems.cert);

  const intents = new Map<string, Obj>();
  const customers = new Map<string, Obj>();
  const byKey = new Map<string, { status: number; body: unknown }>();
  const requests: { method: string; path: string; body: Obj; auth: string | undefined; key: string | undefined }[] = [];
  /** Payment methods an off-session charge declines. */
  const declined = new Set<string>();

  const handle = (method: string, path: string, body: Obj): { status: number; body: unknown } => {
    if (method === 'POST' && path === '/v1/customers') {
      const c = { id: id('cus'), object: 'customer', email: body['email'] ?? null, metadata: body['metadata'] ?? {} };
      customers.set(c.id, c);
      return { status: 200, body: c };
    }
    if (method === 'POST' && path === '/v1/payment_intents') {
      const pi: Obj = {
        id: id('pi'),
        object: 'payment_intent',
        amount: Number(body['amount']),
        amount_received: 0,
        currency: body['currency'],
        customer: body['customer'] ?? null,
        payment_method: body['payment_method'] ?? null,
        setup_future_usage: body['setup_future_usage'] ?? null,
        metadata: body['metadata'] ?? {},
        status: 'requires_payment_method',
        last_payment_error: null,
        livemode: false,
      };
      pi['client_secret'] = `${String(pi['id'])}_secret_${randomBytes(8).toString('hex')}`;
      intents.set(String(pi['id']), pi);
      if (body['confirm'] === 'true' && body['off_session'] === 'true') {
        if (declined.has(String(pi['payment_method']))) {
          pi['status'] = 'requires_payment_method';
          pi['last_payment_error'] = { code: 'card_declined', message: 'Your card was declined.' };
          return {
            status: 402,
            body: {
              error: {
                type: 'card_error',
                code: 'card_declined',
                decline_code: 'generic_decline',
                message: 'Your card was declined.',
                payment_intent: pi,
              },
            },
          };
        }
        pi['status'] = 'succeeded';
        pi['amount_received'] = pi['amount'];
      }
      return { status: 200, body: pi };
    }
    const cancel = /^\/v1\/payment_intents\/([^/]+)\/cancel$/.exec(path);
    if (method === 'POST' && cancel) {
      const pi = intents.get(cancel[1]!);
      if (!pi) return { status: 404, body: { error: { type: 'invalid_request_error', code: 'resource_missing' } } };
      if (pi['status'] === 'succeeded' || pi['status'] === 'canceled')
        return {
          status: 400,
          body: {
            error: {
              type: 'invalid_request_error',
              code: 'payment_intent_unexpected_state',
              message: `You cannot cancel this PaymentIntent because it has a status of ${String(pi['status'])}.`,
            },
          },
        };
      pi['status'] = 'canceled';
      return { status: 200, body: pi };
    }
    const pm = /^\/v1\/payment_methods\/([^/]+)$/.exec(path);
    if (method === 'GET' && pm)
      return {
        status: 200,
        body: { id: pm[1], object: 'payment_method', type: 'card', card: { brand: 'visa', last4: '4242' } },
      };
    return { status: 404, body: { error: { type: 'invalid_request_error', message: `no route ${method} ${path}` } } };
  };

  const server = createServer(
    { key: pems.private, cert: pems.cert },
    async (req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const body = parseForm(Buffer.concat(chunks).toString());
      const path = (req.url ?? '').split('?')[0]!;
      const key = req.headers['idempotency-key'] as string | undefined;
      requests.push({ method: req.method ?? '', path, body, auth: req.headers.authorization, key });
      const stored = key && req.method === 'POST' ? byKey.get(key) : undefined;
      const out = stored ?? handle(req.method ?? '', path, body);
      if (key && req.method === 'POST') byKey.set(key, out);
      res
        .writeHead(out.status, { 'content-type': 'application/json', 'request-id': id('req') })
        .end(JSON.stringify(out.body));
    },
  );
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });

  const sign = (payload: string, secret = webhookSecret, ts = Math.floor(Date.now() / 1000)) =>
    `t=${ts},v1=${createHmac('sha256', secret).update(`${ts}.${payload}`).digest('hex')}`;

  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    caFile,
    intents,
    requests,
    declined,
    sign,
    /** What Stripe.js does in the browser: the card is confirmed and the payment succeeds. */
    confirm(intentId: string, paymentMethod = 'pm_card_visa') {
      const pi = intents.get(intentId)!;
      Object.assign(pi, { status: 'succeeded', amount_received: pi['amount'], payment_method: paymentMethod });
      return pi;
    },
    fail(intentId: string) {
      const pi = intents.get(intentId)!;
      Object.assign(pi, {
        status: 'requires_payment_method',
        last_payment_error: { code: 'card_declined', message: 'Your card has insufficient funds.' },
      });
      return pi;
    },
    /** An event as Stripe sends it: its raw body and the signature header for it. */
    event(type: string, object: Obj, eventId = id('evt')) {
      const payload = JSON.stringify({
        id: eventId,
        object: 'event',
        api_version: '2025-01-01',
        created: Math.floor(Date.now() / 1000),
        type,
        livemode: false,
        pending_webhooks: 1,
        data: { object },
      });
      return { id: eventId, payload, signature: sign(payload) };
    },
  };
}
