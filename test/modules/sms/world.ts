/** An SMS trading world: the app on a fresh database, a Net::SMPP supplier SMSC, a seller's SMS route bought by a funded buyer. */
import { randomUUID } from 'node:crypto';
import type { Test } from 'tap';
import { bearer, buildTestApp, type TestApp } from '../../helpers/app.js';
import { startPerlSmsc, type PerlSmsc } from '../../messaging/perl-smsc.js';
import type { Clock } from '../../../src/platform/clock.js';

export interface SmsWorld {
  h: TestApp;
  smsc: PerlSmsc;
  routeId: string;
  buyer: { accountId: string; session: string };
  /** The route's seller. */
  seller: { accountId: string; session: string };
  api(method: string, url: string, token: string, payload?: unknown): Promise<{ status: number; body: any }>; // eslint-disable-line @typescript-eslint/no-explicit-any
  balance(accountId: string): Promise<{ balance: string; held: string; testCredit: string }>;
  /** A new seller's SMS route to an SMSC on `port`, rated by `csv` (prefix,destination,rate…); not bought. */
  smsRoute(o: {
    name: string;
    port: number;
    systemId: string;
    password: string;
    csv: string;
  }): Promise<{ routeId: string; sellerSession: string; seller: { accountId: string; session: string } }>;
}

/** Rates: prefix 1 at 0.010000, prefix 44 at 0.030000 (0.020000 on 234-15); the platform adds 0.000500 a segment. */
export async function createSmsWorld(t: Test, opts: { clock?: Clock; fund?: string } = {}): Promise<SmsWorld> {
  const smsc = await startPerlSmsc('sup1', 'pw1');
  t.teardown(() => smsc.stop());
  const h = await buildTestApp(t, opts.clock ? { clock: opts.clock } : {});
  // buildTestApp does not run module stop(): the supplier binds are closed here.
  t.teardown(() => h.services.sms.stop());
  const api: SmsWorld['api'] = async (method, url, token, payload) => {
    const r = await h.app.inject({
      method: method as 'GET',
      url: `/api/v1${url}`,
      headers: { ...bearer(token), ...(method === 'POST' ? { 'x-idempotency-key': randomUUID() } : {}) },
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
    return { status: r.statusCode, body: r.json() };
  };
  const smsRoute: SmsWorld['smsRoute'] = async (o) => {
    const seller = await h.signUp();
    const created = await api('POST', '/routes', seller.session, {
      type: 'sms',
      name: o.name,
      smsDelivery: { kind: 'smpp', host: '127.0.0.1', port: o.port, systemId: o.systemId, password: o.password },
    });
    if (created.status !== 201) throw new Error(`route: ${JSON.stringify(created.body)}`);
    const id = created.body.data.id as string;
    const rates = await api('POST', `/routes/${id}/rates`, seller.session, { format: 'csv', csv: o.csv });
    if (rates.status !== 200) throw new Error(`rates: ${JSON.stringify(rates.body)}`);
    return { routeId: id, sellerSession: seller.session, seller };
  };
  const buyer = await h.signUp();
  const { routeId, seller } = await smsRoute({
    name: 'Test SMSC',
    port: smsc.port,
    systemId: 'sup1',
    password: 'pw1',
    csv: 'prefix,destination,rate,mcc_mnc\n1,US test,0.010\n44,UK,0.030\n44,UK Voda,0.020,234-15\n',
  });
  const bought = await api('POST', '/purchases', buyer.session, { routeId });
  if (bought.status !== 201) throw new Error(`purchase: ${JSON.stringify(bought.body)}`);
  if (opts.fund !== '0') {
    await h.services.ledger.topup({
      accountId: buyer.accountId,
      amount: opts.fund ?? '10.000000',
      source: 'card',
      postingKey: `fund-${buyer.accountId}`,
    });
  }
  return {
    h,
    smsc,
    routeId,
    buyer,
    seller,
    api,
    balance: (id) => h.services.ledger.balanceOf(id),
    smsRoute,
  };
}

/**
 * Polls until `fn` returns a truthy value (receipts arrive on the bind after the send returned).
 * 20 s by default: a wait for what must happen, not a speed check; on a loaded 2-core machine a
 * child daemon's first call can take more than 5 s.
 */
export async function eventually<T>(fn: () => Promise<T | null | undefined | false>, ms = 20_000): Promise<T> {
  const start = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() - start > ms) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
