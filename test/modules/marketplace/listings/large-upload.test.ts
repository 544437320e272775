import { setTimeout as delay } from 'node:timers/promises';
import t from 'tap';
import { Decimal } from 'decimal.js';
import { bearer, buildTestApp } from '../../../helpers/app.js';

// Row i: prefix "9" + 6-digit i, rate (i mod 9973 + 1) / 1e6.
const ROWS = 200_000;
const prefixOf = (i: number): string => `9${String(i).padStart(6, '0')}`;
const rateOf = (i: number): string => new Decimal((i % 9973) + 1).div(1e6).toFixed(6);

t.test('a 200,000-row sheet uploads over HTTP as a job and prices correctly', async (t) => {
  const h = await buildTestApp(t);
  const seller = await h.signUp();
  const buyer = await h.signUp();
  const created = await h.app.inject({
    method: 'POST',
    url: '/api/v1/routes',
    headers: bearer(seller.session),
    payload: { type: 'voice', name: 'World', endpoints: [{ host: '192.0.2.1' }], billingIncrement: '6/6' },
  });
  t.equal(created.statusCode, 201, created.body);
  const id = created.json().data.id as string;
  const lines = ['prefix,destination,rate,increment'];
  for (let i = 0; i < ROWS; i++)
    lines.push(`${prefixOf(i)},Zone ${i % 300},${rateOf(i)},${i % 3 === 0 ? '60/60' : ''}`);
  const up = await h.app.inject({
    method: 'POST',
    url: `/api/v1/routes/${id}/rates`,
    headers: bearer(seller.session),
    payload: { format: 'csv', csv: lines.join('\n') },
  });
  t.equal(up.statusCode, 202, up.body.slice(0, 500));
  const jobUrl = `/api/v1/routes/${id}/rates/jobs/${up.json().data.jobId as string}`;
  let job = up.json().data;
  while (job.status !== 'completed' && job.status !== 'failed') {
    await delay(50);
    job = (await h.app.inject({ method: 'GET', url: jobUrl, headers: bearer(seller.session) })).json().data;
  }
  t.match(job.result, { rows: ROWS, newDestinations: ROWS });

  const [count] = await h.sql<
    { n: string }[]
  >`select count(*)::text as n from rate_rows where route_id = ${id} and effective_to is null`;
  t.equal(count!.n, String(ROWS));
  t.equal(
    (
      await h.app.inject({
        method: 'POST',
        url: '/api/v1/purchases',
        headers: bearer(buyer.session),
        payload: { routeId: id },
      })
    ).statusCode,
    201,
  );
  for (const i of [0, 1, 2, 99_999, 123_456, 199_999]) {
    const [c] = await h.services.routing.candidatesFor({
      accountId: buyer.accountId,
      number: `+${prefixOf(i)}4455`,
      type: 'voice',
    });
    t.equal(c?.matchedPrefix, prefixOf(i));
    t.equal(c?.sellerRate.toFixed(6), rateOf(i));
    t.equal(c?.price.toFixed(6), new Decimal(rateOf(i)).plus('0.002').toFixed(6), 'seller rate plus the 0.002/min fee');
    t.equal(c?.increment.text, i % 3 === 0 ? '60/60' : '6/6', 'empty increment takes the route default');
  }
  const page = await h.app.inject({
    method: 'GET',
    url: `/api/v1/routes/${id}/rates?prefix=9123456`,
    headers: bearer(buyer.session),
  });
  t.same(
    page.json().data.rows.map((r: { prefix: string; rate: string }) => [r.prefix, r.rate]),
    [[prefixOf(123_456), rateOf(123_456)]],
  );
  t.equal(
    (
      await h.app.inject({ method: 'GET', url: `/api/v1/routes/${id}/rates?limit=1`, headers: bearer(buyer.session) })
    ).json().data.total,
    ROWS,
  );
});
