import t from 'tap';
import { createWorld } from '../../sip-trunks/world.js';

t.test(
  'rate sheets: versions, diff, restore, row edits, bulk upload, A-Z and network views, lookup, templates',
  async (t) => {
    const w = await createWorld(t);
    const r = await w.route({ port: 9, prefix: '4424', rate: '0.013700' });
    const base = `/routes/${r.routeId}/rates`;
    const seller = (method: string, url: string, body?: unknown) => w.api(method, url, w.seller.token, body);

    const added = await seller('POST', `${base}/rows`, {
      rows: [
        { prefix: '4425', destination: 'UK 5', rate: '0.010000' },
        { prefix: '44', destination: 'United Kingdom', rate: '0.020000', increment: '60/60' },
      ],
    });
    t.equal(added.status, 200, added.text);
    t.match(added.body.data, { sheetVersion: 2, newDestinations: 2, unchanged: 1, rows: 3 });
    const bad = await seller('POST', `${base}/rows`, { rows: [{ prefix: '4426', destination: 'x', rate: '-1' }] });
    t.equal(bad.status, 400, 'a bad row is refused by the schema');
    const unknown = await seller('POST', `${base}/rows/remove`, { rows: [{ prefix: '4499' }] });
    t.equal(unknown.status, 400);
    t.match(unknown.body.error.details, [{ path: '/rows/0/prefix' }]);
    const lower = await seller('POST', `${base}/rows`, {
      rows: [{ prefix: '4424', destination: 'UK test', rate: '0.012000' }],
    });
    t.match(lower.body.data, { sheetVersion: 3, decreases: 1, unchanged: 2 });
    const removed = await seller('POST', `${base}/rows/remove`, { rows: [{ prefix: '4425' }] });
    t.match(removed.body.data, { sheetVersion: 4, removals: 1, scheduledChanges: 1 }, 'a removal waits for notice');
    t.equal(
      (await w.api('POST', `${base}/rows`, w.operator.token, { rows: [{ prefix: '1', destination: 'x', rate: '1' }] }))
        .status,
      404,
    );

    const versions = await seller('GET', `${base}/versions`);
    t.equal(versions.status, 200, versions.text);
    t.same(
      versions.body.data.rows.map((v: { number: number; kind: string }) => [v.number, v.kind]),
      [
        [4, 'rows'],
        [3, 'rows'],
        [2, 'rows'],
        [1, 'upload'],
      ],
    );
    t.equal((await w.api('GET', `${base}/versions`, w.operator.token)).status, 404, 'versions are the seller’s');
    const v1 = await seller('GET', `${base}/versions/1`);
    t.same(
      v1.body.data.rows.map((x: { prefix: string; rate: string }) => [x.prefix, x.rate]),
      [['4424', '0.013700']],
    );
    t.equal((await seller('GET', `${base}/versions/9`)).status, 404);

    const diff = await seller('GET', `${base}/diff?from=1&to=3`);
    t.equal(diff.status, 200, diff.text);
    t.match(diff.body.data.counts, { added: 2, removed: 0, decreases: 1, increases: 0, unchanged: 0 });
    t.same(
      diff.body.data.rows.map((x: { prefix: string; change: string }) => [x.prefix, x.change]),
      [
        ['44', 'added'],
        ['4424', 'decrease'],
        ['4425', 'added'],
      ],
    );
    const dec = await seller('GET', `${base}/diff?from=1&change=decrease`);
    t.match(dec.body.data, {
      to: { number: 4 },
      total: 1,
      rows: [{ prefix: '4424', before: { rate: '0.013700' }, after: { rate: '0.012000' } }],
    });

    await t.test('A-Z view, lookup and jobs', async (t) => {
      const az = await w.api('GET', `${base}/countries`, w.operator.token);
      t.equal(az.status, 200, az.text);
      t.match(az.body.data, {
        countries: 1,
        withoutDefault: 0,
        rows: [
          {
            countryCode: '44',
            country: 'GB',
            name: 'United Kingdom',
            rows: 3,
            lowest: '0.010000',
            highest: '0.020000',
            countryDefault: { rate: '0.020000', increment: '60/60' },
          },
        ],
      });
      const look = await w.api('GET', `${base}/lookup?number=%2B442500000001`, w.operator.token);
      t.equal(look.status, 200, look.text);
      t.match(look.body.data, {
        covered: true,
        row: { prefix: '4425', rate: '0.010000', effectiveTo: String },
        scheduled: null,
      });
      const country = await w.api('GET', `${base}/lookup?number=447700000001`, w.operator.token);
      t.match(country.body.data, { row: { prefix: '44', rate: '0.020000' } });
      const none = await w.api('GET', `${base}/lookup?number=33100000000`, w.operator.token);
      t.match(none.body.data, { covered: false, row: null });
      const jobs = await seller('GET', `${base}/jobs`);
      t.match(jobs.body.data, { rows: [], total: 0 });
    });

    await t.test('restore brings version 1 back under the notice rules', async (t) => {
      const res = await seller('POST', `${base}/versions/1/restore`);
      t.equal(res.status, 200, res.text);
      t.match(res.body.data, { sheetVersion: 5, increases: 1, removals: 2, scheduledChanges: 3 });
      const head = await seller('GET', `${base}/versions?limit=1`);
      t.match(head.body.data.rows[0], { number: 5, kind: 'restore', restoredFrom: 1 });
      const look = await w.api('GET', `${base}/lookup?number=442400000001`, w.operator.token);
      t.match(
        look.body.data,
        { row: { rate: '0.012000' }, scheduled: { rate: '0.013700' } },
        'the increase is scheduled',
      );
    });

    await t.test('bulk upload: checked for every route first, dry run, then applied', async (t) => {
      const r2 = await w.route({ port: 9, prefix: '4420', rate: '0.011000' });
      const sheet = { format: 'csv', csv: 'prefix,destination,rate,increment\n4420,London,0.009000,6/6\n' };
      const foreign = { body: { data: { id: '01a213c9-0000-7000-8000-000000000000' } } };
      const refused = await seller('POST', '/routes/my/bulk-rates', {
        ...sheet,
        routeIds: [r2.routeId, foreign.body.data.id],
      });
      t.equal(refused.status, 400);
      t.match(refused.body.error.details, [{ path: '/routeIds/1' }]);
      const dry = await seller('POST', '/routes/my/bulk-rates', {
        ...sheet,
        routeIds: [r.routeId, r2.routeId],
        dryRun: true,
      });
      t.equal(dry.status, 200, dry.text);
      t.match(dry.body.data, {
        dryRun: true,
        routes: [
          { rows: 1, result: null },
          { rows: 1, result: null },
        ],
      });
      const done = await seller('POST', '/routes/my/bulk-rates', { ...sheet, routeIds: [r.routeId, r2.routeId] });
      t.equal(done.status, 200, done.text);
      t.match(done.body.data.routes, [
        { routeId: r.routeId, result: { sheetVersion: 6, newDestinations: 1 } },
        { routeId: r2.routeId, result: { sheetVersion: 2, decreases: 1 } },
      ]);
      const v = await seller('GET', `/routes/${r2.routeId}/rates/versions?limit=1`);
      t.match(v.body.data.rows[0], { kind: 'bulk' });
    });

    await t.test('per-network SMS view and lookup; templates', async (t) => {
      const sms = await seller('POST', '/routes', {
        type: 'sms',
        name: 'sms GB',
        country: 'GB',
        smsDelivery: { kind: 'http', url: 'https://192.0.2.50/submit', signingSecret: 'a-long-shared-secret-1234' },
      });
      t.equal(sms.status, 201, sms.text);
      const id = sms.body.data.id as string;
      const up = await seller('POST', `/routes/${id}/rates`, {
        format: 'json',
        rows: [
          { prefix: '44', destination: 'United Kingdom', rate: '0.030000' },
          { prefix: '44', destination: 'United Kingdom EE', rate: '0.025000', mccMnc: '234-30' },
        ],
      });
      t.equal(up.status, 200, up.text);
      const nets = await seller('GET', `/routes/${id}/rates/networks?country=GB`);
      t.equal(nets.status, 200, nets.text);
      t.match(nets.body.data, { total: 1, rows: [{ mccMnc: '234-30', rate: '0.025000', countryRate: '0.030000' }] });
      const look = await seller('GET', `/routes/${id}/rates/lookup?number=447700900000&mccMnc=234-30`);
      t.match(look.body.data, {
        mccMnc: '234-30',
        row: { mccMnc: '234-30', rate: '0.025000' },
        countryRow: { rate: '0.030000' },
      });
      const list = await seller('GET', '/routes/rate-templates');
      t.same(
        list.body.data.map((x: { name: string }) => x.name),
        ['az-voice', 'az-sms', 'sms-networks'],
      );
      const az = await seller('GET', '/routes/rate-templates/az-voice');
      t.equal(az.status, 200);
      const lines = az.text.trim().split('\n');
      t.equal(lines[0], 'prefix,destination,rate,increment,mcc_mnc,effective_date');
      t.ok(lines.includes('44,United Kingdom,,,,'), 'a country default row per calling code');
      t.ok(lines.length > 200);
      const gb = await seller('GET', '/routes/rate-templates/sms-networks?country=GB&format=json');
      t.equal(gb.status, 200, gb.text);
      t.match(gb.body.data.rows[0], { prefix: '44', mccMnc: null });
      t.ok(gb.body.data.rows.length > 3, 'one row per known GB network');
      t.ok(gb.body.data.rows.slice(1).every((x: { mccMnc: string }) => /^234-/.test(x.mccMnc)));
      t.equal((await seller('GET', '/routes/rate-templates/sms-networks')).status, 400, 'needs a country');
    });
  },
);
