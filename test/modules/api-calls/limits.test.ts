import { randomUUID } from 'node:crypto';
import t from 'tap';
import { createWorld, eventually, expectExit, uac, uacScenario } from '../sip-trunks/world.js';
import { answering, answeringMany, available, exitOk, refusingMany } from './peers.js';

/**
 * Limits on calls placed through the API, counted in the same counters as trunk calls: the
 * account's concurrent API calls (`[voice] max_api_calls_per_account`), a sub-account's
 * `maxConcurrentCalls`, a route's `capacity` and `maxCps`. Over one: 429 RATE_LIMITED at once,
 * nothing held, nothing dialled.
 */
t.test(
  'API call limits, shared with trunk calls',
  { skip: available ? false : 'sipp or espeak-ng not installed' },
  async (t) => {
    const rtp = 43000 + (process.pid % 200) * 40;
    const w = await createWorld(t, {
      voice: { max_api_calls_per_account: 2 },
      rtp: { port_min: rtp, port_max: rtp + 39, bind_address: '127.0.0.1' },
    });
    const { d, operator } = w;
    const sql = d.sql;
    const services = d.modules.services;
    // A key per request: the route allows 10 requests a second per credential.
    const post = async (body: Record<string, unknown>, token?: string) => {
      const key =
        token ?? (await services.keys.create(operator.accountId, { mode: 'live', scopes: ['voice:send'] })).secret;
      const r = await d.app.inject({
        method: 'POST',
        url: '/api/v1/comms/calls',
        headers: { authorization: `Bearer ${key}`, 'x-idempotency-key': randomUUID() },
        payload: { from: '+15550001111', ...body },
      });
      return { status: r.statusCode, body: r.json(), retryAfter: r.headers['retry-after'] };
    };
    const callsTo = async (to: string) =>
      (await sql<{ n: string }[]>`select count(*)::text as n from calls where to_number = ${to}`)[0]!.n;
    const ended = (id: string) =>
      eventually(
        async () => (await sql`select 1 from calls where id = ${id} and ended_at is not null`).length > 0,
        20_000,
      );

    t.test('account: the third concurrent API call is refused with 429 until one ends', async (t) => {
      const to = '+448100000001';
      const peer = await answeringMany(t, to.slice(1));
      await w.route({ port: peer.port, prefix: '4481', rate: '0.010000' });
      const held = [
        await post({ to, async: true, actions: [{ pause: 3 }] }),
        await post({ to, async: true, actions: [{ pause: 3 }] }),
      ];
      t.same(
        held.map((r) => r.status),
        [202, 202],
        'two calls in progress',
      );
      const before = await services.ledger.balanceOf(operator.accountId);
      const refused = await post({ to, async: true, actions: [{ pause: 1 }] });
      t.equal(refused.status, 429);
      t.equal(refused.body.success, false);
      t.equal(refused.body.error.code, 'RATE_LIMITED');
      t.match(refused.body.error.message, /Concurrent call limit reached: 2 API calls/);
      t.same(refused.body.error.details, { limit: 'api-calls', max: 2 });
      t.equal(refused.retryAfter, '5');
      t.equal(await callsTo(to), '2', 'no call record for the refused request');
      t.equal((await services.ledger.balanceOf(operator.accountId)).held, before.held, 'nothing held for it');

      for (const r of held) await ended(r.body.data.callId as string);
      const again = await post({ to, actions: [{ pause: 1 }] });
      t.equal(again.status, 200, 'admitted once the others ended');
      t.equal(again.body.data.status, 'completed', JSON.stringify(again.body.data));
      const statuses = await sql`select status from calls where to_number = ${to} order by created_at`;
      t.same(
        statuses.map((r) => r['status']),
        ['completed', 'completed', 'completed'],
        `all three reached sipp on ${peer.port}`,
      );
      t.equal((await services.ledger.balanceOf(operator.accountId)).held, '0.000000', 'no hold left');
    });

    t.test(
      'route capacity: a trunk call fills it for API calls, and an API call fills it for trunk calls',
      async (t) => {
        const number = '448200000001';
        const peer = await answeringMany(t, number);
        const { routeId } = await w.route({ port: peer.port, prefix: '4482', rate: '0.010000', capacity: 1 });
        const sub = await w.sub({ fund: '5.000000' });

        const trunk = await uac(
          t,
          w.sipPort,
          uacScenario('uac-tail-answer.xml', { HOLD_MS: '3000' }),
          number,
          sub.sipUsername,
          sub.sipPassword,
        );
        await eventually(
          async () => (await sql`select 1 from calls where account_id = ${sub.id} and status = 'answered'`).length > 0,
        );
        const refused = await post({ to: `+${number}`, routeId, actions: [{ pause: 1 }] });
        t.equal(refused.status, 429, 'the trunk call holds the only channel');
        t.equal(refused.body.error.code, 'RATE_LIMITED');
        t.same(refused.body.error.details, { limit: 'capacity' });
        t.equal(await callsTo(`+${number}`), '0');
        await expectExit(t, trunk, 'trunk call completed');
        // The trunk plane gives its channel back after settling the call.
        await eventually(async () => !services.calls.liveSlots().has(`route:${routeId}`));

        const api = await post({ to: `+${number}`, async: true, actions: [{ pause: 3 }] });
        t.equal(api.status, 202);
        await eventually(
          async () =>
            (await sql`select 1 from calls where id = ${api.body.data.callId as string} and status = 'answered'`)
              .length > 0,
          10_000,
        );
        const before = services.calls.refusals()['capacity'] ?? 0;
        const second = await uac(
          t,
          w.sipPort,
          uacScenario('uac-tail-final.xml', { FINAL: '503' }),
          number,
          sub.sipUsername,
          sub.sipPassword,
        );
        await expectExit(t, second, 'trunk call refused with 503 while the API call holds the channel');
        t.equal(services.calls.refusals()['capacity'], before + 1);
        await ended(api.body.data.callId as string);
        const [rec] = await sql`select status, route_id from calls where id = ${api.body.data.callId as string}`;
        t.match(rec, { status: 'completed', routeId }, `the API call reached sipp on ${peer.port}`);
        await eventually(
          async () => (await sql`select 1 from calls where account_id = ${sub.id} and ended_at is null`).length === 0,
        );
        t.equal((await services.ledger.balanceOf(sub.id)).held, '0.000000');
        t.equal((await services.ledger.balanceOf(operator.accountId)).held, '0.000000');
      },
    );

    t.test('sub-account maxConcurrentCalls counts its trunk and API calls together', async (t) => {
      const number = '448300000001';
      const peer = await answering(t, number);
      await w.route({ port: peer.port, prefix: '4483', rate: '0.010000' });
      const app = services.application;
      const created = await app.create(operator.accountId, {
        label: `limits ${randomUUID().slice(0, 8)}`,
        maxConcurrentCalls: 1,
      });
      await app.credit(operator.accountId, created.id, { amount: '5.000000' }, `fund-${created.id}`);
      const trunk = await uac(
        t,
        w.sipPort,
        uacScenario('uac-tail-answer.xml', { HOLD_MS: '2000' }),
        number,
        created.sipUsername,
        created.sipPassword,
      );
      await eventually(
        async () =>
          (await sql`select 1 from calls where account_id = ${created.id} and status = 'answered'`).length > 0,
      );
      const refused = await post({ to: `+${number}`, actions: [{ pause: 1 }] }, created.apiKey);
      t.equal(refused.status, 429);
      t.same(refused.body.error.details, { limit: 'sub-account-calls', max: 1 });
      t.match(refused.body.error.message, /sub-account allows 1 calls at once/);
      await expectExit(t, trunk, 'trunk call completed');
      await exitOk(t, peer, 'the supplier saw the trunk call and got its BYE');
      await eventually(
        async () => (await sql`select 1 from calls where account_id = ${created.id} and ended_at is null`).length === 0,
      );
      t.equal(await callsTo(`+${number}`), '0', 'no API call record');
      t.equal((await services.ledger.balanceOf(created.id)).held, '0.000000');
    });

    t.test('route maxCps: calls over it in one second are refused', async (t) => {
      const to = '+448400000001';
      // Refuses with 404 (never failed over): admitted calls end at once and cost nothing.
      const peer = await refusingMany(t, 404, 'Not Found');
      const { routeId } = await w.route({ port: peer.port, prefix: '4484', rate: '0.010000' });
      await sql`update routes set max_cps = 1 where id = ${routeId}`;
      // Two of the operator's and one of a sub-account's: under both accounts' caps of 2 API calls.
      const sub = await services.application.create(operator.accountId, { label: `cps ${randomUUID().slice(0, 8)}` });
      await services.application.credit(operator.accountId, sub.id, { amount: '5.000000' }, `fund-${sub.id}`);
      const keys = [
        ...(await Promise.all(
          [1, 2].map(
            async () =>
              (await services.keys.create(operator.accountId, { mode: 'live', scopes: ['voice:send'] })).secret,
          ),
        )),
        sub.apiKey,
      ];
      // Three within a second span at most two one-second windows: at most two pass.
      const results = await Promise.all(keys.map((k) => post({ to, async: true, actions: [{ pause: 1 }] }, k)));
      const refused = results.filter((r) => r.status === 429);
      t.ok(refused.length >= 1, `${refused.length} of 3 refused`);
      t.ok(
        results.every((r) => r.status === 429 || r.status === 202),
        JSON.stringify(results.map((r) => r.status)),
      );
      for (const r of refused) {
        t.same(r.body.error.details, { limit: 'cps' });
        t.equal(r.retryAfter, '1');
      }
      for (const r of results.filter((x) => x.status === 202)) await ended(r.body.data.callId as string);
      t.equal(await callsTo(to), String(3 - refused.length), 'a record only for the admitted calls');
      const statuses = await sql`select status, sip_response_code from calls where to_number = ${to}`;
      t.ok(
        statuses.every((r) => r['status'] === 'failed' && r['sipResponseCode'] === 404),
        'the admitted calls reached the route',
      );
      t.equal((await services.ledger.balanceOf(operator.accountId)).held, '0.000000');
    });
  },
);
