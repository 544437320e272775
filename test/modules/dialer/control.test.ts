import t from 'tap';
import { simulatedDialer } from '../../helpers/dialer.js';

/**
 * Campaign control on the dialer's injected clock: a scheduled campaign waits as `ready` until
 * `scheduleAt`, then starts by itself; pause, resume and stop (numbers not yet called stay
 * uncalled); the `match_destination` caller-ID strategy. Test-key campaigns: placed, priced and
 * recorded as the runner does, never dialled.
 */
t.test('scheduled start, pause, resume, stop and destination-matched caller IDs', async (t) => {
  const w = await simulatedDialer(t, '2026-05-04T10:00:00Z', { prefix: '44' });
  const { d, campaign, control, get, until, moveTo } = w;
  const set = (clis: string[]) => w.cliSet(clis);
  const attempts = (id: string) =>
    d.sql<{ number: string; cli: string }[]>`
      select number, cli from dialer_attempts where campaign_id = ${id} order by started_at, number`;

  // Scheduled an hour ahead: ready, and still ready after another campaign has run to its end.
  const scheduleAt = '2026-05-04T11:00:00.000Z';
  const later = await campaign('Later', ['+447400000001', '+447400000002'], {
    cliSetId: await set(['+15550009001']),
    scheduleAt,
  });
  const started = await control(later, 'start');
  t.equal(started.status, 200, started.text);
  t.match(started.body.data, { status: 'ready', startedAt: null });

  const matched = await campaign('Matched', ['+447400001001', '+447500001002', '+447400001003'], {
    cliSetId: await set(['+447400000999', '+447500000999', '+15550009002']),
    cliStrategy: { strategy: 'match_destination' },
  });
  t.equal((await control(matched, 'start')).body.data.status, 'running');
  await until(matched, (c) => c.status === 'completed');
  t.same(
    (await attempts(matched)).map((a) => [a.number, a.cli]),
    [
      ['447400001001', '447400000999'],
      ['447500001002', '447500000999'],
      ['447400001003', '447400000999'],
    ],
    'each call presents the caller ID sharing the most leading digits with the callee',
  );
  t.match(await get(later), { status: 'ready', numbersDialed: 0 }, 'nothing dialled before scheduleAt');

  moveTo('2026-05-04T11:00:30Z');
  const ran = await until(later, (c) => c.status === 'completed');
  t.match(ran, { numbersDialed: 2, numbersAnswered: 2, statusReason: 'all_numbers_done' });
  t.ok(Date.parse(ran.startedAt) >= Date.parse(scheduleAt), `started at its time (${ran.startedAt})`);
  const [event] = await d.sql<{ data: Record<string, unknown> }[]>`
    select data from events where event = 'campaign.started' and data->>'campaignId' = ${later}`;
  t.match(event?.data, { scheduled: true, resumed: false, environment: 'test' });

  // Held after one call by its caller ID's daily cap: paused, resumed, stopped around it.
  const held = await campaign('Held', ['+447400002001', '+447400002002', '+447400002003'], {
    cliSetId: await set(['+15550009003']),
    cliStrategy: { strategy: 'round_robin', dailyCap: 1 },
  });
  t.equal((await control(held, 'start')).status, 200);
  await until(held, (c) => c.numbersAnswered === 1);
  const paused = await control(held, 'pause');
  t.match(paused.body.data, { status: 'paused', statusReason: 'paused_by_user' });
  t.equal((await control(held, 'pause')).status, 200, 'pausing a paused campaign changes nothing');
  const resumed = await control(held, 'start');
  t.match(resumed.body.data, { status: 'running', statusReason: null });
  const stopped = await control(held, 'stop');
  t.equal(stopped.status, 200, stopped.text);
  t.match(stopped.body.data, { status: 'completed', statusReason: 'stopped_by_user', numbersDialed: 1 });
  // The next day the cap would let the campaign go on: a stopped campaign does not.
  moveTo('2026-05-05T10:00:00Z');
  const probe = await campaign('Probe', ['+447400003001'], { cliSetId: await set(['+15550009004']) });
  await control(probe, 'start');
  await until(probe, (c) => c.status === 'completed');
  t.same(
    (await attempts(held)).map((a) => a.number),
    ['447400002001'],
    'the numbers not yet called stay uncalled',
  );
  const pending = await w.api('GET', `/dialer/campaigns/${held}/numbers?state=pending`, w.test);
  t.equal(pending.body.data.length, 2);
  const events = await d.sql<{ event: string; data: Record<string, unknown> }[]>`
    select event, data from events where event like 'campaign.%' and data->>'campaignId' = ${held} order by id`;
  t.same(
    events.map((e) => [e.event, e.data['resumed'] ?? e.data['stopped']]),
    [
      ['campaign.started', false],
      ['campaign.started', true],
      ['campaign.completed', true],
    ],
  );
  t.match(events[2]!.data, { numbersDialed: 1, numbersAnswered: 1 });
  for (const action of ['start', 'pause', 'stop'] as const) {
    const r = await control(held, action);
    t.equal(r.status, 409, `${action} on a completed campaign: ${r.text}`);
  }
  const changed = await w.api('PUT', `/dialer/campaigns/${held}`, w.test, { name: 'Renamed' });
  t.equal(changed.status, 409, 'a completed campaign cannot be changed');
});
