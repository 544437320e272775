import t from 'tap';
import { startChatServer, toolCall, type ChatRequest } from '../ai-agents/chat-server.js';
import { simulatedDialer } from '../../helpers/dialer.js';

/**
 * On the dialer's injected clock (late March 2026, months from the host's date): a do-not-call entry
 * added while a campaign runs is never dialled (the list is asked at dial time), and the analytics
 * overview and the assistant's `analytics_overview` read "the last 30 days" on that clock with every
 * field the spec lists. Test-key campaign: placed, priced and recorded as the runner does, never dialled.
 */
t.test('dial-time do-not-call and analytics on the injected clock', async (t) => {
  let overviewSeen: { headline: { dialed: number }; window: { to: string } } | null = null;
  const chat = await startChatServer(t, (req: ChatRequest) => {
    const tools = req.messages.filter((m) => m.role === 'tool');
    if (tools.length === 0) return { content: '', tool_calls: [toolCall('analytics_overview', {})] };
    overviewSeen = JSON.parse(tools[0]!.content) as typeof overviewSeen;
    return { content: `${overviewSeen!.headline.dialed} numbers dialled in the last 30 days.` };
  });
  const w = await simulatedDialer(t, '2026-03-30T22:50:00Z', {
    overrides: { ai: { chat_url: chat.url, chat_api_key: 'sk-local' } },
  });
  const { d, live, test, moveTo } = w;
  const numbers = ['8001', '8002', '8003', '8101', '8102', '8103', '8004'].map((n) => `+44750000${n}`);
  const id = await w.campaign('Reminders', numbers, {
    cliSetId: await w.cliSet(['+15550008001']),
    cliStrategy: { strategy: 'round_robin', dailyCap: 2 },
  });
  t.equal((await w.control(id, 'start')).status, 200);
  const get = () => w.get(id);

  // The cap holds the campaign after two calls on 30 March, running: the list changes under it.
  await w.until(id, (c) => c.numbersDialed === 2);
  const listed = await w.api('POST', '/dnc', live, { numbers: ['+447500008003'], prefixes: ['4475000081'] });
  t.equal(listed.status, 200, listed.text);
  t.match(await get(), { status: 'running', numbersDialed: 2 });

  moveTo('2026-03-31T00:05:00Z');
  const done = await w.until(id, (c) => c.status === 'completed');
  t.match(done, { numbersDialed: 3, numbersAnswered: 3, numbersFailed: 4, statusReason: 'all_numbers_done' });
  const attempts = await d.sql<{ number: string; startedAt: Date; spend: string }[]>`
    select number, started_at, (cost + fee)::numeric(20,6)::text as spend
    from dialer_attempts where campaign_id = ${id} order by started_at`;
  t.same(
    attempts.map((a) => a.number),
    ['447500008001', '447500008002', '447500008004'],
    'entries listed while the campaign ran were never dialled; the next unlisted number was',
  );
  const calls = await d.sql<{ to: string }[]>`select to_number as to from calls where source = 'api'`;
  t.notOk(
    calls.some((c) => /^\+?(447500008003|4475000081)/.test(c.to)),
    'no call record to a listed number',
  );
  const states = await w.api('GET', `/dialer/campaigns/${id}/numbers?state=blocked`, test);
  t.same(
    states.body.data.map((n: { number: string }) => n.number),
    ['+447500008003', '+447500008101', '+447500008102', '+447500008103'],
  );

  // The overview's default window ends at the injected clock: the host's date would hold none of these calls.
  const overview = await w.api('GET', '/dialer/analytics/overview', live);
  t.equal(overview.status, 200, overview.text);
  const o = overview.body.data;
  t.match(o.window.to, /^2026-03-31T00:0/, 'the window ends now on the injected clock');
  t.equal(Date.parse(o.window.to) - Date.parse(o.window.from), 30 * 86400_000, 'and spans 30 days');
  const spend = attempts.reduce((s, a) => s + Math.round(Number(a.spend) * 1e6), 0);
  const money = (micro: number) => (micro / 1e6).toFixed(6);
  t.match(o.campaigns, { completed: 1, total: 1 });
  t.same(Object.keys(o.headline).sort(), [
    'acd',
    'answered',
    'connectRate',
    'costPerAnswered',
    'costPerMinute',
    'dialed',
    'failed',
    'spend',
    'talkMinutes',
  ]);
  t.match(o.headline, { dialed: 3, answered: 3, connectRate: 1, spend: money(spend) });
  t.equal(done.spent, money(spend), 'the overview spend is the campaign spend');
  t.equal(o.headline.costPerAnswered, money(Math.round(spend / 3)));
  t.match(o.topDestinations, [{ destination: '+44', country: 'GB', attempts: 3, answered: 3 }]);
  t.equal(o.byHour.length, 24);
  t.match(o.byHour[22], { hour: 22, attempts: 2 });
  t.match(o.byHour[0], { hour: 0, attempts: 1 });
  t.same(
    o.daily.map((x: { date: string; attempts: number }) => [x.date, x.attempts]),
    [
      ['2026-03-30', 2],
      ['2026-03-31', 1],
    ],
  );
  t.match(o.topCampaigns, [{ id, name: 'Reminders', attempts: 3, answered: 3, asr: 1 }]);
  const hostDays = await w.api(
    'GET',
    `/dialer/analytics/overview?to=${encodeURIComponent(new Date().toISOString())}`,
    live,
  );
  t.match(hostDays.body.data.headline, { dialed: 0 }, "the host's last 30 days hold none of them");

  const asked = await w.api('POST', '/dialer/agent/ask', live, { message: 'How many numbers did we dial this month?' });
  t.equal(asked.status, 200, asked.text);
  t.same(asked.body.data.actions, [{ tool: 'analytics_overview', ok: true, write: false }]);
  t.equal(asked.body.data.reply, '3 numbers dialled in the last 30 days.');
  t.match(overviewSeen, { window: { to: /^2026-03-31T00:0/ } }, "the assistant's window ends on the injected clock");
});
