import t from 'tap';
import { simulatedDialer } from '../../helpers/dialer.js';
import { eventually } from '../sip-trunks/world.js';

/**
 * Caller-ID days in a zone other than UTC, across a local midnight, on the dialer's injected clock:
 * a campaign's `cliStrategy.dailyCap` is counted from midnight in its `windowTz`, and the
 * `/dialer/caller-ids` stats count `callsToday` and `daily` in `tz` (or the campaign's zone). Test-key
 * campaigns: placed, priced and recorded as the runner does, never dialled.
 */
t.test('daily caps and caller-ID stats follow the local day', async (t) => {
  // 22:50 UTC on Monday 30 March 2026 is 23:50 in London (BST): the London day ends ten minutes before UTC's.
  const w = await simulatedDialer(t, '2026-03-30T22:50:00Z');
  const { d, live, moveTo } = w;
  const shared = { id: await w.cliSet(['+15550007001']) };
  const other = { id: await w.cliSet(['+15550007002']) };

  const campaign = async (name: string, numbers: string[], extra: Record<string, unknown>) => {
    const id = await w.campaign(name, numbers, { cliSetId: shared.id, ...extra });
    const s = await w.control(id, 'start');
    t.equal(s.status, 200, s.text);
    return { id };
  };
  const { get } = w;
  const status = (id: string, want: string) => w.until(id, (c) => c.status === want);
  const inRunner = (id: string) =>
    eventually(() => Promise.resolve(d.modules.services.dialer.runner.snapshot().some((x) => x.id === id)), 30_000);
  /**
   * A campaign started after `id` is in the runner is stepped after it on every tick: once the probe
   * (its own caller ID, no cap) has completed, `id` has been stepped with the clock where it is now.
   */
  const stepped = async (id: string, number: string) => {
    await inRunner(id);
    const probe = await campaign(`probe ${number}`, [number], { cliSetId: other.id });
    await status(probe.id, 'completed');
  };

  const london = await campaign('London', ['+447500007001', '+447500007002', '+447500007003', '+447500007004'], {
    windowTz: 'Europe/London',
    cliStrategy: { strategy: 'round_robin', dailyCap: 2 },
  });
  await eventually(async () => ((await get(london.id)).numbersDialed === 2 ? true : null), 60_000);
  await stepped(london.id, '+447500007101');
  t.match(await get(london.id), { status: 'running', numbersDialed: 2 }, 'at its cap for 30 March in London');

  // 00:05 on 31 March in London; still 30 March in UTC.
  moveTo('2026-03-30T23:05:00Z');
  t.match(await status(london.id, 'completed'), { numbersDialed: 4, numbersAnswered: 4 }, 'a new London day');

  const utc = await campaign('UTC', ['+447500007005'], { cliStrategy: { strategy: 'round_robin', dailyCap: 4 } });
  await stepped(utc.id, '+447500007102');
  t.match(await get(utc.id), { status: 'running', numbersDialed: 0 }, 'four calls today in UTC: at its cap');

  const stats = async (query: string) => {
    const r = await w.api('GET', `/dialer/caller-ids${query}`, live);
    t.equal(r.status, 200, r.text);
    return r.body.data.find((x: { cli: string }) => x.cli === '+15550007001');
  };
  t.match(await stats('?tz=Europe%2FLondon'), { calls: 4, callsToday: 2 });
  t.match(await stats('?tz=UTC'), { calls: 4, callsToday: 4 });
  t.match(await stats(`?campaignId=${london.id}`), { calls: 4, callsToday: 2 }, "the campaign's zone by default");
  t.match(await stats(''), { callsToday: 4 }, 'an account without a profile zone counts UTC days');
  const bad = await w.api('GET', '/dialer/caller-ids?tz=Mars%2FOlympus', live);
  t.equal(bad.status, 400, bad.text);
  t.match(bad.body.error, { code: 'VALIDATION_ERROR', details: [{ path: 'tz' }] });

  const inLondon = await w.api('GET', '/dialer/caller-ids/%2B15550007001?tz=Europe%2FLondon', live);
  t.equal(inLondon.status, 200, inLondon.text);
  t.match(inLondon.body.data, { tz: 'Europe/London', calls: 4, callsToday: 2 });
  t.same(
    inLondon.body.data.daily.map((x: { date: string; calls: number }) => [x.date, x.calls]),
    [
      ['2026-03-30', 2],
      ['2026-03-31', 2],
    ],
  );
  const inUtc = (await w.api('GET', '/dialer/caller-ids/%2B15550007001', live)).body.data;
  t.match(inUtc, { tz: 'UTC', callsToday: 4 });
  t.same(
    inUtc.daily.map((x: { date: string; calls: number }) => [x.date, x.calls]),
    [['2026-03-30', 4]],
  );
  t.equal((await w.api('GET', '/dialer/caller-ids/%2B15550007001?tz=Nowhere', live)).status, 400);

  // 00:05 on 31 March in UTC: the UTC campaign's day has turned too.
  moveTo('2026-03-31T00:05:00Z');
  t.match(await status(utc.id, 'completed'), { numbersDialed: 1 });
});
