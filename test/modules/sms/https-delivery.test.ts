import t from 'tap';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { generate } from 'selfsigned';
import { signBody, verifySignature } from '../../../src/messaging/index.js';
import { startTestDaemon } from '../../helpers/daemon.js';
import { checkInvariants } from '../../ledger/helpers.js';
import { eventually } from './world.js';

const SECRET_A = 'route-a-secret-0123456789';
const SECRET_B = 'route-b-secret-9876543210';

interface Seen {
  route: 'a' | 'b';
  body: Record<string, unknown>;
  valid: boolean;
  authorization: string | undefined;
}

/**
 * HTTPS supplier delivery through the whole daemon: a node https supplier on 127.0.0.1 with its
 * own self-signed certificate (trusted through `[sms] https_delivery_ca_file`, certificate checks on),
 * two HTTPS routes bought by one buyer. Accepted and settled, refused (not charged, next route),
 * refused for the message's fault (no failover), silence (timeout: released, never resent), signed
 * receipt callbacks over real HTTPS (delivered; undelivered and refunded; a receipt that arrives
 * before the submit is answered), and the callbacks refused without a valid signature.
 */
t.test('SMS over a signed HTTPS supplier', async (t) => {
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }],
  });
  const dir = mkdtempSync(join(tmpdir(), 'svc-sms-https-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'supplier-ca.pem'), pems.cert);

  const seen: Seen[] = [];
  let n = 0;
  /** Set by the test: posts a receipt before answering the submit. */
  let early: ((body: Record<string, unknown>, supplierMessageId: string) => Promise<void>) | null = null;
  const supplier = createServer(
    { key: pems.private, cert: pems.cert },
    async (req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const raw = Buffer.concat(chunks);
      const route = req.url === '/a' ? 'a' : 'b';
      const valid = verifySignature(
        [route === 'a' ? SECRET_A : SECRET_B],
        Number(req.headers['x-svc-timestamp']),
        raw,
        String(req.headers['x-svc-signature']),
      );
      const body = JSON.parse(raw.toString()) as Record<string, unknown>;
      seen.push({ route, body, valid, authorization: req.headers.authorization });
      const to = String(body['to']);
      const json = (code: number, v: unknown) =>
        res.writeHead(code, { 'content-type': 'application/json' }).end(JSON.stringify(v));
      if (to.startsWith('1999')) return json(422, { code: 'INVALID_DESTINATION' });
      if (route === 'a' && to.startsWith('1444')) return json(422, { code: 'NO_CAPACITY' });
      if (route === 'a' && to.startsWith('1777')) return; // silence
      const id = `${route}-${String(++n).padStart(6, '0')}`;
      if (early) await early(body, id);
      return json(200, { supplierMessageId: id });
    },
  );
  supplier.listen(0, '127.0.0.1');
  await once(supplier, 'listening');
  t.teardown(() => {
    supplier.closeAllConnections();
    supplier.close();
  });
  const supplierUrl = `https://127.0.0.1:${(supplier.address() as AddressInfo).port}`;

  const d = await startTestDaemon(t, {
    sms: { https_delivery_ca_file: join(dir, 'supplier-ca.pem'), https_delivery_timeout_ms: 500 },
  });
  const svc = d.modules.services;
  const signUp = async (email: string) => {
    const acc = await svc.accounts.createAccount({ email, password: 'correct horse battery' });
    return { id: acc.id, token: (await svc.accounts.login(email, 'correct horse battery', {})).accessToken };
  };
  const seller = await signUp('https-seller@example.test');
  const buyer = await signUp('https-buyer@example.test');
  const post = (path: string, token: string, body: unknown) =>
    d.https('POST', path, { token, body, headers: { 'x-idempotency-key': randomUUID() } });
  const makeRoute = async (
    name: string,
    path: string,
    secret: string,
    rate: string,
    extra: Record<string, unknown> = {},
  ) => {
    const r = await post('/routes', seller.token, {
      type: 'sms',
      name,
      smsDelivery: { kind: 'http', url: `${supplierUrl}${path}`, signingSecret: secret, ...extra },
    });
    t.equal(r.status, 201, r.text);
    const id = r.json.data.id as string;
    t.equal(
      (
        await post(`/routes/${id}/rates`, seller.token, {
          format: 'csv',
          csv: `prefix,destination,rate\n1,US,${rate}\n`,
        })
      ).status,
      200,
    );
    t.equal((await post('/purchases', buyer.token, { routeId: id })).status, 201);
    return id;
  };
  const routeA = await makeRoute('HTTPS A', '/a', SECRET_A, '0.010', { authorization: 'Bearer sup-token' });
  const routeB = await makeRoute('HTTPS B', '/b', SECRET_B, '0.020');
  await svc.ledger.topup({ accountId: buyer.id, amount: '10.000000', source: 'card', postingKey: `fund-${buyer.id}` });
  const key = (await svc.keys.create(buyer.id, { mode: 'live', scopes: ['sms:send'] })).secret;
  const send = (to: string, message = 'hello over https') => post('/comms/sms', key, { to, from: 'MyShop', message });
  const balance = () => svc.ledger.balanceOf(buyer.id);
  const status = async (id: string) => (await d.https('GET', `/comms/sms/${id}`, { token: buyer.token })).json.data;
  const callback = async (routeId: string, secret: string, body: Record<string, unknown>, tsShift = 0) => {
    const raw = JSON.stringify(body);
    const ts = Math.floor(Date.now() / 1000) + tsShift;
    return d.https('POST', `/sms/receipts/${routeId}`, {
      rawBody: raw,
      headers: {
        'content-type': 'application/json',
        'x-svc-timestamp': String(ts),
        'x-svc-signature': signBody(secret, ts, raw),
      },
    });
  };

  t.test('accepted: signed request, settled at route A price, delivered by a signed callback', async (t) => {
    const r = await send('+12025550100');
    t.equal(r.status, 200, r.text);
    t.match(r.json.data, { status: 'sent', segments: 1, cost: '0.010500' });
    const req = seen.at(-1)!;
    t.match(
      req,
      { route: 'a', valid: true, authorization: 'Bearer sup-token' },
      'signed with the route secret; Authorization passed through',
    );
    t.match(req.body, {
      messageId: r.json.data.messageId,
      to: '12025550100',
      from: 'MyShop',
      encoding: 'gsm7',
      segments: 1,
      registeredDelivery: true,
    });
    t.match(String(req.body['callbackUrl']), new RegExp(`/api/v1/sms/receipts/${routeA}$`));
    t.match(await balance(), { balance: '9.989500', held: '0.000000' });
    const supId = `a-${String(n).padStart(6, '0')}`;
    const cb = await callback(routeA, SECRET_A, {
      supplierMessageId: supId,
      messageId: r.json.data.messageId,
      status: 'delivered',
      errorCode: '000',
    });
    t.equal(cb.status, 200, cb.text);
    t.same(cb.json.data, { received: true, matched: true });
    const m = await status(r.json.data.messageId);
    t.same(
      m.timeline.map((x: { status: string }) => x.status),
      ['queued', 'sent', 'delivered'],
    );
    t.equal(m.routeReturnsReceipts, true);
  });

  t.test('callbacks without a valid signature are refused and change nothing', async (t) => {
    const r = await send('+12025550101');
    const supId = `a-${String(n).padStart(6, '0')}`;
    const body = { supplierMessageId: supId, status: 'undelivered' };
    t.equal((await callback(routeA, SECRET_B, body)).status, 401, "another route's secret");
    t.equal(
      (await callback(routeB, SECRET_B, body)).json.data.matched,
      false,
      "signed for route B: route A's message is not matched",
    );
    t.equal((await callback(routeA, SECRET_A, body, -3600)).status, 401, 'stale timestamp');
    t.equal((await d.https('POST', `/sms/receipts/${routeA}`, { body })).status, 401, 'unsigned');
    t.equal((await callback(randomUUID(), SECRET_A, body)).status, 401, 'unknown route');
    t.equal((await status(r.json.data.messageId)).status, 'sent');
    // The real one, with only the supplier id (no echo of ours): failed and refunded.
    const before = await balance();
    t.equal((await callback(routeA, SECRET_A, { ...body, errorCode: '034' })).json.data.matched, true);
    const m = await status(r.json.data.messageId);
    t.match(m, { status: 'failed', errorCode: 'UNDELIVERABLE', cost: '0.000000' });
    t.equal((await balance()).balance, (Number(before.balance) + 0.0105).toFixed(6), 'refunded');
  });

  t.test('route A refuses for its own reason: not charged there, sent on route B', async (t) => {
    const before = await balance();
    const r = await send('+14445550100');
    t.match(r.json.data, { status: 'sent', cost: '0.020500' });
    t.same(
      seen.slice(-2).map((s) => s.route),
      ['a', 'b'],
    );
    t.ok(seen.at(-1)!.valid, 'route B signed with its own secret');
    t.equal((await balance()).balance, (Number(before.balance) - 0.0205).toFixed(6));
    t.equal((await status(r.json.data.messageId)).routeId, routeB);
  });

  t.test("refused for the message's fault: failed, not charged, no failover", async (t) => {
    const before = await balance();
    const count = seen.length;
    const r = await send('+19995550100');
    t.match(r.json.data, { status: 'failed', errorCode: 'SELLER_REJECTED', cost: '0.000000' });
    t.equal(seen.length, count + 1, 'route B never asked');
    t.same(await balance(), before);
  });

  t.test('silence: the timeout fails the message, releases the hold, never resends it', async (t) => {
    const before = await balance();
    const count = seen.length;
    const r = await send('+17775550100');
    t.match(r.json.data, { status: 'failed', errorCode: 'NO_ENDPOINT', cost: '0.000000' });
    t.equal(seen.length, count + 1, 'the supplier may hold it: not sent on route B');
    t.same(await balance(), before, 'nothing held, nothing charged');
  });

  t.test('a receipt posted before the submit is answered is matched once the send commits', async (t) => {
    let earlyId = '';
    early = async (body, id) => {
      earlyId = id;
      const r = await callback(routeA, SECRET_A, {
        supplierMessageId: id,
        messageId: body['messageId'],
        status: 'delivered',
      });
      t.same(r.json.data, { received: true, matched: false }, 'stored for later');
    };
    const r = await send('+12025550102');
    early = null;
    t.equal(r.json.data.status, 'sent');
    await eventually(async () => (await status(r.json.data.messageId)).status === 'delivered');
    t.pass('delivered');
    await eventually(
      async () => (await d.sql`select 1 from sms_early_receipts where supplier_message_id = ${earlyId}`).length === 0,
    );
    t.pass('the stored early receipt is gone once applied');
  });

  t.test('an early receipt stored by a daemon that stopped is applied when the next one starts', async (t) => {
    const r = await send('+12025550103');
    t.equal(r.json.data.status, 'sent');
    const supId = `a-${String(n).padStart(6, '0')}`;
    // What onHttpReceipt stores before answering 200; the daemon that stored it never matched it.
    await d.sql`insert into sms_early_receipts (route_id, supplier_message_id, reference, stat, err, done_at, received_at)
                values (${routeA}, ${supId}, ${r.json.data.messageId}, 'UNDELIV', '001', now(), now())`;
    const before = await balance();
    t.equal(
      await svc.sms.loadEarlyReceipts(),
      1,
      'taken back at start (the ones this daemon holds are not loaded twice)',
    );
    await eventually(async () => (await status(r.json.data.messageId)).status === 'failed');
    t.match(await status(r.json.data.messageId), { status: 'failed', errorCode: 'UNDELIVERABLE' });
    t.ok(Number((await balance()).balance) > Number(before.balance), 'refunded');
    t.equal(
      (await d.sql`select 1 from sms_early_receipts where supplier_message_id = ${supId}`).length,
      0,
      'deleted once applied',
    );
  });

  t.test('ledger invariants', async (t) => {
    await checkInvariants(t, d.sql);
  });
});
