import t from 'tap';
import { eventually } from '../sip-trunks/world.js';
import { available } from '../api-calls/peers.js';
import { liveDialer } from '../../helpers/dialer.js';

/**
 * Two campaigns of one account on one runner, sharing `[dialer] max_calls_per_account` = 2 against a
 * sipp that answers: a busy one at concurrency 2 that fills both slots, and a paced one started once
 * the busy one holds them. The paced one's calls are refused by the limit at first; it must get the
 * next slot a busy call frees rather than wait until the busy campaign has run out of numbers (the
 * busy campaign refills every slot it frees at once, so a refused campaign that only tries again on
 * a timer never finds one free).
 */
t.test(
  'a campaign refused by a shared limit gets the next freed slot',
  { skip: available ? false : 'sipp or espeak-ng not installed' },
  async (t) => {
    const w = await liveDialer(t, { tick_ms: 50, max_calls_per_account: 2 });
    const api = w.liveApi;
    const set = await api('POST', '/dialer/cli-sets', { name: 'shared', clis: ['+15550008001'] });
    t.equal(set.status, 201, set.text);

    async function campaign(name: string, numbers: string[], extra: Record<string, unknown>) {
      const created = await api('POST', '/dialer/campaigns', {
        name,
        routeId: w.routeId,
        kind: 'voice',
        maxCallDuration: 30,
        cliSetId: set.body.data.id,
        actions: [{ pause: 1 }, { hangup: true }],
        ...extra,
      });
      t.equal(created.status, 201, created.text);
      const id = created.body.data.id as string;
      t.equal((await api('POST', `/dialer/campaigns/${id}/numbers`, { numbers })).status, 200);
      return id;
    }
    const get = async (id: string) => (await api('GET', `/dialer/campaigns/${id}`)).body.data;
    const numbers = (from: number, n: number) =>
      Array.from({ length: n }, (_, i) => `+4473000003${String(from + i).padStart(2, '0')}`);

    const BUSY = 60;
    const busy = await campaign('Busy', numbers(0, BUSY), { concurrency: 2 });
    const paced = await campaign('Paced', numbers(80, 3), { concurrency: 1, callInterval: 200 });
    t.equal((await api('POST', `/dialer/campaigns/${busy}/control`, { action: 'start' })).status, 200);
    // Both slots taken by the busy campaign before the paced one starts.
    await eventually(async () => ((await get(busy)).numbersDialed >= 2 ? true : null), 60_000);
    t.equal((await api('POST', `/dialer/campaigns/${paced}/control`, { action: 'start' })).status, 200);

    const done = await eventually(async () => {
      const c = await get(paced);
      return c.status === 'completed' ? c : null;
    }, 120_000);
    const busyThen = await get(busy);
    t.match(done, { numbersDialed: 3, numbersAnswered: 3, numbersFailed: 0 }, 'the paced campaign called each number');
    // Fair shares: each paced call takes the next freed slot, so the busy campaign has made a few
    // calls meanwhile, far from all of them (a paced campaign left to a timer finishes near its end).
    t.ok(busyThen.numbersDialed < BUSY / 2, 'the paced campaign finished while the busy one was early on', {
      busyDialed: busyThen.numbersDialed,
    });
    t.comment(`busy campaign dialled ${String(busyThen.numbersDialed)} of ${BUSY} when the paced one completed`);
    t.equal(busyThen.status, 'running');

    const [peak] = await w.d.sql<{ n: number }[]>`
      select coalesce(max(n), 0)::int as n from (
        select count(*) as n from dialer_attempts a join dialer_attempts b
          on b.account_id = a.account_id and b.started_at <= a.started_at and b.ended_at > a.started_at
        where a.account_id = ${w.operator.accountId} group by a.id) x`;
    t.ok(peak!.n <= 2, `never more than the account's 2 campaign calls at once (peak ${peak!.n})`);
    const refusedAttempts = await w.d.sql`
      select 1 from dialer_attempts where campaign_id in (${busy}, ${paced}) and status <> 'completed'`;
    t.equal(refusedAttempts.length, 0, 'a refusal by the limit is no attempt: every attempt was a completed call');

    t.equal((await api('POST', `/dialer/campaigns/${busy}/control`, { action: 'stop' })).status, 200);
  },
);
