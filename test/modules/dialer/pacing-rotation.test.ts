import t from 'tap';
import { eventually } from '../sip-trunks/world.js';
import { available } from '../api-calls/peers.js';
import { liveDialer } from '../../helpers/dialer.js';

/**
 * Two campaign settings through the daemon against a sipp that answers: `callInterval` pacing (the
 * call starts are spaced by the interval even with concurrency to spare) and the `random` caller-ID
 * strategy (picks vary, and a per-CLI daily cap holds: numbers beyond it wait for the next day).
 */

const TICK_MS = 50;

t.test(
  'dialer pacing and random caller IDs against sipp',
  { skip: available ? false : 'sipp or espeak-ng not installed' },
  async (t) => {
    const w = await liveDialer(t, { tick_ms: TICK_MS });
    const { d, routeId } = w;
    const api = w.liveApi;

    async function campaign(name: string, clis: string[], numbers: string[], extra: Record<string, unknown>) {
      const set = await api('POST', '/dialer/cli-sets', { name, clis });
      t.equal(set.status, 201, set.text);
      const created = await api('POST', '/dialer/campaigns', {
        name,
        routeId,
        kind: 'voice',
        maxCallDuration: 30,
        cliSetId: set.body.data.id,
        actions: [{ say: 'Hello.' }, { hangup: true }],
        ...extra,
      });
      t.equal(created.status, 201, created.text);
      const id = created.body.data.id as string;
      const added = await api('POST', `/dialer/campaigns/${id}/numbers`, { numbers });
      t.equal(added.status, 200, added.text);
      const started = await api('POST', `/dialer/campaigns/${id}/control`, { action: 'start' });
      t.equal(started.status, 200, started.text);
      return id;
    }
    const attemptsOf = (id: string) =>
      d.sql<{ number: string; cli: string; status: string; startedAt: Date }[]>`
      select number, cli, status, started_at from dialer_attempts where campaign_id = ${id} order by started_at`;
    const numbers = (from: number, n: number) =>
      Array.from({ length: n }, (_, i) => `+4473000002${String(from + i).padStart(2, '0')}`);

    t.test('callInterval spaces the call starts even with concurrency to spare', async (t) => {
      const interval = 1500;
      const id = await campaign('Paced', ['+15550003001'], numbers(0, 5), { concurrency: 5, callInterval: interval });
      const done = await eventually(async () => {
        const r = await api('GET', `/dialer/campaigns/${id}`);
        return r.body.data.status === 'completed' ? r.body.data : null;
      }, 90_000);
      t.match(done, { numbersDialed: 5, numbersAnswered: 5 });
      const starts = (await attemptsOf(id)).map((a) => a.startedAt.getTime());
      t.equal(starts.length, 5, 'every number called once');
      const gaps = starts.slice(1).map((s, i) => s - starts[i]!);
      // Each start waits callInterval from the previous one's actual start (docs/dialer.md, Pacing), so
      // no gap is shorter than the interval, and no two starts come at once.
      t.ok(
        gaps.every((g) => g >= interval),
        'every gap between consecutive starts is at least callInterval (unpaced, concurrency 5 starts all five at once)',
        { gaps },
      );
    });

    t.test('random caller IDs vary, and a daily cap per caller ID holds', async (t) => {
      const clis = ['+15550004001', '+15550004002', '+15550004003'];
      const free = await campaign('Random', clis, numbers(10, 12), {
        concurrency: 4,
        cliStrategy: { strategy: 'random' },
      });
      await eventually(async () => {
        const r = await api('GET', `/dialer/campaigns/${free}`);
        return r.body.data.status === 'completed' ? r.body.data : null;
      }, 90_000);
      const picks = (await attemptsOf(free)).map((a) => a.cli);
      t.equal(picks.length, 12, 'every number called once');
      // Any one caller ID twelve times, or the strict turn of round-robin, is about a chance in 10^5.
      t.ok(new Set(picks).size >= 2, 'more than one caller ID picked', { picks });
      const inTurn = picks.every((p, i) => i === 0 || clis.indexOf(p) === (clis.indexOf(picks[i - 1]!) + 1) % 3);
      t.notOk(inTurn, 'not the fixed round-robin turn', { picks });

      const capped = ['+15550005001', '+15550005002', '+15550005003'];
      const cap = await campaign('Random capped', capped, numbers(30, 10), {
        concurrency: 4,
        cliStrategy: { strategy: 'random', dailyCap: 3 },
      });
      const dialled = await eventually(async () => ((await attemptsOf(cap)).length >= 9 ? true : null), 90_000);
      // The tenth number waits for tomorrow: give the dialer a few more ticks to prove it does not go.
      await new Promise((r) => setTimeout(r, 20 * TICK_MS));
      const after = (await api('GET', `/dialer/campaigns/${cap}`)).body.data;
      t.ok(dialled, 'nine calls ended');
      t.equal((await attemptsOf(cap)).length, 9, 'nine calls: three caller IDs at three a day', { after });
      t.not(after.status, 'completed', 'the tenth number is still pending');
      const used = new Map<string, number>();
      for (const a of await attemptsOf(cap)) used.set(a.cli, (used.get(a.cli) ?? 0) + 1);
      t.same(
        [...used.entries()].sort(),
        capped.map((c) => [c.slice(1), 3]),
        'each caller ID used exactly up to its cap',
      );
      const stopped = await api('POST', `/dialer/campaigns/${cap}/control`, { action: 'stop' });
      t.equal(stopped.status, 200, stopped.text);
    });
  },
);
