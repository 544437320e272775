import { Decimal } from 'decimal.js';
import t from 'tap';
import { createWorld, eventually } from '../sip-trunks/world.js';

/**
 * The campaign operations beyond the shown ones, through the daemon over HTTPS: numbers one by one,
 * duplicate check, estimate (money and time inside the window, around a holiday), clone, and a
 * simulated run whose attempts feed the results export, dispositions, history, reset and the
 * caller-ID figures. A test key's campaign is routed and priced for real, never dialled.
 */
t.test('campaign numbers, estimate, clone and duplicate check', async (t) => {
  // Monday 30 March 2026, 08:00 UTC = 09:00 in London (BST); nothing here dials, so time may stand still.
  const at = Date.parse('2026-03-30T08:00:00Z');
  const clock = { now: () => new Date(at) };
  const w = await createWorld(t, { dialer: { tick_ms: 50, call_poll_ms: 100 } }, { clock } as never);
  const { d, operator } = w;
  const live = (await d.modules.services.keys.create(operator.accountId, { mode: 'live', scopes: [] })).secret;
  const api = (method: string, url: string, body?: unknown) => w.api(method, url, live, body);
  const { routeId } = await w.route({ port: 9, prefix: '4475', rate: '0.020000', increment: '60/60' });
  const set = (await api('POST', '/dialer/cli-sets', { name: 'x', clis: ['+15550003333'] })).body.data;

  const created = await api('POST', '/dialer/campaigns', {
    name: 'Spring',
    routeId,
    concurrency: 3,
    maxCallDuration: 120,
    maxAttempts: 2,
    retryDelayMinutes: 5,
    windowStartHour: 9,
    windowEndHour: 17,
    windowTz: 'Europe/London',
    cliSetId: set.id,
    cliStrategy: { strategy: 'least_used', dailyCap: 50 },
    actions: [{ say: 'Hello' }],
  });
  t.equal(created.status, 201, created.text);
  const c = created.body.data;
  const numbers = Array.from({ length: 150 }, (_, i) => `+44750000${String(i).padStart(4, '0')}`);
  t.equal((await api('POST', `/dialer/campaigns/${c.id}/numbers`, { numbers })).body.data.added, 150);

  t.test('numbers are listed in order, paged, filtered and searched', async (t) => {
    const first = await api('GET', `/dialer/campaigns/${c.id}/numbers?limit=100`);
    t.equal(first.status, 200, first.text);
    t.equal(first.body.data.length, 100);
    t.equal(first.body.hasMore, true);
    t.match(first.body.data[0], { number: numbers[0], state: 'pending', attempts: 0, nextAttemptAt: null, fields: {} });
    const second = await api('GET', `/dialer/campaigns/${c.id}/numbers?limit=100&cursor=${first.body.nextCursor}`);
    t.same(
      second.body.data.map((n: { number: string }) => n.number),
      numbers.slice(100),
    );
    t.equal(second.body.hasMore, false);
    const searched = await api('GET', `/dialer/campaigns/${c.id}/numbers?search=%2B447500000 01`);
    t.equal(searched.status, 200, searched.text);
    t.same(
      searched.body.data.map((n: { number: string }) => n.number),
      numbers.slice(10, 20),
    );
    t.equal(searched.body.hasMore, false);
    const answered = await api('GET', `/dialer/campaigns/${c.id}/numbers?state=answered`);
    t.same(answered.body.data, []);
    const one = await api('GET', `/dialer/campaigns/${c.id}/numbers/${encodeURIComponent(numbers[5]!)}/attempts`);
    t.match(one.body.data, { number: numbers[5], state: 'pending', attempts: 0, history: [] });
    const missing = await api('GET', `/dialer/campaigns/${c.id}/numbers/%2B447600000000/attempts`);
    t.equal(missing.status, 404);
  });

  t.test('the estimate prices every attempt left and counts only open hours', async (t) => {
    const e = await api('GET', `/dialer/campaigns/${c.id}/estimate`);
    t.equal(e.status, 200, e.text);
    // Two 60 s blocks at 0.020 + the 0.002 platform fee per minute.
    t.match(e.body.data, {
      pendingNumbers: 150,
      attemptsLeft: 300,
      sampled: true,
      sampleSize: 100,
      cost: { perCallMax: '0.044000', firstRoundMax: '6.600000', allAttemptsMax: '13.200000', uncoveredNumbers: 0 },
      spent: '0.000000',
      maxSpendLeft: null,
    });
    // 150 calls at 3 at a time, 120 s each: 6,000 s, from 09:00 London.
    t.match(e.body.data.duration, {
      basis: 'max_call_duration',
      averageCallSeconds: 120,
      concurrency: 3,
      callsPerMinute: 1.5,
      dialingSeconds: 6000,
      startsAt: '2026-03-30T08:00:00.000Z',
      finishesAt: '2026-03-30T09:40:00.000Z',
    });
    const holiday = await api('POST', '/dialer/holidays', { date: '2026-03-30', name: 'Closed' });
    t.equal(holiday.status, 201, holiday.text);
    const later = (await api('GET', `/dialer/campaigns/${c.id}/estimate`)).body.data;
    t.equal(later.duration.finishesAt, '2026-03-31T09:40:00.000Z', 'the holiday moves the work to the next open day');
    await api('DELETE', `/dialer/holidays/${holiday.body.data.id}`);
    await api('PUT', `/dialer/campaigns/${c.id}`, { maxSpend: '1.000000', windowStartHour: 16, windowEndHour: 17 });
    const capped = (await api('GET', `/dialer/campaigns/${c.id}/estimate`)).body.data;
    t.equal(capped.maxSpendLeft, '1.000000');
    // 16:00–17:00 London = 15:00–16:00 UTC: 3,600 s on the first day, 2,400 s on the next.
    t.equal(capped.duration.finishesAt, '2026-03-31T15:40:00.000Z');
  });

  t.test('duplicate check names what adding would skip, and writes nothing', async (t) => {
    await api('POST', '/dnc', { numbers: ['+447599999991'] });
    const r = await api('POST', `/dialer/campaigns/${c.id}/duplicate-check`, {
      numbers: [numbers[0], '+447599999990', '+447599999990', '+447599999991', 'nope', '+447599999992'],
    });
    t.equal(r.status, 200, r.text);
    t.same(r.body.data, {
      checked: 6,
      unique: 2,
      inCampaign: [numbers[0]],
      repeated: ['+447599999990'],
      dnc: ['+447599999991'],
      recentlyCalled: [],
      invalid: [{ index: 4, value: 'nope', message: 'must be an E.164 number' }],
    });
    t.equal((await api('GET', `/dialer/campaigns/${c.id}`)).body.data.totalNumbers, 150);
  });

  t.test('numbers not yet dialled are removed; the total follows', async (t) => {
    const r = await api('POST', `/dialer/campaigns/${c.id}/numbers/remove`, {
      numbers: [numbers[148], numbers[149], '+447600000000'],
    });
    t.equal(r.status, 200, r.text);
    t.same(r.body.data, { removed: 2, notInCampaign: 1, kept: [], totalNumbers: 148 });
    const bad = await api('POST', `/dialer/campaigns/${c.id}/numbers/remove`, { numbers: ['x'] });
    t.equal(bad.status, 400);
    t.equal(bad.body.error.details[0].path, 'numbers/0');
  });

  t.test('a clone copies the settings and, when asked, the numbers', async (t) => {
    const bare = await api('POST', `/dialer/campaigns/${c.id}/clone`, {});
    t.equal(bare.status, 201, bare.text);
    t.match(bare.body.data, {
      name: 'Spring (copy)',
      status: 'draft',
      routeId,
      concurrency: 3,
      maxCallDuration: 120,
      maxAttempts: 2,
      windowTz: 'Europe/London',
      windowStartHour: 16,
      maxSpend: '1.000000',
      cliSetId: set.id,
      cliStrategy: { strategy: 'least_used', dailyCap: 50 },
      actions: [{ say: 'Hello' }],
      totalNumbers: 0,
      numbersDialed: 0,
    });
    t.not(bare.body.data.id, c.id);
    const full = await api('POST', `/dialer/campaigns/${c.id}/clone`, { name: 'Again', numbers: 'all' });
    t.match(full.body.data, { name: 'Again', totalNumbers: 148 });
    const listed = await api('GET', `/dialer/campaigns/${full.body.data.id}/numbers?limit=1`);
    t.equal(listed.body.data[0].number, numbers[0], 'numbers keep their order');
    t.equal((await api('POST', `/dialer/campaigns/${c.id}/clone`, { numbers: 'some' })).status, 400);
  });
});

