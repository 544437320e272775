import { randomUUID } from 'node:crypto';
import t from 'tap';
import { createWorld, eventually } from '../sip-trunks/world.js';
import { answeringMany, available } from './peers.js';

/**
 * 50 async calls at once with `[voice] max_api_calls_per_account` 20 and none live before:
 * exactly 20 admitted, the other 30 refused with the limit's 429 (none for any other reason).
 */
for (const backend of ['redis', 'in-process'] as const) {
  t.test(
    `parallel async calls (${backend} counters): admitted up to the limit, the rest refused`,
    { skip: available ? false : 'sipp or espeak-ng not installed' },
    async (t) => {
      const rtp = 45000 + (process.pid % 50) * 120 + (backend === 'redis' ? 60 : 0);
      const w = await createWorld(t, {
        voice: { max_api_calls_per_account: 20 },
        rtp: { port_min: rtp, port_max: rtp + 59, bind_address: '127.0.0.1' },
        ...(backend === 'redis' ? { redis: { url: 'redis://127.0.0.1:6379' } } : {}),
      });
      const { d, operator } = w;
      const services = d.modules.services;
      const to = '+448900000001';
      const peer = await answeringMany(t, to.slice(1));
      await w.route({ port: peer.port, prefix: '4489', rate: '0.010000' });
      // A key per request: the route allows 10 requests a second per credential.
      const keys = await Promise.all(
        Array.from(
          { length: 50 },
          async () => (await services.keys.create(operator.accountId, { mode: 'live', scopes: ['voice:send'] })).secret,
        ),
      );
      const results = await Promise.all(
        keys.map(async (key) => {
          const r = await d.app.inject({
            method: 'POST',
            url: '/api/v1/comms/calls',
            headers: { authorization: `Bearer ${key}`, 'x-idempotency-key': randomUUID() },
            payload: { from: '+15550001111', to, async: true, actions: [{ pause: 2 }] },
          });
          return { status: r.statusCode, body: r.json() };
        }),
      );
      const admitted = results.filter((r) => r.status === 202);
      const refused = results.filter((r) => r.status === 429);
      t.equal(admitted.length, 20, `statuses: ${JSON.stringify(results.map((r) => r.status))}`);
      t.equal(refused.length, 30);
      t.ok(
        refused.every(
          (r) =>
            r.body.error.code === 'RATE_LIMITED' &&
            r.body.error.details.limit === 'api-calls' &&
            r.body.error.details.max === 20,
        ),
        JSON.stringify(refused[0]?.body),
      );
      for (const r of admitted) {
        await eventually(
          async () =>
            (await d.sql`select 1 from calls where id = ${r.body.data.callId as string} and ended_at is not null`)
              .length > 0,
          60_000,
        );
      }
      t.equal((await services.ledger.balanceOf(operator.accountId)).held, '0.000000', 'no hold left');
      await eventually(async () => !services.calls.liveSlots().has(`api:${operator.accountId}`), 10_000);
    },
  );
}
