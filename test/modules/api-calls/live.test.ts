import t from 'tap';
import { Decimal } from 'decimal.js';
import { pino } from 'pino';
import { createVoicePlane } from '../../../src/telephony/calls/voice-plane.js';
import { createLoopMarker, createSipStack, createSipTransport } from '../../../src/telephony/sip/index.js';
import { createApiCallsService, type ApiCallsService } from '../../../src/modules/api-calls/service.js';
import { createWorld, eventually } from '../sip-trunks/world.js';
import { freePort } from '../../telephony/sip/sipp.js';
import { ENGINES, engineOptions } from './engines.js';

/**
 * Live calls with sipp as the callee: the call service over our own SIP stack on 127.0.0.1 and
 * each call engine (native media plane, Asterisk over ARI), against a whole test daemon (ledger,
 * routing, CDRs, outbox).
 */
import { available, answering, refusing, digits, exitOk, expectedCost } from './peers.js';

const log = pino({ level: process.env['SVC_TEST_LOG'] ?? 'silent' });

// The engines' cases share nothing (each its own daemon, database and peers; RTP binds skip a port
// in use): side by side, the file takes about one engine's time instead of the sum.
t.jobs = ENGINES.length;
for (const engine of ENGINES) {
  t.test(
    `calls placed through the call service over SIP to sipp (${engine.name} engine)`,
    { skip: available ? engine.skip : 'sipp, its pcaps or espeak-ng not installed' },
    async (t) => {
      const w = await createWorld(t);
      const { d, operator } = w;
      const services = d.modules.services;
      const transport = await createSipTransport({ host: '127.0.0.1', port: 0, log });
      const stack = createSipStack({ transport, log });
      t.teardown(() => stack.close());
      const base = 40000 + (process.pid % 400) * 20;
      let svc: ApiCallsService | null = null;
      const leases: { accountId: string; key: string; seconds: number }[] = [];
      const plane = createVoicePlane({
        stack,
        log,
        loopMarker: createLoopMarker('test secret'),
        media: { workers: 1, portMin: base, portMax: base + 19, bindAddress: '127.0.0.1', ttsCacheDir: null },
        dialer: { setupTimeoutMs: 1500 },
        onLegEnded: (o) => svc?.noteLeg(o),
        ...(await engineOptions(t, engine.name)),
      });
      t.teardown(() => plane.close());
      svc = createApiCallsService({
        ...d.core,
        ledger: services.ledger,
        routing: services.routing,
        accounts: services.accounts,
        application: services.application,
        admission: services.calls,
        callRecords: services.calls.records,
        cdrs: services.cdrs,
        node: 'live-test',
        voice: () => plane,
        extendLease: async (accountId, key, seconds) => {
          leases.push({ accountId, key, seconds });
        },
      });
      const service = svc;
      t.teardown(() => service.stop());
      const caller = { accountId: operator.accountId, parentId: null, mode: 'live' as const };
      const balance = async () => services.ledger.balanceOf(operator.accountId);
      const events = async (id: string) =>
        (await d.sql`select event, data from events where data->>'callId' = ${id} order by id`).map((e) => ({
          event: e['event'] as string,
          data: e['data'] as Record<string, unknown>,
        }));
      const cdrs = (id: string) =>
        d.sql`select route_id, status, sip_code, billed_seconds, buyer_cost::text as cost, call_group_id from cdrs where call_uuid = ${id} order by created_at, id`;

      t.test('async: answered, say then gather receives RFC 2833 digits; events in order; money settled', async (t) => {
        const peer = await answering(t, '447100000001', digits(['1', '2', 'pound']));
        const { routeId } = await w.route({ port: peer.port, prefix: '4471', rate: '0.010000', increment: '6/6' });
        const before = await balance();
        const r = await service.place(caller, {
          to: '+447100000001',
          from: '+15550001111',
          async: true,
          actions: [{ say: 'Hello' }, { gather: { digits: 5, timeout: 5, finishOnKey: '#' } }],
        });
        t.equal(r.status, 202);
        t.equal(r.data['status'], 'ringing');
        t.equal(r.data['mode'], 'async');
        t.equal(r.data['actions'], 2);
        const id = r.data['callId'] as string;
        t.equal(r.data['statusUrl'], `/api/v1/comms/calls/${id}`);
        const held = await balance();
        t.ok(new Decimal(held.held).gt(before.held), 'a hold covers maxDuration while the call runs');

        const rec = await eventually(async () => {
          const c = await service.get(caller, id);
          return c['endedAt'] ? c : null;
        }, 20_000);
        await exitOk(t, peer, 'sipp saw the INVITE to the number, the ACK and our BYE');
        t.equal(rec['status'], 'completed');
        t.equal(rec['mode'], 'async');
        t.same(rec['gathered'], [{ index: 0, digits: '12', status: 'received' }], 'keys 1, 2 then # to finish');
        t.equal(rec['routeId'], routeId);
        t.equal(rec['sipResponseCode'], 200);
        t.equal(rec['hangupCause'], 'NORMAL_CLEARING');
        t.ok(rec['answeredAt'] && rec['ringingAt']);
        const billable = rec['billableSeconds'] as number;
        t.ok((rec['durationSeconds'] as number) >= 2, 'the call lasted the prompt and the digits');
        t.equal(billable % 6, 0, 'billed in 6 s blocks');
        t.ok(billable >= (rec['durationSeconds'] as number));
        t.equal(rec['cost'], expectedCost(billable, '0.010000'));
        const after = await balance();
        t.equal(new Decimal(before.balance).minus(after.balance).toFixed(6), rec['cost'], 'balance moved by the cost');
        t.equal(after.held, before.held, 'hold settled');
        const rows = await cdrs(id);
        t.equal(rows.length, 1, 'one CDR');
        t.equal(rows[0]!['cost'], rec['cost']);
        const ev = await events(id);
        t.same(
          ev.map((e) => e.event),
          ['call.ringing', 'call.answered', 'call.gathered', 'call.completed'],
        );
        t.equal(ev[2]!.data['digits'], '12');
        t.equal(ev[3]!.data['routeId'], routeId);
      });

      t.test('busy (486) is not retried on the next route and costs nothing', async (t) => {
        const busy = await refusing(t, 486, 'Busy Here');
        const spare = await answering(t, '447200000001');
        await w.route({ port: busy.port, prefix: '4472', rate: '0.010000' });
        await w.route({ port: spare.port, prefix: '4472', rate: '0.020000' });
        const before = await balance();
        const r = await service.place(caller, { to: '+447200000001', from: '+15550001111', actions: [{ pause: 1 }] });
        t.equal(r.status, 200);
        t.equal(r.data['status'], 'busy');
        t.equal(r.data['sipResponseCode'], 486);
        t.equal(r.data['hangupCause'], 'USER_BUSY');
        t.equal(r.data['cost'], '0.000000');
        t.notOk(r.data['attempts'], 'one route tried');
        await exitOk(t, busy, 'busy peer got its ACK');
        const after = await balance();
        t.equal(after.balance, before.balance);
        t.equal(after.held, before.held, 'hold released');
        const rows = await cdrs(r.data['callId'] as string);
        t.equal(rows.length, 1);
        t.equal(rows[0]!['status'], 'busy');
      });

      t.test('503 on the first route, answered on the next: only the connected leg is billed', async (t) => {
        const down = await refusing(t, 503, 'Service Unavailable');
        const up = await answering(t, '447300000001');
        const first = await w.route({ port: down.port, prefix: '4473', rate: '0.010000' });
        const second = await w.route({ port: up.port, prefix: '4473', rate: '0.030000' });
        const before = await balance();
        const r = await service.place(
          caller,
          { to: '+447300000001', from: '+15550001111', actions: [{ pause: 1 }] },
          { idempotency: { accountId: operator.accountId, key: 'k-503' } },
        );
        t.same(
          leases,
          [{ accountId: operator.accountId, key: 'k-503', seconds: 300 + 90 }],
          'the idempotency lease covers maxDuration and setup',
        );
        await exitOk(t, down, '503 peer got its ACK');
        await exitOk(t, up, 'answering peer got our BYE');
        t.equal(r.data['status'], 'completed');
        t.equal(r.data['routeId'], second.routeId, 'the route that carried the call');
        t.same(r.data['attempts'], [
          { routeId: first.routeId, sipResponseCode: 503, status: 'failed', hangupCause: 'NORMAL_CIRCUIT_CONGESTION' },
          { routeId: second.routeId, sipResponseCode: 200, status: 'answered', hangupCause: 'NORMAL_CLEARING' },
        ]);
        const billable = r.data['billableSeconds'] as number;
        t.equal(billable, 6);
        t.equal(r.data['cost'], expectedCost(billable, '0.030000'), 'priced at the connected route');
        const after = await balance();
        t.equal(new Decimal(before.balance).minus(after.balance).toFixed(6), r.data['cost']);
        t.equal(after.held, before.held);
        const rows = await cdrs(r.data['callId'] as string);
        t.equal(rows.length, 2, 'one CDR per leg');
        t.equal(rows[0]!['callGroupId'], r.data['callId'], 'shared callGroupId');
        t.equal(rows[1]!['callGroupId'], r.data['callId']);
        t.same(
          rows.map((x) => x['routeId']),
          [first.routeId, second.routeId],
        );
        t.same(
          rows.map((x) => x['cost']),
          ['0.000000', r.data['cost']],
        );
        const ev = await events(r.data['callId'] as string);
        t.same(
          ev.map((e) => e.event),
          ['call.ringing', 'call.answered', 'call.completed'],
          'no call.gathered on sync calls',
        );
        t.equal((ev[2]!.data['attempts'] as unknown[]).length, 2);
      });

      t.test('maxDuration cuts the call', async (t) => {
        const peer = await answering(t, '447400000001');
        await w.route({ port: peer.port, prefix: '4474', rate: '0.010000' });
        const before = await balance();
        const r = await service.place(caller, {
          to: '+447400000001',
          from: '+15550001111',
          maxDuration: 2,
          actions: [{ pause: 10 }],
        });
        await exitOk(t, peer, 'peer got our BYE');
        t.equal(r.data['status'], 'completed');
        t.ok((r.data['durationSeconds'] as number) <= 3, `cut at about 2 s (${String(r.data['durationSeconds'])})`);
        const rec = await service.get(caller, r.data['callId'] as string);
        t.match(rec['hangupReason'], /maximum duration/);
        const after = await balance();
        t.equal(new Decimal(before.balance).minus(after.balance).toFixed(6), expectedCost(6, '0.010000'));
      });

      t.test('no response from the first route: the next route is tried at once', async (t) => {
        const silentPort = await freePort();
        const up = await answering(t, '447500000001');
        const silent = await w.route({ port: silentPort, prefix: '4475', rate: '0.010000' });
        const second = await w.route({ port: up.port, prefix: '4475', rate: '0.020000' });
        const before = await balance();
        const r = await service.place(caller, { to: '+447500000001', from: '+15550001111', actions: [{ pause: 1 }] });
        await exitOk(t, up, 'answering peer got our BYE');
        t.equal(r.data['status'], 'completed');
        t.same(r.data['attempts'], [
          { routeId: silent.routeId, sipResponseCode: null, status: 'failed', hangupCause: 'RECOVERY_ON_TIMER_EXPIRE' },
          { routeId: second.routeId, sipResponseCode: 200, status: 'answered', hangupCause: 'NORMAL_CLEARING' },
        ]);
        const after = await balance();
        t.equal(new Decimal(before.balance).minus(after.balance).toFixed(6), expectedCost(6, '0.020000'));
        t.equal(after.held, before.held);
      });

      t.test('voice one-time code: the call reads the code, hangs up, and bills the call', async (t) => {
        const peer = await answering(t, '447700000001');
        await w.route({ port: peer.port, prefix: '4477', rate: '0.010000' });
        const before = await balance();
        const v = await service.voiceOtp(caller, { to: '+447700000001', code: '4821', repeat: 1, brand: 'Acme' });
        t.equal(v.status, 'initiated');
        t.equal(v.codeLength, 4);
        const rec = await eventually(async () => {
          const c = await service.get(caller, v.callId);
          return c['endedAt'] ? c : null;
        }, 20_000);
        await exitOk(t, peer, 'peer got our BYE after the code was read');
        t.equal(rec['status'], 'completed');
        t.ok((rec['durationSeconds'] as number) >= 3, 'pause, code, pause');
        t.notOk(JSON.stringify(rec).includes('4821'), 'the code is not on the record');
        const after = await balance();
        t.equal(new Decimal(before.balance).minus(after.balance).toFixed(6), rec['cost']);
      });

      t.test('a chosen routeId is never failed over', async (t) => {
        const down = await refusing(t, 503, 'Service Unavailable');
        const up = await answering(t, '447600000001');
        const first = await w.route({ port: down.port, prefix: '4476', rate: '0.010000' });
        await w.route({ port: up.port, prefix: '4476', rate: '0.020000' });
        const r = await service.place(caller, { to: '+447600000001', from: '+15550001111', routeId: first.routeId });
        await exitOk(t, down, '503 peer got its ACK');
        t.equal(r.data['status'], 'failed');
        t.equal(r.data['sipResponseCode'], 503);
        const rec = await service.get(caller, r.data['callId'] as string);
        t.equal((rec['attempts'] as unknown[]).length, 1);
        t.match(rec['hangupReason'], /SIP 503/);
      });
    },
  );
}