t.test('a simulated run: holidays, paused caller IDs, results, dispositions, export, reset', async (t) => {
  // 23:30 UTC on 30 March is 00:30 on 31 March in London.
  const offset = Date.parse('2026-03-30T23:30:00Z') - Date.now();
  const clock = { now: () => new Date(Date.now() + offset) };
  const w = await createWorld(t, { dialer: { tick_ms: 50, call_poll_ms: 100 } }, { clock } as never);
  const { d, operator } = w;
  const { keys, ledger } = d.modules.services;
  const live = (await keys.create(operator.accountId, { mode: 'live', scopes: [] })).secret;
  const test = (await keys.create(operator.accountId, { mode: 'test', scopes: ['dialer:write'] })).secret;
  await ledger.grantTestCredit({
    postingKey: `tc-${operator.accountId}`,
    accountId: operator.accountId,
    amount: '5.000000',
  });
  const { routeId } = await w.route({ port: 9, prefix: '4475', rate: '0.020000', increment: '60/60' });
  const set = (await w.api('POST', '/dialer/cli-sets', live, { name: 'pair', clis: ['+15550000001', '+15550000002'] }))
    .body.data;
  const campaign = async (name: string, numbers: string[], extra: Record<string, unknown> = {}) => {
    const c = (
      await w.api('POST', '/dialer/campaigns', test, {
        name,
        routeId,
        concurrency: 2,
        maxCallDuration: 60,
        cliSetId: set.id,
        actions: [{ say: 'Hello' }],
        ...extra,
      })
    ).body.data;
    t.equal((await w.api('POST', `/dialer/campaigns/${c.id}/numbers`, test, { numbers })).status, 200);
    return c;
  };
  const start = async (id: string) => {
    const r = await w.api('POST', `/dialer/campaigns/${id}/control`, test, { action: 'start' });
    t.equal(r.status, 200, r.text);
  };
  const settled = (id: string, status: string) =>
    eventually(async () => {
      const r = (await w.api('GET', `/dialer/campaigns/${id}`, test)).body.data;
      return r.status === status ? r : null;
    }, 30_000);

  t.test('no call starts on a holiday of the campaign zone; removing it lets the campaign run', async (t) => {
    const holiday = (await w.api('POST', '/dialer/holidays', live, { date: '2026-03-31', name: 'Local' })).body.data;
    t.equal((await w.api('POST', '/dialer/holidays', live, { date: '2026-03-31', name: 'Twice' })).status, 409);
    const london = await campaign('London', ['+447500000001', '+447500000002'], { windowTz: 'Europe/London' });
    await start(london.id);
    await eventually(() =>
      Promise.resolve(d.modules.services.dialer.runner.snapshot().some((x) => x.id === london.id)),
    );
    // Started after the London campaign is in the runner: every tick that moves this one steps that one first.
    const utc = await campaign('UTC', ['+447500000003']);
    await start(utc.id);
    await settled(utc.id, 'completed');
    const waiting = (await w.api('GET', `/dialer/campaigns/${london.id}`, test)).body.data;
    t.match(waiting, { status: 'running', numbersDialed: 0 }, 'London is on 31 March: nothing dialled');
    await w.api('DELETE', `/dialer/holidays/${holiday.id}`, live);
    t.match(await settled(london.id, 'completed'), { numbersDialed: 2, numbersAnswered: 2 });
  });

  t.test('a paused caller ID is presented by no campaign; all paused pauses the campaign', async (t) => {
    const callsBefore = (await w.api('GET', '/dialer/caller-ids/%2B15550000001', live)).body.data.calls;
    const paused = await w.api('PUT', '/dialer/caller-ids/%2B15550000001/status', live, {
      status: 'paused',
      note: 'flagged as spam',
    });
    t.equal(paused.status, 200, paused.text);
    t.match(paused.body.data, { cli: '+15550000001', status: 'paused', note: 'flagged as spam' });
    t.equal((await w.api('PUT', '/dialer/caller-ids/%2B19990000000/status', live, { status: 'paused' })).status, 404);
    const c = await campaign('One CLI', ['+447500000011', '+447500000012', '+447500000013']);
    await start(c.id);
    await settled(c.id, 'completed');
    const clis = await d.sql<{ cli: string }[]>`select distinct cli from dialer_attempts where campaign_id = ${c.id}`;
    t.same(
      clis.map((x) => x.cli),
      ['15550000002'],
      'only the active caller ID was presented',
    );
    const detail = await w.api('GET', '/dialer/caller-ids/%2B15550000002', live);
    t.equal(detail.status, 200, detail.text);
    t.match(detail.body.data, {
      cli: '+15550000002',
      status: 'active',
      answerRate: 1,
      sets: [{ id: set.id, name: 'pair' }],
    });
    t.equal(detail.body.data.calls, detail.body.data.answered);
    t.ok(
      detail.body.data.byCampaign.some(
        (b: { campaignId: string; calls: number }) => b.campaignId === c.id && b.calls === 3,
      ),
    );
    t.same(
      detail.body.data.daily.map((x: { date: string }) => x.date),
      ['2026-03-30'],
    );
    const stopped = await w.api('GET', '/dialer/caller-ids/%2B15550000001', live);
    t.match(stopped.body.data, { status: 'paused', note: 'flagged as spam', calls: callsBefore });

    await w.api('PUT', '/dialer/caller-ids/%2B15550000002/status', live, { status: 'paused' });
    const none = await campaign('None', ['+447500000021']);
    await start(none.id);
    t.match(await settled(none.id, 'paused'), { statusReason: 'no_caller_ids', numbersDialed: 0 });
    for (const cli of ['%2B15550000001', '%2B15550000002']) {
      await w.api('PUT', `/dialer/caller-ids/${cli}/status`, live, { status: 'active' });
    }
  });

  t.test('results: history, dispositions, CSV export; failed numbers reset for another round', async (t) => {
    // Two numbers no rate covers fail; the spend cap pauses the campaign before the last covered one.
    const c = await campaign(
      'Budget',
      ['+447600000001', '+447600000002', '+447500000031', '+447500000032', '+447500000033'],
      {
        concurrency: 1,
        maxSpend: '0.044000',
      },
    );
    await start(c.id);
    const paused = await settled(c.id, 'paused');
    t.match(paused, {
      statusReason: 'max_spend_reached',
      numbersDialed: 4,
      numbersAnswered: 2,
      numbersFailed: 2,
      spent: '0.044000',
    });

    const failed = await w.api('GET', `/dialer/campaigns/${c.id}/numbers/%2B447600000001/attempts`, test);
    t.match(failed.body.data, { state: 'failed', attempts: 1, lastStatus: 'failed', lastCause: 'ROUTE_UNAVAILABLE' });
    t.equal(failed.body.data.history.length, 1);

    const results = (await w.api('GET', `/dialer/campaigns/${c.id}/results?status=completed`, test)).body.data;
    t.equal(results.length, 2);
    const set1 = await w.api('PUT', `/dialer/campaigns/${c.id}/results/${results[0].id}/disposition`, test, {
      disposition: 'callback',
      note: 'after 6pm, "please"',
    });
    t.equal(set1.status, 200, set1.text);
    t.match(set1.body.data, { disposition: 'callback', dispositionNote: 'after 6pm, "please"' });
    t.ok(set1.body.data.dispositionAt);
    t.equal(
      (
        await w.api('PUT', `/dialer/campaigns/${c.id}/results/${results[0].id}/disposition`, test, {
          disposition: 'Bad Code',
        })
      ).status,
      400,
    );
    const other = await campaign('Other', ['+447500000099']);
    t.equal(
      (
        await w.api('PUT', `/dialer/campaigns/${other.id}/results/${results[0].id}/disposition`, test, {
          disposition: 'x',
        })
      ).status,
      404,
      'an attempt of another campaign is not found',
    );
    t.equal(
      (
        await w.api('PUT', `/dialer/campaigns/${c.id}/results/${results[1].id}/disposition`, test, {
          disposition: 'not_interested',
        })
      ).status,
      200,
    );
    const codes = [
      { code: 'callback', label: 'Call back', count: 1, answered: 1 },
      { code: 'not_interested', label: 'Not interested', count: 1, answered: 1 },
    ];
    const figures = await w.api('GET', `/dialer/campaigns/${c.id}/analytics`, live);
    t.equal(figures.status, 200, figures.text);
    t.match(figures.body.data.dispositionCodes, codes, 'the dispositions set, with labels');
    t.equal(figures.body.data.dispositionCodes.length, 2);
    const overview = await w.api(
      'GET',
      '/dialer/analytics/overview?from=2026-03-01T00:00:00Z&to=2026-04-30T00:00:00Z',
      live,
    );
    t.equal(overview.status, 200, overview.text);
    t.match(overview.body.data.dispositionCodes, codes);

    const csv = await d.https('GET', `/dialer/campaigns/${c.id}/results/export`, { token: test });
    t.equal(csv.status, 200, csv.text);
    t.match(String(csv.headers['content-type']), /^text\/csv/);
    const lines = csv.text.trim().split('\n');
    t.equal(
      lines[0],
      'attemptId,number,attempt,callId,cli,status,sipCode,cause,durationSeconds,cost,fee,disposition,dispositionNote,startedAt,endedAt',
    );
    t.equal(lines.length, 5, 'a header and one row per attempt');
    const row = lines.find((l) => l.startsWith(results[0].id))!;
    t.match(row, /,callback,"after 6pm, ""please""",/);
    t.match(row, /,0\.022000,0\.000000,/);

    const reset = await w.api('POST', `/dialer/campaigns/${c.id}/numbers/reset`, test, {});
    t.equal(reset.status, 200, reset.text);
    t.same(reset.body.data, { reset: 2, pending: 3 });
    t.match((await w.api('GET', `/dialer/campaigns/${c.id}`, test)).body.data, { numbersDialed: 2, numbersFailed: 0 });
    await w.api('PUT', `/dialer/campaigns/${c.id}`, test, { maxSpend: '1.000000' });
    await start(c.id);
    const done = await settled(c.id, 'completed');
    t.match(done, {
      numbersDialed: 5,
      numbersAnswered: 3,
      numbersFailed: 2,
      spent: new Decimal('0.022').times(3).toFixed(6),
    });
    const again = (await w.api('GET', `/dialer/campaigns/${c.id}/numbers/%2B447600000001/attempts`, test)).body.data;
    t.equal(again.history.length, 2, 'the earlier attempt stays in the history');
    const late = await w.api('POST', `/dialer/campaigns/${c.id}/numbers/reset`, test, {});
    t.equal(late.status, 409, 'a completed campaign is cloned, not reset');
    const retry = await w.api('POST', `/dialer/campaigns/${c.id}/clone`, test, { numbers: 'not_answered' });
    t.equal(retry.status, 201, retry.text);
    t.match(retry.body.data, { environment: 'test', totalNumbers: 2, maxSpend: '1.000000' });

    const dup = await w.api('POST', `/dialer/campaigns/${other.id}/duplicate-check`, test, {
      numbers: ['+447500000031', '+447500000055'],
    });
    t.match(dup.body.data.recentlyCalled, [{ number: '+447500000031', campaignId: c.id, lastStatus: 'completed' }]);
    const imported = await d.https('POST', `/dialer/campaigns/${other.id}/contacts/import`, {
      token: test,
      rawBody: 'number\n+447500000100\nbad\n',
      headers: { 'content-type': 'text/csv' },
    });
    const job = await w.api('GET', `/dialer/campaigns/${other.id}/imports/${imported.json.data.id}`, test);
    t.match(job.body.data, { status: 'completed', imported: 1, invalid: 1 });
    t.equal((await w.api('GET', `/dialer/campaigns/${c.id}/imports/${imported.json.data.id}`, test)).status, 404);
  });
});
