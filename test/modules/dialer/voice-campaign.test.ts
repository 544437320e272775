import { Decimal } from 'decimal.js';
import t from 'tap';
import { createWorld, eventually } from '../sip-trunks/world.js';
import { available, expectedCost, refusingMany } from '../api-calls/peers.js';
import { callee, MANY } from '../api-calls/peers.js';
import { sippMediaPort, sipp } from '../../telephony/sip/sipp.js';

/**
 * Voice campaigns through the real call plane: the daemon's SIP stack dialling sipp, the media
 * plane speaking the campaign's prompt, each call settled by the ledger, the do-not-call list
 * asked at dial time. A clock running `skew` ahead of real time lets retries fall due at once.
 */
t.test('voice campaigns against sipp', { skip: available ? false : 'sipp or espeak-ng not installed' }, async (t) => {
  const base = 43000 + (process.pid % 300) * 20;
  let skew = 0;
  const clock = { now: () => new Date(Date.now() + skew) };
  const w = await createWorld(
    t,
    {
      rtp: { port_min: base, port_max: base + 19, bind_address: '127.0.0.1' },
      voice: { max_api_calls_per_account: 0 },
      dialer: { tick_ms: 50, call_poll_ms: 150 },
    },
    { clock } as never,
  );
  const { d, operator } = w;
  // A key, not a session: sessions expire when the clock is moved ahead.
  const { secret } = await d.modules.services.keys.create(operator.accountId, { mode: 'live', scopes: [] });
  const api = (method: string, url: string, body?: unknown) => w.api(method, url, secret, body);
  const balance = () => d.modules.services.ledger.balanceOf(operator.accountId);
  const peer = await sipp(t, callee('[0-9]+', '', false), ['-mp', String(await sippMediaPort())], {
    timeout: '60s',
    calls: MANY,
  });
  const { routeId } = await w.route({ port: peer.port, prefix: '4473', rate: '0.012000', increment: '1/1' });
  const clis = await api('POST', '/dialer/cli-sets', { name: 'main', clis: ['+15550001111', '+15550002222'] });
  t.equal(clis.status, 201, clis.text);
  t.equal(clis.body.data.clis, '+15550001111\n+15550002222');

  t.test(
    'a campaign of 12 numbers at concurrency 4: every number called once, DNC never reached, money exact',
    async (t) => {
      const created = await api('POST', '/dialer/campaigns', {
        name: 'Shipping notice',
        routeId,
        kind: 'voice',
        concurrency: 4,
        maxCallDuration: 30,
        cliSetId: clis.body.data.id,
        cliStrategy: { strategy: 'round_robin' },
        actions: [{ say: 'Your order has shipped.' }, { hangup: true }],
      });
      t.equal(created.status, 201, created.text);
      const c = created.body.data;
      t.match(c, {
        status: 'draft',
        environment: 'live',
        concurrency: 4,
        totalNumbers: 0,
        totalClis: 2,
        platformFeePerCall: '0.000000',
      });

      const numbers = Array.from({ length: 12 }, (_, i) => `+4473000001${String(i).padStart(2, '0')}`);
      const added = await api('POST', `/dialer/campaigns/${c.id}/numbers`, {
        numbers: [...numbers, '+4473000001 00', 'nope'],
      });
      t.equal(added.status, 200, added.text);
      t.match(added.body.data, { added: 12, duplicates: 1, totalNumbers: 12 });
      t.same(added.body.data.invalid, [{ index: 13, value: 'nope', message: 'must be an E.164 number' }]);
      // Listed after the numbers were added: the dialer asks at dial time.
      const dnc = await api('POST', '/dnc', { numbers: [numbers[3]], prefixes: ['44730000011'] });
      t.equal(dnc.status, 200, dnc.text);
      const blocked = new Set([numbers[3], numbers[10], numbers[11]].map((n) => n!.slice(1)));

      const before = await balance();
      const started = await api('POST', `/dialer/campaigns/${c.id}/control`, { action: 'start' });
      t.equal(started.status, 200, started.text);
      t.equal(started.body.data.status, 'running');
      const done = await eventually(async () => {
        const r = await api('GET', `/dialer/campaigns/${c.id}`);
        return r.body.data.status === 'completed' ? r.body.data : null;
      }, 90_000);
      t.match(done, { numbersDialed: 9, numbersAnswered: 9, numbersFailed: 3, statusReason: 'all_numbers_done' });

      const attempts = await d.sql<
        { number: string; cli: string; status: string; durationSeconds: number; cost: string }[]
      >`
      select number, cli, status, duration_seconds, cost::numeric(20,6)::text as cost from dialer_attempts where campaign_id = ${c.id}`;
      t.equal(attempts.length, 9, 'one attempt per number not listed');
      t.equal(new Set(attempts.map((a) => a.number)).size, 9, 'no number called twice');
      t.notOk(
        attempts.some((a) => blocked.has(a.number)),
        'no listed number was dialled',
      );
      const calls = await d.sql<{ toNumber: string }[]>`select to_number from calls where source = 'api'`;
      t.notOk(
        calls.some((x) => blocked.has(x.toNumber.replace(/^\+/, ''))),
        'no call record to a listed number',
      );
      t.same(
        new Set(attempts.map((a) => a.cli)),
        new Set(['15550001111', '15550002222']),
        'both caller IDs in rotation',
      );
      let sum = new Decimal(0);
      for (const a of attempts) {
        t.equal(a.status, 'completed');
        const cdr = await d.sql<{ billedSeconds: number; cost: string }[]>`
        select billed_seconds, buyer_cost::numeric(20,6)::text as cost from cdrs c join dialer_attempts a on a.call_id = c.call_uuid
        where a.campaign_id = ${c.id} and a.number = ${a.number} and c.status = 'completed'`;
        t.equal(cdr[0]?.cost, a.cost, 'the attempt costs what the call record settled');
        t.equal(a.cost, expectedCost(cdr[0]!.billedSeconds, '0.012000'));
        sum = sum.plus(a.cost);
      }
      t.equal(done.spent, sum.toFixed(6), 'campaign spend is the sum of its settled calls');
      const after = await balance();
      t.equal(
        new Decimal(before.balance).minus(after.balance).toFixed(6),
        sum.toFixed(6),
        'the balance moved by exactly that',
      );
      t.equal(after.held, before.held, 'no hold left');
      const [ledgerSum] = await d.sql<{ s: string }[]>`select coalesce(sum(amount), 0)::text as s from entries`;
      t.equal(Number(ledgerSum!.s), 0, 'the ledger balances');

      const events = await d.sql<{ event: string; data: Record<string, unknown> }[]>`
      select event, data from events where event like 'campaign.%' and data->>'campaignId' = ${c.id} order by id`;
      t.same(
        events.map((e) => e.event),
        ['campaign.started', 'campaign.completed'],
      );
      t.match(events[1]!.data, { numbersAnswered: 9, numbersFailed: 3, spent: sum.toFixed(6), stopped: false });

      const analytics = await api('GET', `/dialer/campaigns/${c.id}/analytics`);
      t.equal(analytics.status, 200, analytics.text);
      const a = analytics.body.data;
      t.match(a.headline, {
        dialed: 9,
        answered: 9,
        failed: 3,
        connectRate: 1,
        asr: 1,
        totalNumbers: 12,
        pending: 0,
        spend: sum.toFixed(6),
      });
      t.match(a.dispositions, { answered: 9, dnc_blocked: 3 });
      t.equal(a.byHour.length, 24);
      t.equal(a.byDayOfWeek.length, 7);
      t.match(a.byDestination, [{ destination: '+44', country: 'GB', attempts: 9, answered: 9 }]);
      t.match(a.retryEffectiveness, [{ attempt: 1, attempts: 9, answered: 9, asr: 1 }]);
      const overview = await api('GET', '/dialer/analytics/overview');
      t.equal(overview.status, 200, overview.text);
      t.match(overview.body.data.headline, { dialed: 9, answered: 9 });
      t.equal(overview.body.data.campaigns.completed >= 1, true);
      const results = await api('GET', `/dialer/campaigns/${c.id}/results?limit=5`);
      t.equal(results.body.data.length, 5);
      t.equal(results.body.hasMore, true);
      const ids = await api('GET', '/dialer/caller-ids');
      t.equal(ids.status, 200, ids.text);
      t.equal(
        ids.body.data.reduce((n: number, x: { calls: number }) => n + x.calls, 0),
        9,
        'caller-ID stats count every call',
      );
    },
  );

  t.test('busy numbers are retried after retryDelayMinutes, never beyond maxAttempts', async (t) => {
    const busy = await refusingMany(t, 486, 'Busy Here');
    const r2 = await w.route({ port: busy.port, prefix: '4474', rate: '0.010000', increment: '1/1' });
    const created = await api('POST', '/dialer/campaigns', {
      name: 'Retry',
      routeId: r2.routeId,
      concurrency: 2,
      maxAttempts: 2,
      retryDelayMinutes: 30,
      maxCallDuration: 20,
      cliSetId: clis.body.data.id,
      actions: [{ say: 'Hello' }],
    });
    const id = created.body.data.id as string;
    await api('POST', `/dialer/campaigns/${id}/numbers`, { numbers: ['+447400000001', '+447400000002'] });
    await api('POST', `/dialer/campaigns/${id}/control`, { action: 'start' });
    await eventually(async () => {
      const [r] = await d.sql<
        { n: number }[]
      >`select count(*)::int as n from dialer_attempts where campaign_id = ${id}`;
      return r!.n === 2;
    }, 30_000);
    // Retries wait: nothing more is placed until the delay has passed.
    await new Promise((r) => setTimeout(r, 600));
    const mid = await api('GET', `/dialer/campaigns/${id}`);
    t.match(mid.body.data, { status: 'running', numbersDialed: 2, numbersFailed: 0 });
    skew += 31 * 60_000;
    const done = await eventually(async () => {
      const r = await api('GET', `/dialer/campaigns/${id}`);
      return r.body.data.status === 'completed' ? r.body.data : null;
    }, 30_000);
    t.match(done, { numbersDialed: 2, numbersAnswered: 0, numbersFailed: 2, spent: '0.000000' });
    const rows = await d.sql<{ number: string; attempt: number; status: string; cause: string }[]>`
      select number, attempt, status, cause from dialer_attempts where campaign_id = ${id} order by number, attempt`;
    t.same(
      rows.map((r) => [r.number, r.attempt, r.status, r.cause]),
      [
        ['447400000001', 1, 'busy', 'USER_BUSY'],
        ['447400000001', 2, 'busy', 'USER_BUSY'],
        ['447400000002', 1, 'busy', 'USER_BUSY'],
        ['447400000002', 2, 'busy', 'USER_BUSY'],
      ],
    );
    const a = (await api('GET', `/dialer/campaigns/${id}/analytics`)).body.data;
    t.match(a.failureCauses, [{ code: 'USER_BUSY', label: 'Busy', count: 4 }]);
    t.match(a.dispositions, { busy: 2 });
  });

  t.test('maxSpend: the campaign pauses before a call could take spend past it', async (t) => {
    // A 30 s call at 0.012 + 0.002 per minute can cost 0.007000 at most: 0.008 funds one call in flight, and
    // once a few short calls are settled, not even that.
    const created = await api('POST', '/dialer/campaigns', {
      name: 'Budget',
      routeId,
      concurrency: 4,
      maxCallDuration: 30,
      maxSpend: '0.008000',
      cliSetId: clis.body.data.id,
      actions: [{ say: 'Hi' }, { hangup: true }],
    });
    const id = created.body.data.id as string;
    await api('POST', `/dialer/campaigns/${id}/numbers`, {
      numbers: Array.from({ length: 8 }, (_, i) => `+44730000020${i}`),
    });
    await api('POST', `/dialer/campaigns/${id}/control`, { action: 'start' });
    const paused = await eventually(async () => {
      const r = await api('GET', `/dialer/campaigns/${id}`);
      return r.body.data.status === 'paused' ? r.body.data : null;
    }, 60_000);
    t.equal(paused.statusReason, 'max_spend_reached');
    t.ok(new Decimal(paused.spent).lte('0.008000'), `spent ${paused.spent} never above maxSpend`);
    t.ok(new Decimal(paused.spent).plus('0.007000').gt('0.008000'), 'paused only when another call could overrun');
    t.ok(
      paused.numbersAnswered >= 1 && paused.numbersAnswered < 8,
      'calls were placed until the budget could not fund another',
    );
    const [max] = await d.sql<{ n: number }[]>`
      select count(*)::int as n from dialer_attempts a join dialer_attempts b
        on a.campaign_id = b.campaign_id and a.id <> b.id and a.started_at < b.ended_at and b.started_at < a.ended_at
      where a.campaign_id = ${id}`;
    t.equal(max!.n, 0, 'never two calls in flight when the budget funds one');
    const [inFlight] = await d.sql<
      { n: number }[]
    >`select count(*)::int as n from dialer_numbers where campaign_id = ${id} and state = 'dialing'`;
    t.equal(inFlight!.n, 0);
  });
});
