import { Decimal } from 'decimal.js';
import t from 'tap';
import { sippMediaPort, sipp } from '../../telephony/sip/sipp.js';
import { available, callee } from '../api-calls/peers.js';
import { createWorld } from '../sip-trunks/world.js';

/**
 * The campaign: 2,000 numbers at concurrency 50 against sipp, money checked to the sixth
 * decimal. `DIALER_SCALE_NUMBERS` and `DIALER_SCALE_CONCURRENCY` change the figures.
 */
const N = Number(process.env['DIALER_SCALE_NUMBERS'] ?? 2000);
const CONCURRENCY = Number(process.env['DIALER_SCALE_CONCURRENCY'] ?? 50);

t.test(
  `${N} numbers at concurrency ${CONCURRENCY}`,
  { skip: available ? false : 'sipp or espeak-ng not installed' },
  async (t) => {
    const base = 44000 + (process.pid % 100) * 200;
    const w = await createWorld(t, {
      rtp: { port_min: base, port_max: base + 199, bind_address: '127.0.0.1' },
      voice: { max_api_calls_per_account: 0 },
      dialer: { tick_ms: 50, call_poll_ms: 250 },
    });
    const { d, operator } = w;
    const peer = await sipp(t, callee('[0-9]+', '', false), ['-mp', String(await sippMediaPort())], {
      timeout: '600s',
      calls: N + 50,
    });
    const { routeId } = await w.route({
      port: peer.port,
      prefix: '4477',
      rate: '0.006000',
      increment: '1/1',
      capacity: 200,
    });
    const { secret } = await d.modules.services.keys.create(operator.accountId, { mode: 'live', scopes: [] });
    const api = (method: string, url: string, body?: unknown) => w.api(method, url, secret, body);
    const cli = (
      await api('POST', '/dialer/cli-sets', { name: 'c', clis: ['+15550005555', '+15550006666', '+15550007777'] })
    ).body.data;
    const c = (
      await api('POST', '/dialer/campaigns', {
        name: 'Scale',
        routeId,
        concurrency: CONCURRENCY,
        maxCallDuration: 30,
        cliSetId: cli.id,
        cliStrategy: { strategy: 'least_used' },
        actions: [{ pause: 1 }, { hangup: true }],
      })
    ).body.data;
    const numbers = Array.from({ length: N }, (_, i) => `+4477${String(i).padStart(8, '0')}`);
    t.equal((await api('POST', `/dialer/campaigns/${c.id}/numbers`, { numbers })).body.data.added, N);
    const before = await d.modules.services.ledger.balanceOf(operator.accountId);
    const started = Date.now();
    await api('POST', `/dialer/campaigns/${c.id}/control`, { action: 'start' });
    // Waited for in the database a few times a second: asking the API every 25 ms (eventually's
    // pace) made thousands of HTTPS requests to the daemon under test while it dialled, on the same
    // two cores. The campaign as the API answers it is read once, when it is done.
    for (const until = Date.now() + 900_000; ;) {
      const [row] = await d.sql<{ status: string }[]>`select status from dialer_campaigns where id = ${c.id}`;
      if (row?.status === 'completed') break;
      if (Date.now() > until) throw new Error('the campaign did not complete');
      await new Promise((r) => setTimeout(r, 250));
    }
    const done = (await api('GET', `/dialer/campaigns/${c.id}`)).body.data;
    const seconds = (Date.now() - started) / 1000;
    t.comment(`${N} calls in ${seconds.toFixed(1)} s: ${(N / seconds).toFixed(2)} campaign calls/s`);
    t.match(done, { numbersDialed: N, numbersAnswered: N, numbersFailed: 0 });
    // The peak: a sweep over the starts (+1) and ends (-1) in time order, an end before a start at
    // the same instant (a call that ended as another began did not overlap it). The self-join it
    // replaces counted the same thing in N²/2 row pairs.
    const [agg] = await d.sql<{ attempts: number; numbers: number; cost: string; peak: number }[]>`
    select count(*)::int as attempts, count(distinct number)::int as numbers, sum(cost)::numeric(20,6)::text as cost,
           (select max(level) from (
              select sum(delta) over (order by at, delta rows unbounded preceding) as level from (
                select started_at as at, 1 as delta from dialer_attempts where campaign_id = ${c.id}
                union all
                select ended_at, -1 from dialer_attempts where campaign_id = ${c.id}) e) x)::int as peak
    from dialer_attempts where campaign_id = ${c.id}`;
    t.match(agg, { attempts: N, numbers: N }, 'each number once');
    t.ok(agg!.peak <= CONCURRENCY, `never more than ${CONCURRENCY} calls at once (peak ${agg!.peak})`);
    const [calls] = await d.sql<
      { s: string; n: number }[]
    >`select sum(cost)::numeric(20,6)::text as s, count(*)::int as n from calls where source = 'api'`;
    t.equal(calls!.n, N);
    t.equal(agg!.cost, calls!.s, 'the campaign recorded every settled cost');
    t.equal(done.spent, calls!.s);
    const after = await d.modules.services.ledger.balanceOf(operator.accountId);
    t.equal(
      new Decimal(before.balance).minus(after.balance).toFixed(6),
      calls!.s,
      'the balance moved by exactly the calls',
    );
    t.equal(after.held, before.held, 'no hold left');
    const ids = (await api('GET', `/dialer/caller-ids?campaignId=${c.id}`)).body.data as { calls: number }[];
    t.equal(ids.length, 3);
    t.ok(
      Math.max(...ids.map((x) => x.calls)) - Math.min(...ids.map((x) => x.calls)) <= CONCURRENCY,
      'least-used spreads the calls',
    );
  },
);
