import t from 'tap';
import { createWorld } from '../../sip-trunks/world.js';

t.test('rate sheets: validation preview, download, history, increase notices to buyers', async (t) => {
  const w = await createWorld(t);
  const r = await w.route({ port: 9, prefix: '4424', rate: '0.013700' });
  const upload = (csv: string) =>
    w.api('POST', `/routes/${r.routeId}/rates`, w.seller.token, {
      format: 'csv',
      csv: `prefix,destination,rate,increment\n${csv}`,
    });
  const validate = (csv: string) =>
    w.api('POST', `/routes/${r.routeId}/rates/validate`, w.seller.token, {
      format: 'csv',
      csv: `prefix,destination,rate,increment\n${csv}`,
    });

  const bad = await validate('4424,UK,abc,6/6\n4425,UK,0.010000,6/6\n');
  t.equal(bad.status, 200, bad.text);
  t.match(bad.body.data, { valid: false, errorCount: 1, errors: [{ line: 2 }], changes: null });
  const good = await validate('4424,UK test,0.015000,6/6\n4425,UK,0.010000,6/6\n');
  t.match(good.body.data, {
    valid: true,
    rows: 2,
    changes: { increases: 1, newDestinations: 1, scheduledChanges: 1, decreases: 0 },
  });
  t.ok(good.body.data.changes.firstScheduledAt, 'the increase waits for the notice period');
  const still = await w.api('GET', `/routes/${r.routeId}/rates`, w.seller.token);
  t.same(
    still.body.data.rows.map((x: { prefix: string; rate: string }) => [x.prefix, x.rate]),
    [['4424', '0.013700']],
    'validation writes nothing',
  );
  t.equal(
    (await w.api('POST', `/routes/${r.routeId}/rates/validate`, w.operator.token, { format: 'csv', csv: '' })).status,
    404,
  );

  const applied = await upload('4424,UK test,0.015000,6/6\n4425,UK,0.010000,6/6\n');
  t.equal(applied.status, 200, applied.text);
  const [notice] = await w.d.sql<{ data: Record<string, unknown> }[]>`
    select data from events where account_id = ${w.operator.accountId} and event = 'route.rate_increase_scheduled'`;
  t.match(notice!.data, { routeId: r.routeId, purchaseId: r.purchaseId, increases: 1, removals: 0, noticeDays: 7 });
  t.notOk(JSON.stringify(notice).includes(w.seller.accountId), 'the seller is not named');
  const lower = await upload('4424,UK test,0.015000,6/6\n4425,UK,0.009000,6/6\n');
  t.equal(lower.body.data.decreases, 1);

  const json = await w.api('GET', `/routes/${r.routeId}/rates/download?format=json`, w.operator.token);
  t.equal(json.status, 200, json.text);
  t.same(
    json.body.data.rows.map((x: { prefix: string; rate: string }) => [x.prefix, x.rate]),
    [
      ['4424', '0.013700'],
      ['4425', '0.009000'],
    ],
    'in force now: the increase is still scheduled',
  );
  const csv = await w.api('GET', `/routes/${r.routeId}/rates/download`, w.seller.token);
  t.equal(csv.status, 200);
  const lines = csv.text.trim().split('\n');
  t.equal(lines[0], 'prefix,destination,rate,increment,mcc_mnc,origin,effective_date');
  t.match(lines[1], /^4424,UK test,0\.013700,6\/6,,,\d{4}-/);
  t.equal(lines.length, 3);
  const reup = await w.api('POST', `/routes/${r.routeId}/rates/validate`, w.seller.token, {
    format: 'csv',
    csv: csv.text,
  });
  t.match(reup.body.data, { valid: true }, 'a download uploads back');

  const history = await w.api('GET', `/routes/${r.routeId}/rates/history`, w.operator.token);
  t.equal(history.status, 200, history.text);
  t.same(
    history.body.data.rows.map((x: { prefix: string; rate: string; state: string }) => [x.prefix, x.rate, x.state]),
    [
      ['4424', '0.015000', 'scheduled'],
      ['4424', '0.013700', 'in_force'],
      ['4425', '0.009000', 'in_force'],
      ['4425', '0.010000', 'archived'],
    ],
  );
  const one = await w.api('GET', `/routes/${r.routeId}/rates/history?prefix=4425&limit=1`, w.operator.token);
  t.match(one.body.data, { total: 2, rows: [{ prefix: '4425', state: 'in_force' }] });
});
