import t from 'tap';
import { bearer, buildTestApp } from '../../../helpers/app.js';
import { createManualClock } from '../../../../src/platform/clock.js';
import { newId } from '../../../../src/platform/ids.js';

const NOW = new Date('2026-11-22T00:00:00Z');
const DAY = 86_400_000;

t.test('measured quality from CDRs: 50 calls from two buyers, 7 days then 30 days then latest', async (t) => {
  const clock = createManualClock(NOW);
  const h = await buildTestApp(t, { clock });
  const seller = await h.signUp();
  const b1 = await h.signUp();
  const b2 = await h.signUp();
  const call = async (method: string, url: string, token: string, payload?: unknown) => {
    const r = await h.app.inject({
      method: method as 'GET',
      url: `/api/v1${url}`,
      headers: bearer(token),
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
    return { status: r.statusCode, body: r.json() as { data: any; error: any } }; // eslint-disable-line @typescript-eslint/no-explicit-any
  };
  const route = async (name: string, expectedAsr: number) => {
    const r = await call('POST', '/routes', seller.session, {
      type: 'voice',
      name,
      country: 'GB',
      expectedAsr,
      endpoints: [{ host: '192.0.2.1' }],
    });
    t.equal(r.status, 201);
    await call('POST', `/routes/${r.body.data.id}/rates`, seller.session, {
      format: 'csv',
      csv: 'prefix,destination,rate\n44,UK,0.010\n',
    });
    return r.body.data.id as string;
  };
  const [A, B, C, D, E] = [
    await route('A', 90),
    await route('B', 40),
    await route('C', 40),
    await route('D', 40),
    await route('E', 40),
  ];

  /** `n` voice legs on a route by a buyer, `ageDays` old: the first `answered` answered for 90 s, the rest busy. */
  const cdrs = async (
    routeId: string,
    accountId: string,
    n: number,
    answered: number,
    ageDays: number,
    extra: Record<string, unknown> = {},
  ) => {
    const rows = Array.from({ length: n }, (_, i) => ({
      id: newId(),
      account_id: accountId,
      kind: 'voice',
      route_id: routeId,
      created_at: new Date(NOW.getTime() - ageDays * DAY - i * 1000),
      status: i < answered ? 'completed' : i % 2 === 0 ? 'busy' : 'failed',
      sip_code: i < answered ? 200 : i % 2 === 0 ? 486 : 503,
      duration_seconds: i < answered ? 90 : 0,
      pdd_ms: 1000,
      ...extra,
    }));
    await h.sql`insert into cdrs ${h.sql(rows)}`;
  };
  await cdrs(A, b1.accountId, 40, 40, 1);
  await cdrs(A, b2.accountId, 9, 9, 1); // 49 calls: one short
  await cdrs(A, b2.accountId, 30, 30, 1, { is_probe: true });
  await cdrs(A, b2.accountId, 30, 30, 1, { simulated: true });
  await cdrs(B, b1.accountId, 80, 80, 1); // one buyer only
  await cdrs(C, b1.accountId, 25, 20, 1);
  await cdrs(C, b2.accountId, 25, 20, 1); // 50 calls, 40 answered, 6 busy, 4 failed
  await cdrs(D, b1.accountId, 30, 15, 20);
  await cdrs(D, b2.accountId, 30, 15, 20); // 30-day window, ASR 50
  await cdrs(E, b1.accountId, 3, 3, 1);
  await cdrs(E, b1.accountId, 30, 30, 60);
  await cdrs(E, b2.accountId, 30, 30, 60); // only the latest period qualifies, ASR 100

  clock.advance(61_000); // past the cache of figures read when the routes were listed
  const measured = async (id: string) => (await call('GET', `/routes/${id}`, b1.session)).body.data.measured;
  t.equal(await measured(A), null, '49 real calls is not enough; probes and simulated calls do not count');
  t.equal(await measured(B), null, 'one buyer is not enough');
  t.same(await measured(C), { asr: 80, acd: 90, ner: 92, medianPddMs: 1000, calls: 50, buyers: 2, window: '7d' });
  t.match(await measured(D), { asr: 50, calls: 60, window: '30d' });
  t.match(await measured(E), { asr: 100, calls: 63, window: 'latest' });

  const ids = async (sort: string) =>
    (await call('GET', `/routes?sort=${sort}`, b1.session)).body.data.rows.map((r: { id: string }) => r.id);
  const desc = await ids('measured_asr_desc');
  t.same(desc.slice(0, 3), [E, C, D], 'measured ASR descending');
  t.same(desc.slice(3).sort(), [A, B].sort(), 'routes without measured figures last');
  t.same((await ids('measured_asr_asc')).slice(0, 3), [D, C, E]);
  t.same((await ids('ner_desc')).slice(0, 3), [E, C, D]);
  t.same((await ids('measured_acd_asc')).slice(0, 3), [C, D, E].sort(), 'equal ACDs tie on id');
  t.equal((await ids('quality_desc'))[0], E);
  const page = await call('GET', '/routes?sort=measured_asr_desc&limit=2&offset=1', b1.session);
  t.same(
    page.body.data.rows.map((r: { id: string }) => r.id),
    [C, D],
  );
  t.equal(page.body.data.total, 5);

  // Smart Routing uses the measured figures: C 0.45·0.8 + 0.25·0.3 + 0.2·0.92 + 0.1·0.9 = 0.709;
  // A has only stated figures: (0.45·0.9 + 0.25·0.4 + 0.2·0.9 + 0.1·0.5) × 0.8 = 0.588.
  await call('POST', '/purchases', b1.session, { routeId: A });
  await call('POST', '/purchases', b1.session, { routeId: C });
  const res = await call('GET', '/routes/resolve?number=4420&strategy=best_quality', b1.session);
  t.same(
    res.body.data.routes.map((r: { routeId: string; quality: number }) => [r.routeId, r.quality]),
    [
      [C, 0.709],
      [A, 0.588],
    ],
  );

  // Cached for a minute, then measured again.
  await cdrs(A, b2.accountId, 1, 1, 0);
  t.equal(await measured(A), null, 'cached');
  clock.advance(61_000);
  t.match(await measured(A), { calls: 50, buyers: 2, window: '7d' }, 'the 50th call qualifies it');

  // The market summary's measured ASR counts real calls on public routes over 7 days.
  const summary = (await call('GET', '/markets/summary', b1.session)).body.data;
  t.equal(summary.measuredAsrSample, 50 + 80 + 50 + 3, 'A, B, C and E calls of the last 7 days');
  t.equal(summary.hasActivityData, true);
});
