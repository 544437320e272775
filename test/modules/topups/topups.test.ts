import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { startTestDaemon, type TestDaemon } from '../../helpers/daemon.js';

/** A facilitator on loopback speaking x402 v1: /verify then /settle; it records what it saw. */
async function startFacilitator(t: { teardown(fn: () => unknown): void }) {
  const seen: { path: string; body: Record<string, any> }[] = []; // eslint-disable-line @typescript-eslint/no-explicit-any
  let valid = true;
  const server = createServer((req: IncomingMessage, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => {
      const body = JSON.parse(text);
      seen.push({ path: req.url ?? '', body });
      res.setHeader('content-type', 'application/json');
      if (req.url === '/verify') {
        res.end(
          JSON.stringify(
            valid ? { isValid: true, payer: '0xPAYER' } : { isValid: false, invalidReason: 'insufficient_funds' },
          ),
        );
      } else {
        res.end(
          JSON.stringify({
            success: true,
            transaction: '0xTX' + seen.length,
            network: body.paymentRequirements.network,
            payer: '0xPAYER',
          }),
        );
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    setValid: (v: boolean) => (valid = v),
  };
}

const payment = (nonce: string) =>
  Buffer.from(
    JSON.stringify({
      x402Version: 1,
      scheme: 'exact',
      network: 'base-sepolia',
      payload: { signature: '0xsig', authorization: { nonce } },
    }),
  ).toString('base64');

async function post(d: TestDaemon, url: string, key: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await d.app.inject({
    method: 'POST',
    url: `/api/v1${url}`,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    payload: JSON.stringify(body),
  });
  return { status: res.statusCode, json: res.json(), headers: res.headers };
}

t.test('x402: 402 with requirements, verified and settled payment credited once; test keys refused', async (t) => {
  const fac = await startFacilitator(t);
  const d = await startTestDaemon(t, {
    billing: {
      x402_facilitator_url: fac.url,
      x402_pay_to: '0xPAYTO',
      x402_network: 'base-sepolia',
      x402_min_amount: '1',
      x402_max_amount: '500',
    },
  });
  const { accounts, keys, ledger } = d.modules.services;
  const acct = await accounts.createAccount({ email: 'agent@example.com', password: 'correct horse battery' });
  const live = (await keys.create(acct.id, { mode: 'live' })).secret;
  const test = (await keys.create(acct.id, { mode: 'test' })).secret;

  const first = await post(d, '/topups/x402', live, { amount: '12.5' });
  t.equal(first.status, 402);
  t.equal(first.json.x402Version, 1);
  t.match(first.json.accepts[0], {
    scheme: 'exact',
    network: 'base-sepolia',
    maxAmountRequired: '12500000',
    payTo: '0xPAYTO',
  });
  t.match(first.json.accepts[0].resource, /\/api\/v1\/topups\/x402$/);
  t.equal(fac.seen.length, 0, 'nothing sent to the facilitator without a payment');

  const paid = await post(d, '/topups/x402', live, { amount: '12.5' }, { 'x-payment': payment('n1') });
  t.equal(paid.status, 200, JSON.stringify(paid.json));
  t.match(paid.json.data, {
    amount: '12.500000',
    balance: '12.500000',
    transaction: '0xTX2',
    payer: '0xPAYER',
    replayed: false,
  });
  t.same(
    fac.seen.map((s) => s.path),
    ['/verify', '/settle'],
  );
  t.equal(fac.seen[0]!.body.paymentRequirements.maxAmountRequired, '12500000');
  t.equal(fac.seen[0]!.body.paymentPayload.payload.authorization.nonce, 'n1');
  const settlement = JSON.parse(Buffer.from(String(paid.headers['x-payment-response']), 'base64').toString());
  t.match(settlement, { success: true, transaction: '0xTX2' });

  const again = await post(d, '/topups/x402', live, { amount: '12.5' }, { 'x-payment': payment('n1') });
  t.equal(again.status, 200);
  t.equal(again.json.data.replayed, true, 'the same payment credits once');
  t.equal(fac.seen.length, 2, 'and is not settled again');
  t.equal((await ledger.balanceOf(acct.id)).balance, '12.500000');
  const [tx] = await d.sql<{ source: string }[]>`select source from entries where owner_id = ${acct.id}`;
  t.equal(tx!.source, 'x402');

  fac.setValid(false);
  const refused = await post(d, '/topups/x402', live, { amount: '5' }, { 'x-payment': payment('n2') });
  t.equal(refused.status, 402);
  t.equal(refused.json.error, 'insufficient_funds');
  const garbage = await post(d, '/topups/x402', live, { amount: '5' }, { 'x-payment': 'not base64 json' });
  t.equal(garbage.status, 402);

  const tooBig = await post(d, '/topups/x402', live, { amount: '501' });
  t.equal(tooBig.status, 400);
  const tk = await post(d, '/topups/x402', test, { amount: '5' });
  t.equal(tk.status, 403);
  t.equal(tk.json.error.code, 'TEST_KEY_NOT_ALLOWED');
});

t.test('invite codes grant test credit once per account', async (t) => {
  const d = await startTestDaemon(t);
  const { accounts, keys, topups, ledger } = d.modules.services;
  const code = await topups.createInviteCode({ amount: '25', maxRedemptions: 2 });
  t.match(code, { amount: '25.000000', maxRedemptions: 2 });
  t.match(code.code, /^INV-/);
  const users = await Promise.all(
    ['a', 'b', 'c'].map(async (n) => {
      const a = await accounts.createAccount({ email: `${n}@example.com`, password: 'correct horse battery' });
      return { id: a.id, key: (await keys.create(a.id, { mode: 'test' })).secret };
    }),
  );
  const r1 = await post(d, '/topups/invite-codes/redeem', users[0]!.key, { code: code.code });
  t.equal(r1.status, 200);
  t.match(r1.json.data, { amount: '25.000000', testCredit: '25.000000' });
  const twice = await post(d, '/topups/invite-codes/redeem', users[0]!.key, { code: code.code });
  t.equal(twice.status, 400, 'one redemption per account');
  t.equal((await post(d, '/topups/invite-codes/redeem', users[1]!.key, { code: code.code })).status, 200);
  const used = await post(d, '/topups/invite-codes/redeem', users[2]!.key, { code: code.code });
  t.equal(used.status, 400);
  t.match(used.json.error.message, /used up/);
  t.equal((await post(d, '/topups/invite-codes/redeem', users[2]!.key, { code: 'NOPE' })).status, 404);
  const b = await ledger.balanceOf(users[0]!.id);
  t.same([b.balance, b.testCredit], ['0.000000', '25.000000'], 'test credit only; the live balance never moves');
  const bal = await d.app.inject({
    method: 'GET',
    url: '/api/v1/account/balance',
    headers: { authorization: `Bearer ${users[0]!.key}` },
  });
  t.equal(bal.json().data.testCredit, '25.000000');
});
