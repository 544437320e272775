import t from 'tap';
import { once } from 'node:events';
import { createServer } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { generate } from 'selfsigned';
import {
  createHttpSupplier,
  signBody,
  verifyReceiptCallback,
  verifySignature,
} from '../../src/messaging/http-delivery.js';
import { createManualClock } from '../../src/platform/clock.js';

const log = pino({ level: 'silent' });

t.test('signed POST to an HTTPS supplier: accepted, refused, temporary, timeout', async (t) => {
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }],
  });
  const seen: Array<{ headers: IncomingMessage['headers']; body: Buffer; valid: boolean }> = [];
  const server = createServer(
    { key: pems.private, cert: pems.cert },
    async (req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const body = Buffer.concat(chunks);
      const valid = verifySignature(
        ['sup-secret'],
        Number(req.headers['x-svc-timestamp']),
        body,
        String(req.headers['x-svc-signature']),
      );
      seen.push({ headers: req.headers, body, valid });
      const to = (JSON.parse(body.toString()) as { to: string }).to;
      if (to.startsWith('1999'))
        return res.writeHead(422, { 'content-type': 'application/json' }).end('{"code":"NO_ROUTE"}');
      if (to.startsWith('1503')) return res.writeHead(503).end();
      if (to.startsWith('1777')) return; // silence
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"supplierMessageId":"abc-1\\u0000"}');
    },
  );
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  const port = (server.address() as AddressInfo).port;
  const clock = createManualClock(new Date('2026-11-22T04:00:00Z'));
  const sup = createHttpSupplier({
    url: `https://127.0.0.1:${port}/sms`,
    secret: 'sup-secret',
    callbackUrl: 'https://exchange.example/receipts/x',
    timeoutMs: 300,
    tls: { ca: pems.cert },
    log,
    clock,
  });
  t.same(await sup.submit({ messageId: 'm1', to: '+447700900123', from: 'Shop', text: 'Hi €' }), {
    status: 'accepted',
    supplierMessageId: 'abc-1',
  });
  t.equal(seen[0]?.valid, true, 'supplier verified our signature');
  t.equal(seen[0]?.headers['x-svc-timestamp'], String(Date.parse('2026-11-22T04:00:00Z') / 1000));
  t.equal(seen[0]?.headers['x-svc-message-id'], 'm1');
  t.match(JSON.parse(seen[0]!.body.toString()), {
    messageId: 'm1',
    to: '447700900123',
    encoding: 'gsm7',
    segments: 1,
    registeredDelivery: true,
    callbackUrl: 'https://exchange.example/receipts/x',
  });
  t.same(await sup.submit({ messageId: 'm2', to: '1999', from: 'Shop', text: 'x' }), {
    status: 'refused',
    httpStatus: 422,
    code: 'NO_ROUTE',
  });
  t.same(await sup.submit({ messageId: 'm3', to: '1503', from: 'Shop', text: 'x' }), {
    status: 'error',
    reason: 'http_503',
  });
  t.same(await sup.submit({ messageId: 'm4', to: '1777', from: 'Shop', text: 'x' }), {
    status: 'error',
    reason: 'timeout',
  });
  t.throws(() => createHttpSupplier({ url: 'http://127.0.0.1/x', secret: 's', callbackUrl: 'x', log, clock }), /https/);
});

t.test('receipt callback verification', async (t) => {
  const now = new Date('2026-11-22T04:00:00Z');
  const ts = now.getTime() / 1000;
  const body = Buffer.from(
    JSON.stringify({
      supplierMessageId: 'abc-1',
      messageId: 'm1',
      status: 'undelivered',
      errorCode: '034',
      doneAt: '2026-11-22T03:59:00Z',
    }),
  );
  const headers = { 'x-svc-timestamp': String(ts), 'x-svc-signature': signBody('new', ts, body) };
  const ok = verifyReceiptCallback({ rawBody: body, headers, secrets: ['old', 'new'], now });
  t.match(ok, {
    ok: true,
    receipt: { supplierMessageId: 'abc-1', messageId: 'm1', stat: 'UNDELIV', errorCode: '034' },
  });
  t.same(verifyReceiptCallback({ rawBody: Buffer.concat([body, Buffer.from(' ')]), headers, secrets: ['new'], now }), {
    ok: false,
    reason: 'bad_signature',
  });
  t.same(verifyReceiptCallback({ rawBody: body, headers, secrets: ['new'], now: new Date(now.getTime() + 301_000) }), {
    ok: false,
    reason: 'stale_timestamp',
  });
  t.same(verifyReceiptCallback({ rawBody: body, headers: {}, secrets: ['new'], now }), {
    ok: false,
    reason: 'missing_signature',
  });
  const bad = Buffer.from('{"supplierMessageId":"x","status":"weird"}');
  t.same(
    verifyReceiptCallback({
      rawBody: bad,
      headers: { 'x-svc-timestamp': String(ts), 'x-svc-signature': signBody('new', ts, bad) },
      secrets: ['new'],
      now,
    }),
    { ok: false, reason: 'bad_body' },
  );
});
