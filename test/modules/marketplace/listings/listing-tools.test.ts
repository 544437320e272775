import t from 'tap';
import { optionsUas, sipp } from '../../../telephony/sip/sipp.js';
import { createWorld, expectExit } from '../../sip-trunks/world.js';

t.test(
  'marketplace routes: endpoints, bulk status and terms, notice, exports, sales, buyers, watch list, facets, compare',
  async (t) => {
    const w = await createWorld(t);
    const uas = await sipp(t, optionsUas(200), [], { calls: 1 });
    const r1 = await w.route({ port: uas.port, prefix: '4424', rate: '0.013700' });
    const r2 = await w.route({ port: 9, prefix: '4424', rate: '0.011000' });
    const seller = (method: string, url: string, body?: unknown) => w.api(method, url, w.seller.token, body);
    const buyer = (method: string, url: string, body?: unknown) => w.api(method, url, w.operator.token, body);

    await t.test('saved endpoints: list, one, check, order', async (t) => {
      const all = await seller('GET', '/routes/my-endpoints');
      t.equal(all.status, 200, all.text);
      t.equal(all.body.data.total, 2);
      const one = await seller('GET', `/routes/my-endpoints?routeId=${r1.routeId}`);
      t.match(one.body.data, { total: 1, rows: [{ routeId: r1.routeId, port: uas.port, hasPassword: false }] });
      const id = one.body.data.rows[0].id as string;
      t.match((await seller('GET', `/routes/my-endpoints/${id}`)).body.data, { id, routeId: r1.routeId });
      t.equal((await buyer('GET', `/routes/my-endpoints/${id}`)).status, 404, 'another account’s endpoint');
      const check = await seller('POST', `/routes/my-endpoints/${id}/test`);
      t.equal(check.status, 200, check.text);
      t.match(check.body.data, { endpointId: id, ok: true, method: 'options', status: 200, problems: [] });
      await expectExit(t, uas, 'one OPTIONS answered');
      const added = await seller('POST', '/routes/my-endpoints', {
        routeId: r1.routeId,
        host: '192.0.2.7',
        port: 5062,
      });
      t.equal(added.status, 201, added.text);
      const order = await seller('PUT', `/routes/${r1.routeId}/endpoints/order`, {
        endpointIds: [added.body.data.id, id],
      });
      t.equal(order.status, 200, order.text);
      t.same(
        order.body.data.rows.map((e: { id: string; priority: number }) => [e.id, e.priority]),
        [
          [added.body.data.id, 1],
          [id, 2],
        ],
      );
      const partial = await seller('PUT', `/routes/${r1.routeId}/endpoints/order`, { endpointIds: [id] });
      t.equal(partial.status, 400, 'every endpoint once');
    });

    await t.test('bulk status and terms with a dry run; notice period', async (t) => {
      const dry = await seller('POST', '/routes/my/bulk-status', { action: 'pause', dryRun: true });
      t.equal(dry.status, 200, dry.text);
      t.match(dry.body.data, { dryRun: true, matched: 2, updated: 0 });
      t.equal((await seller('GET', `/routes/${r1.routeId}`)).body.data.status, 'active', 'a dry run writes nothing');
      const paused = await seller('POST', '/routes/my/bulk-status', {
        routeIds: [r1.routeId, r2.routeId, '01a213c9-0000-7000-8000-000000000000'],
        action: 'pause',
      });
      t.match(paused.body.data, { updated: 2, notFound: ['01a213c9-0000-7000-8000-000000000000'] });
      t.equal((await seller('GET', `/routes/${r2.routeId}`)).body.data.status, 'paused');
      // The deck cache took the new status from one re-read: paused listings leave the price look-up.
      const priced = await buyer('GET', '/routes/price-number?number=%2B442400000001&type=voice');
      t.equal(priced.status, 200, priced.text);
      t.equal(priced.body.data.total, 0, 'paused listings are out of the price look-up at once');
      const again = await seller('POST', '/routes/my/bulk-status', { routeIds: [r2.routeId], action: 'pause' });
      t.match(again.body.data, { updated: 0, unchanged: [r2.routeId] });
      const resumed = await seller('POST', '/routes/my/bulk-status', { action: 'resume' });
      t.match(resumed.body.data, { updated: 2 });
      const back = await buyer('GET', '/routes/price-number?number=%2B442400000001&type=voice');
      t.equal(back.body.data.total, 2, 'resumed listings are priced again');
      const terms = await seller('POST', '/routes/my/bulk-terms', {
        terms: { capacity: 40, cliType: 'cli', expectedAsr: 45 },
      });
      t.equal(terms.status, 200, terms.text);
      t.match(terms.body.data, { matched: 2, updated: 2 });
      t.match((await seller('GET', `/routes/${r2.routeId}`)).body.data, {
        capacity: 40,
        cliType: 'cli',
        expectedAsr: 45,
      });
      t.equal((await seller('POST', '/routes/my/bulk-terms', { terms: {} })).status, 400);
      const notice = await seller('PUT', `/routes/${r1.routeId}/notice-period`, { noticeDays: 14 });
      t.match(notice.body.data, { noticeDays: 14 });
      t.equal((await buyer('PUT', `/routes/${r1.routeId}/notice-period`, { noticeDays: 1 })).status, 404);
    });

    await t.test('export, SMS delivery, sales, buyers, summary', async (t) => {
      const csv = await seller('GET', '/routes/my/export');
      t.equal(csv.status, 200);
      const lines = csv.text.trim().split('\n');
      t.match(lines[0], /^id,name,type,country,visibility,status,cli_type/);
      t.equal(lines.length, 3);
      const sms = await seller('POST', '/routes', {
        type: 'sms',
        name: 'sms GB',
        country: 'GB',
        smsDelivery: {
          kind: 'http',
          url: 'https://192.0.2.50/submit?token=secret-token',
          signingSecret: 'a-long-shared-secret-1234',
        },
      });
      t.equal(sms.status, 201, sms.text);
      const d = await seller('GET', `/routes/${sms.body.data.id}/sms-delivery`);
      t.same(d.body.data, {
        routeId: sms.body.data.id,
        kind: 'http',
        url: 'https://192.0.2.50/submit',
        hasAuthorization: false,
        hasSigningSecret: true,
      });
      t.notOk(d.text.includes('secret-token'), 'no secret in the answer');
      t.equal((await seller('GET', `/routes/${r1.routeId}/sms-delivery`)).status, 400, 'a voice route');
      const sales = await seller('GET', `/routes/${r1.routeId}/sales`);
      t.equal(sales.status, 200, sales.text);
      t.match(sales.body.data, { routeId: r1.routeId, activeBuyers: 1, newPurchases: 1, revenue: '0.000000' });
      t.equal((await buyer('GET', `/routes/${r1.routeId}/sales`)).status, 404);
      const daily = await seller('GET', '/routes/my/sales/daily?days=7');
      t.match(daily.body.data, { days: 7, rows: [] });
      const buyers = await seller('GET', `/routes/my/buyers?routeId=${r1.routeId}`);
      t.equal(buyers.status, 200, buyers.text);
      t.match(buyers.body.data, {
        total: 1,
        rows: [{ buyer: /^Buyer [0-9A-F]{6}$/, routeId: r1.routeId, status: 'active' }],
      });
      t.notOk(buyers.text.includes(w.operator.accountId), 'the buyer is never named');
      const summary = await seller('GET', '/routes/my/summary');
      t.match(summary.body.data, {
        listings: { active: 3, paused: 0, public: 3 },
        buyers: 1,
        activePurchases: 2,
        revenue30d: '0.000000',
      });
    });

    await t.test('watch list, watchers, CLI types, facets, similar, compare, quality', async (t) => {
      t.equal((await seller('PUT', `/routes/${r1.routeId}/watch`)).status, 400, 'not an own listing');
      const watched = await buyer('PUT', `/routes/${r1.routeId}/watch`);
      t.match(watched.body.data, { routeId: r1.routeId, watching: true });
      t.equal((await buyer('PUT', `/routes/${r1.routeId}/watch`)).status, 200, 'idempotent');
      const list = await buyer('GET', '/routes/watchlist');
      t.match(list.body.data, { total: 1, rows: [{ route: { id: r1.routeId } }] });
      const watchers = await seller('GET', '/routes/my/watchers');
      t.match(
        watchers.body.data.find((x: { routeId: string }) => x.routeId === r1.routeId),
        { watchers: 1 },
      );
      t.equal((await buyer('DELETE', `/routes/${r1.routeId}/watch`)).status, 200);
      t.equal((await buyer('DELETE', `/routes/${r1.routeId}/watch`)).status, 404);

      const cli = await buyer('GET', '/routes/cli-types');
      t.match(
        cli.body.data.find((x: { cliType: string }) => x.cliType === 'cli'),
        { voiceRoutes: 2 },
      );
      t.ok(
        cli.body.data.some((x: { cliType: string }) => x.cliType === 'tdm'),
        'the catalogue',
      );
      const facets = await buyer('GET', '/routes/facets?type=voice');
      t.match(facets.body.data, {
        routes: 2,
        countries: [{ value: 'GB', routes: 2 }],
        cliTypes: [{ value: 'cli', routes: 2 }],
      });
      const similar = await buyer('GET', `/routes/${r1.routeId}/similar`);
      t.same(
        similar.body.data.map((x: { id: string }) => x.id),
        [r2.routeId],
      );
      const cmp = await buyer('GET', `/routes/compare?ids=${r1.routeId},${r2.routeId}&number=442400000001`);
      t.equal(cmp.status, 200, cmp.text);
      // Platform fee 0.002000/min (config default): 0.011000 + 0.002000, 0.013700 + 0.002000.
      t.match(cmp.body.data.routes, [
        { routeId: r2.routeId, covered: true, price: '0.013000' },
        { routeId: r1.routeId, covered: true, price: '0.015700' },
      ]);
      const q = await buyer('GET', `/routes/${r1.routeId}/quality`);
      t.equal(q.status, 200, q.text);
      t.match(q.body.data.windows, [
        { days: 1, calls: null, enoughData: false },
        { days: 7, calls: null },
        { days: 30, calls: null },
      ]);
      const own = await seller('GET', `/routes/${r1.routeId}/quality`);
      t.match(own.body.data.windows[0], { days: 1, calls: 0 }, 'the seller sees its figures');
    });
  },
);
