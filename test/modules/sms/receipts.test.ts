import t from 'tap';
import pino from 'pino';
import { createSupplierBind, sameSupplierMessageId, type SupplierReceipt } from '../../../src/messaging/index.js';
import { createManualClock, systemClock } from '../../../src/platform/clock.js';
import { createSmsService, type SmsService, type SupplierGateway } from '../../../src/modules/sms/service.js';
import { checkInvariants } from '../../ledger/helpers.js';
import { createSmsWorld, eventually } from './world.js';

/**
 * Receipt correlation through the store (the bind's in-process match removed, so the supplier id
 * is matched under its hex and decimal keys), a receipt that comes before submit_sm_resp, and the
 * expiry sweep on an injected clock: EXPIRED and refunded on a route that returns receipts, left
 * sent on one that has returned none.
 */
t.test('receipts by supplier id, early receipts, expiry on an injected clock', async (t) => {
  const clock = createManualClock(new Date());
  const w = await createSmsWorld(t, { clock });
  const { h, smsc, buyer } = w;
  const log = pino({ level: 'silent' });
  let drop = false;
  const dropped: SupplierReceipt[] = [];
  let svc: SmsService | null = null;
  // A real bind to the SMSC (its own running clock); receipts reach the service without the
  // bind's reference, or are lost on cue.
  const bind = createSupplierBind({
    host: '127.0.0.1',
    port: smsc.port,
    tls: false,
    systemId: 'sup1',
    password: 'pw1',
    bindType: 'transceiver',
    tps: 200,
    windowSize: 10,
    responseTimeoutMs: 2000,
    log,
    clock: systemClock,
    reconnectMinMs: 20,
    reconnectMaxMs: 200,
    onReceipt(r) {
      if (drop) dropped.push(r);
      else void svc!.onReceipt({ ...r, reference: null });
    },
  });
  bind.start();
  const gateway: SupplierGateway = {
    submit: (_route, sms) => bind.submit({ ...sms, registeredDelivery: true }),
    stop: () => bind.stop(),
  };
  svc = createSmsService({
    sql: h.sql,
    log,
    clock,
    ledger: h.services.ledger,
    routing: h.services.routing,
    application: h.services.application,
    cdrs: h.services.cdrs,
    options: { receiptTtlMs: 3_600_000 },
    gateway,
  });
  t.teardown(() => svc!.stop());
  const caller = { accountId: buyer.accountId, parentId: null, mode: 'live' as const };
  const row = async (id: string) =>
    (
      await h.sql<{ status: string; errorCode: string | null; receiptDueAt: Date | null }[]>`
      select status, error_code, receipt_due_at from messages where id = ${id}`
    )[0]!;

  t.test('a route that has returned no receipt: an overdue message stays sent', async (t) => {
    drop = true;
    const r = await svc!.send(caller, { to: '+12025550140', from: 'MyShop', message: 'lost receipt' });
    t.equal(r.status, 'sent');
    await eventually(async () => dropped.length === 1);
    clock.advance(3_600_001);
    t.equal(await svc!.sweepExpired(), 0, 'nothing expires on a route with no receipts');
    t.match(await row(r.messageId), { status: 'sent', receiptDueAt: null });
    t.equal((await svc!.get(caller, r.messageId)).routeReturnsReceipts, false);
  });

  t.test('matched by supplier id in the store: hex id answered, decimal id in the receipt', async (t) => {
    drop = false;
    const r = await svc!.send(caller, { to: '+13330001111', from: 'MyShop', message: 'hex and decimal' });
    t.equal(r.status, 'sent');
    const dlr = await smsc.waitFor(/^DLR \S+ DELIVRD/, 2);
    const [stored] = await h.sql<
      { ids: string[] }[]
    >`select supplier_message_ids as ids from messages where id = ${r.messageId}`;
    t.not(dlr.split(' ')[1], stored!.ids[0], 'the receipt names the id in another form');
    await eventually(async () => (await row(r.messageId)).status === 'delivered');
    t.equal((await svc!.get(caller, r.messageId)).routeReturnsReceipts, true);
  });

  t.test('a receipt before submit_sm_resp is applied once the send is stored', async (t) => {
    const r = await svc!.send(caller, { to: '+15550002222', from: 'MyShop', message: 'early' });
    t.equal(r.status, 'sent');
    await eventually(async () => (await row(r.messageId)).status === 'delivered');
  });

  t.test('overdue on a route that returns receipts: EXPIRED, refunded, sms.failed', async (t) => {
    drop = true;
    const seen = dropped.length;
    const before = await w.balance(buyer.accountId);
    const r = await svc!.send(caller, { to: '+12025550141', from: 'MyShop', message: 'will expire' });
    t.equal(r.cost, '0.010500');
    const charged = await w.balance(buyer.accountId);
    t.equal(charged.balance, (Number(before.balance) - 0.0105).toFixed(6));
    clock.advance(3_599_000);
    t.equal(await svc!.sweepExpired(), 0, 'not yet due');
    clock.advance(2_000);
    t.equal(await svc!.sweepExpired(), 1);
    t.match(await row(r.messageId), { status: 'failed', errorCode: 'EXPIRED' });
    const view = await svc!.get(caller, r.messageId);
    t.same(
      view.timeline.map((x) => x.status),
      ['queued', 'sent', 'failed'],
    );
    t.equal(view.cost, '0.000000');
    t.equal((await w.balance(buyer.accountId)).balance, before.balance, 'refunded in full');
    const [ev] = await h.sql<
      { data: { errorCode: string } }[]
    >`select data from events where event = 'sms.failed' and data->>'messageId' = ${r.messageId}`;
    t.equal(ev!.data.errorCode, 'EXPIRED');
    // A late receipt after expiry changes nothing. It is waited for here: arriving during the
    // next subtest, it would be taken for one of that message's receipts.
    await eventually(async () => dropped.length > seen);
    drop = false;
    await svc!.onReceipt({ ...dropped[seen]!, reference: null });
    t.match(await row(r.messageId), { status: 'failed', errorCode: 'EXPIRED' });
    t.equal((await w.balance(buyer.accountId)).balance, before.balance, 'never refunded twice');
  });

  t.test('two parts: one delivered keeps the message sent, the other undelivered fails and refunds it', async (t) => {
    drop = true;
    dropped.length = 0;
    const before = await w.balance(buyer.accountId);
    const r = await svc!.send(caller, { to: '+12025550142', from: 'MyShop', message: 'z'.repeat(161) });
    t.match(r, { status: 'sent', segments: 2, cost: '0.021000' });
    const [stored] = await h.sql<
      { ids: string[] }[]
    >`select supplier_message_ids as ids from messages where id = ${r.messageId}`;
    const receiptOf = (seq: number) =>
      dropped.find((d) => sameSupplierMessageId(d.supplierMessageId, stored!.ids[seq - 1]!));
    await eventually(async () => receiptOf(1) && receiptOf(2));
    const state = async () => ({
      message: (
        await h.sql<{ status: string; errorCode: string | null; receiptStat: string; receiptErr: string }[]>`
        select status, error_code, receipt_stat, receipt_err from messages where id = ${r.messageId}`
      )[0],
      parts: [
        ...(await h.sql<{ seq: number; stat: string }[]>`
        select seq, stat from message_parts where message_id = ${r.messageId} order by seq`),
      ],
    });
    drop = false;
    await svc!.onReceipt({ ...receiptOf(2)!, reference: null, stat: 'DELIVRD', err: '000' });
    t.same(
      await state(),
      {
        message: { status: 'sent', errorCode: null, receiptStat: 'DELIVRD', receiptErr: '000' },
        parts: [{ seq: 2, stat: 'DELIVRD' }],
      },
      'one part delivered: still sent, the receipt on the row and on its part',
    );
    await svc!.onReceipt({ ...receiptOf(1)!, reference: null, stat: 'UNDELIV', err: '001' });
    t.same(
      await state(),
      {
        message: { status: 'failed', errorCode: 'UNDELIVERABLE', receiptStat: 'UNDELIV', receiptErr: '001' },
        parts: [
          { seq: 1, stat: 'UNDELIV' },
          { seq: 2, stat: 'DELIVRD' },
        ],
      },
      'the other undelivered: failed, with the receipt that failed it',
    );
    t.equal((await w.balance(buyer.accountId)).balance, before.balance, 'refunded in full');
  });

  t.test('ledger invariants', async (t) => {
    await checkInvariants(t, h.sql);
  });
});
