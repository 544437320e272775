/** A trading world on a whole test daemon: a seller, an operator that buys, sub-accounts, sipp peers. */
import { randomUUID } from 'node:crypto';
import dgram from 'node:dgram';
import type { Lookup } from '../../../src/platform/outbound-guard.js';
import { startTestDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { fill, fixture, sipp, type SippRun } from '../../telephony/sip/sipp.js';

export interface Tt {
  teardown(fn: () => void | Promise<void>): void;
  equal(found: unknown, wanted: unknown, message: string, extra: { diagnostic?: boolean; output?: string }): boolean;
}

export interface Party {
  accountId: string;
  token: string;
}

export interface World {
  d: TestDaemon;
  seller: Party;
  operator: Party;
  sipPort: number;
  api(
    method: string,
    url: string,
    token: string,
    payload?: unknown,
  ): Promise<{ status: number; body: any; text: string }>; // eslint-disable-line @typescript-eslint/no-explicit-any
  signUp(): Promise<Party>;
  /** A voice route of the seller reaching `port`, rated for `prefix`, bought by the operator; returns route and purchase ids. */
  route(o: {
    port: number;
    prefix: string;
    rate: string;
    increment?: string;
    capacity?: number;
    techPrefix?: string;
    transport?: 'udp' | 'tcp' | 'tls';
    /** The endpoint's host (default 127.0.0.1). */
    host?: string;
    mediaMode?: 'direct' | 'proxy';
  }): Promise<{ routeId: string; purchaseId: string }>;
  sub(o?: {
    markupPct?: string;
    maxConcurrentCalls?: number;
    dailySpendCap?: string;
    fund?: string;
  }): Promise<{ id: string; sipUsername: string; sipPassword: string }>;
}

export async function createWorld(
  t: Tt,
  overrides: Record<string, unknown> = {},
  opts: { lookup?: Lookup } = {},
): Promise<World> {
  // routeRequirement is not wired into buildMoneyModules yet (src/modules/index.ts): sub-accounts are made without the check.
  const d = await startTestDaemon(t, { billing: { require_route_for_sub_accounts: false }, ...overrides }, opts);
  const sipPort = d.ports['sip'];
  if (!sipPort) throw new Error('the daemon has no SIP port');
  const api: World['api'] = async (method, url, token, payload) => {
    const r = await d.app.inject({
      method: method as 'GET',
      url: `/api/v1${url}`,
      headers: { authorization: `Bearer ${token}`, ...(method === 'POST' ? { 'idempotency-key': randomUUID() } : {}) },
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
    let body: unknown;
    try {
      body = r.json();
    } catch {
      body = null; // CSV and empty bodies
    }
    return { status: r.statusCode, body, text: r.body };
  };
  const accounts = d.modules.services.accounts;
  const signUp = async (): Promise<Party> => {
    const email = `${randomUUID()}@calls.test`;
    const password = 'correct horse battery staple 42';
    const acc = await accounts.createAccount({ email, password });
    const { accessToken } = await accounts.login(email, password, {});
    return { accountId: acc.id, token: accessToken };
  };
  const seller = await signUp();
  const operator = await signUp();
  await d.modules.services.ledger.topup({
    accountId: operator.accountId,
    amount: '500.000000',
    source: 'wire',
    postingKey: `fund-${operator.accountId}`,
  });

  const route: World['route'] = async (o) => {
    const created = await api('POST', '/routes', seller.token, {
      type: 'voice',
      name: `route ${o.prefix} ${o.port}`,
      country: 'GB',
      billingIncrement: o.increment ?? '6/6',
      ...(o.capacity ? { capacity: o.capacity } : {}),
      ...(o.mediaMode ? { mediaMode: o.mediaMode } : {}),
      endpoints: [
        {
          host: o.host ?? '127.0.0.1',
          port: o.port,
          transport: o.transport ?? 'udp',
          priority: 1,
          ...(o.techPrefix ? { techPrefix: o.techPrefix } : {}),
        },
      ],
    });
    if (created.status !== 201) throw new Error(`route: ${created.text}`);
    const routeId = created.body.data.id as string;
    const sheet = await api('POST', `/routes/${routeId}/rates`, seller.token, {
      format: 'csv',
      csv: `prefix,destination,rate,increment\n${o.prefix},UK test,${o.rate},${o.increment ?? '6/6'}\n`,
    });
    if (sheet.status !== 200) throw new Error(`rates: ${sheet.text}`);
    const bought = await api('POST', '/purchases', operator.token, { routeId });
    if (bought.status !== 201) throw new Error(`purchase: ${bought.text}`);
    return { routeId, purchaseId: bought.body.data.id as string };
  };

  const sub: World['sub'] = async (o = {}) => {
    const app = d.modules.services.application;
    const s = await app.create(operator.accountId, {
      label: `sub ${randomUUID().slice(0, 8)}`,
      ...(o.markupPct !== undefined ? { markupPct: o.markupPct } : {}),
      ...(o.maxConcurrentCalls !== undefined ? { maxConcurrentCalls: o.maxConcurrentCalls } : {}),
      ...(o.dailySpendCap !== undefined ? { dailySpendCap: o.dailySpendCap } : {}),
    });
    if (o.fund) await app.credit(operator.accountId, s.id, { amount: o.fund }, `fund-${s.id}`);
    return { id: s.id, sipUsername: s.sipUsername, sipPassword: s.sipPassword };
  };
  return { d, seller, operator, sipPort, api, signUp, route, sub };
}

export function uacScenario(tail: string, vars: Record<string, string> = {}, challenge = true): string {
  // Without a challenge the header line goes entirely: left blank it would end sipp's header block.
  const text = challenge ? fixture('uac-auth.xml') : fixture('uac-auth.xml').replace('      {{AUTH_HEADER}}\n', '');
  return fill(text, {
    CHALLENGE_BLOCK: challenge ? fixture('uac-challenge.block') : '',
    AUTH_HEADER: challenge ? '[authentication]' : '',
    // Each extra line ends the line it is on: an empty line would end sipp's header block.
    EXTRA_HEADERS: (vars['EXTRA_HEADERS'] ?? '')
      .split('\n')
      .filter(Boolean)
      .map((l) => `${l.trim()}\n      `)
      .join(''),
    TAIL: fill(fixture(tail), { HOLD_MS: '100', FINAL_CHECK: '.', ...vars }),
  });
}

/** A supplier that rings and answers; `ringAfterMs` sends 100 Trying and waits that long before the 180. */
export const uasAnswer = (
  t: Tt,
  expectUser: string,
  transport: 'u1' | 't1' = 'u1',
  ringAfterMs = 0,
  /** How long sipp waits for its call (sipp's form, e.g. '120s'); longer where a daemon starts first. */
  timeout?: string,
): Promise<SippRun> =>
  sipp(
    t,
    fill(fixture('uas-answer.xml'), {
      EXPECT_USER: expectUser,
      BEFORE_RING: ringAfterMs ? fill(fixture('uas-trying-pause.block'), { PAUSE_MS: String(ringAfterMs) }) : '',
    }),
    ['-t', transport],
    timeout ? { timeout } : {},
  );

export const uasFinal = (t: Tt, code: number, text: string, ring = false): Promise<SippRun> =>
  sipp(
    t,
    fill(fixture('uas-final.xml'), {
      CODE: String(code),
      TEXT: text,
      PROVISIONAL_BLOCK: ring ? fixture('uas-180.block') : '',
    }),
    [],
  );

export const uac = (
  t: Tt,
  sipPort: number,
  scenario: string,
  number: string,
  user = '',
  pass = '',
  transport: 'u1' | 't1' = 'u1',
  /** How long sipp waits for its call to end (sipp's form, e.g. '40s'); its default suits calls held a few seconds. */
  timeout?: string,
): Promise<SippRun> =>
  sipp(
    t,
    scenario,
    [`127.0.0.1:${sipPort}`, '-s', number, ...(user ? ['-au', user, '-ap', pass] : []), '-t', transport],
    timeout ? { timeout } : {},
  );

export async function expectExit(t: Tt, run: SippRun, what: string): Promise<void> {
  const code = await run.exited;
  // Enough of sipp's last screen to show the scenario's first rows (their Timeout and Unexp. counts)
  // for a caller that takes a challenge: the end of the screen alone shows only the tail.
  t.equal(code, 0, what, code === 0 ? {} : { diagnostic: true, output: run.output().slice(-6000) });
}

/** A 1.2 s call to `number` authenticated as `sub`, answered by `supplier`; both sipp runs must end well. */
export async function answeredSubCall(
  t: Tt,
  w: World,
  sub: { sipUsername: string; sipPassword: string },
  number: string,
  supplier: SippRun,
): Promise<void> {
  const run = await uac(
    t,
    w.sipPort,
    uacScenario('uac-tail-answer.xml', { HOLD_MS: '1200' }),
    number,
    sub.sipUsername,
    sub.sipPassword,
  );
  await expectExit(t, run, 'caller completed the call');
  await expectExit(t, supplier, 'supplier answered and got the BYE');
}

/**
 * Polls until `fn` returns a truthy value (the settlement runs after the BYE is answered).
 * 20 s by default: a wait for what must happen, not a speed check; on a loaded 2-core machine a
 * child daemon's first call can take more than 5 s.
 */
export async function eventually<T>(fn: () => Promise<T | null | undefined | false>, ms = 20_000): Promise<T> {
  const start = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() - start > ms) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * A "supplier" that sends everything it gets straight back to the exchange's SIP port (UDP on
 * loopback), as a misconfigured or hostile peer would: `invites()` counts the INVITEs it relayed.
 */
export async function loopingSupplier(t: Tt, sipPort: number): Promise<{ port: number; invites(): number }> {
  const relay = dgram.createSocket('udp4');
  let invites = 0;
  relay.on('message', (m) => {
    if (m.toString('latin1').startsWith('INVITE ')) invites++;
    relay.send(m, sipPort, '127.0.0.1');
  });
  await new Promise<void>((r) => relay.bind(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => relay.close(() => r())));
  return { port: relay.address().port, invites: () => invites };
}

/** A bare, unauthenticated INVITE over UDP from a raw socket on loopback (attribution by source address). */
export function rawInvite(fromPort: number, toPort: number, number: string, callId: string): string {
  return [
    `INVITE sip:${number}@127.0.0.1:${toPort} SIP/2.0`,
    `Via: SIP/2.0/UDP 127.0.0.1:${fromPort};branch=z9hG4bK-${callId};rport`,
    'Max-Forwards: 70',
    `From: <sip:441100000000@127.0.0.1:${fromPort}>;tag=${callId}`,
    `To: <sip:${number}@127.0.0.1:${toPort}>`,
    `Call-ID: ${callId}@test`,
    'CSeq: 1 INVITE',
    `Contact: <sip:caller@127.0.0.1:${fromPort}>`,
    'Content-Length: 0',
    '',
    '',
  ].join('\n');
}

/**
 * A funded sub-account of the operator places one answered trunk call of about a second to
 * `number` (the supplier `uas` answers it); returns the sub-account and its CDR's money.
 */
export async function subAccountCall(
  t: Tt,
  w: World,
  number: string,
  uas: SippRun,
): Promise<{ subId: string; cdr: { buyerCost: string; sellerCredit: string; sellerId: string } }> {
  const sub = await w.sub({ markupPct: '0', fund: '5.000000' });
  const run = await uac(
    t,
    w.sipPort,
    uacScenario('uac-tail-answer.xml', { HOLD_MS: '1000' }),
    number,
    sub.sipUsername,
    sub.sipPassword,
  );
  await expectExit(t, run, 'caller completed the call');
  await expectExit(t, uas, 'supplier answered');
  const [cdr] = await eventually(async () => {
    const rows = await w.d.sql<{ buyerCost: string; sellerCredit: string; sellerId: string }[]>`
      select buyer_cost::text, seller_credit::text, seller_id from cdrs where account_id = ${sub.id}`;
    return rows.length > 0 ? rows : null;
  });
  return { subId: sub.id, cdr: cdr! };
}
