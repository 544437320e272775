import { Decimal } from 'decimal.js';
import { register } from 'prom-client';
import t from 'tap';
import { createWorld, eventually } from '../sip-trunks/world.js';
import { ENGINES, engineConfig } from './engines.js';
import { answering, available, exitOk, expectedCost } from './peers.js';

/**
 * The whole path a developer takes: a live API key, POST /comms/calls over HTTPS, the daemon's
 * own SIP stack (the one trunk calls use) dialling sipp, the media engine speaking (native, or
 * Asterisk from `[media] engine`), the ledger settling, and the record read back over HTTPS.
 */
// The engines' cases share nothing (each its own daemon, database and peers; RTP binds skip a port
// in use): side by side, the file takes about one engine's time instead of the sum.
t.jobs = ENGINES.length;
for (const engine of ENGINES) {
  t.test(
    `POST /comms/calls over HTTPS places a real call through the daemon (${engine.name} engine)`,
    { skip: available ? engine.skip : 'sipp or espeak-ng not installed' },
    async (t) => {
      const base = 42000 + (process.pid % 300) * 20;
      const w = await createWorld(t, {
        rtp: { port_min: base, port_max: base + 19, bind_address: '127.0.0.1' },
        ...(await engineConfig(t, engine.name)),
      });
      const { d, operator } = w;
      const peer = await answering(t, '447300000001');
      const { routeId } = await w.route({ port: peer.port, prefix: '4473', rate: '0.012000', increment: '1/1' });
      const { secret } = await d.modules.services.keys.create(operator.accountId, {
        mode: 'live',
        scopes: ['voice:send'],
      });
      const before = await d.modules.services.ledger.balanceOf(operator.accountId);

      const res = await d.https('POST', '/comms/calls', {
        token: secret,
        headers: { 'x-idempotency-key': `http-live-${process.pid}` },
        body: {
          to: '+447300000001',
          from: '+15550002222',
          maxDuration: 30,
          actions: [{ say: 'Your order has shipped.' }, { hangup: true }],
        },
      });
      t.equal(res.status, 200, res.text);
      const call = res.json.data;
      t.equal(call.status, 'completed');
      t.equal(call.sipResponseCode, 200);
      t.equal(call.routeId ?? routeId, routeId);
      t.ok(call.billableSeconds >= 1, 'the prompt took time');
      t.equal(call.cost, expectedCost(call.billableSeconds, '0.012000'), 'billed per second at rate plus fee');
      await exitOk(t, peer, 'sipp answered and received our BYE');

      const rec = await eventually(async () => {
        const r = await d.https('GET', `/comms/calls/${call.callId}`, { token: secret });
        return r.status === 200 && r.json.data.endedAt ? r.json.data : null;
      });
      t.equal(rec.cost, call.cost);
      const after = await d.modules.services.ledger.balanceOf(operator.accountId);
      t.equal(
        new Decimal(before.balance).minus(after.balance).toFixed(6),
        call.cost,
        'the balance moved by exactly the cost',
      );
      t.equal(after.held, before.held, 'no hold left');
      if (engine.name === 'asterisk') {
        const latency = await register.getSingleMetric('svc_asterisk_ari_request_seconds')?.get();
        t.ok(
          latency?.values.some((v) => v.labels['operation'] === 'originate' && v.value > 0),
          'the daemon placed the call through Asterisk (an originate was timed)',
        );
      }
      const [sum] = await d.sql<{ s: string }[]>`select coalesce(sum(amount), 0)::text as s from entries`;
      t.equal(Number(sum!.s), 0, 'the ledger balances');
    },
  );
}
