import t from 'tap';
import { createWorld, eventually } from '../sip-trunks/world.js';
import { available, callee, MANY } from '../api-calls/peers.js';
import { sippMediaPort, sipp } from '../../telephony/sip/sipp.js';

/**
 * A campaign's calls are bounded by its own `concurrency` and the account's `[dialer]
 * max_calls_per_account`, not by `[voice] max_api_calls_per_account` (POST /comms/calls only): with
 * the API cap at 1 and the campaign cap at 2, a campaign of concurrency 4 holds two calls at once,
 * never three, against a sipp callee; a call refused by the cap is retried without counting an attempt.
 */
t.test(
  'campaign calls use their own bound',
  { skip: available ? false : 'sipp or espeak-ng not installed' },
  async (t) => {
    const base = 43000 + (process.pid % 300) * 20;
    const w = await createWorld(t, {
      rtp: { port_min: base, port_max: base + 19, bind_address: '127.0.0.1' },
      voice: { max_api_calls_per_account: 1 },
      dialer: { tick_ms: 50, call_poll_ms: 150, max_calls_per_account: 2 },
    });
    const { d, operator } = w;
    const { secret } = await d.modules.services.keys.create(operator.accountId, { mode: 'live', scopes: [] });
    const api = (method: string, url: string, body?: unknown) => w.api(method, url, secret, body);
    const peer = await sipp(t, callee('[0-9]+', '', false), ['-mp', String(await sippMediaPort())], {
      timeout: '60s',
      calls: MANY,
    });
    const { routeId } = await w.route({ port: peer.port, prefix: '4473', rate: '0.012000', increment: '1/1' });
    const clis = (await api('POST', '/dialer/cli-sets', { name: 'main', clis: ['+15550001111'] })).body.data;
    const created = await api('POST', '/dialer/campaigns', {
      name: 'Bounded',
      routeId,
      concurrency: 4,
      maxCallDuration: 30,
      cliSetId: clis.id,
      actions: [{ pause: 2 }, { hangup: true }],
    });
    t.equal(created.status, 201, created.text);
    const c = created.body.data;
    const numbers = Array.from({ length: 6 }, (_, i) => `+44730000020${i}`);
    t.equal((await api('POST', `/dialer/campaigns/${c.id}/numbers`, { numbers })).status, 200);
    t.equal((await api('POST', `/dialer/campaigns/${c.id}/control`, { action: 'start' })).status, 200);
    const done = await eventually(async () => {
      const r = (await api('GET', `/dialer/campaigns/${c.id}`)).body.data;
      return r.status === 'completed' ? r : null;
    }, 120_000);
    t.match(done, { numbersDialed: 6, numbersAnswered: 6, numbersFailed: 0 });

    // The calls' own records: how many were up at once (answer to end).
    const calls = await d.sql<{ answeredAt: Date; endedAt: Date }[]>`
    select c.answered_at, c.ended_at from dialer_attempts a join calls c on c.id = a.call_id
    where a.campaign_id = ${c.id} and c.answered_at is not null`;
    t.equal(calls.length, 6);
    const edges = calls.flatMap((x) => [
      { at: x.answeredAt.getTime(), step: 1 },
      { at: x.endedAt.getTime(), step: -1 },
    ]);
    edges.sort((a, b) => a.at - b.at || a.step - b.step);
    let up = 0;
    let most = 0;
    for (const e of edges) most = Math.max(most, (up += e.step));
    t.equal(most, 2, 'two campaign calls at once: above the API cap of 1, at the campaign cap of 2');
    const attempts = await d.sql<{ n: number }[]>`
    select count(*)::int as n from dialer_attempts where campaign_id = ${c.id}`;
    t.equal(attempts[0]!.n, 6, 'calls refused by the cap counted no attempt');
  },
);
