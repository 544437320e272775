import { randomUUID } from 'node:crypto';
import t from 'tap';
import { startTestDaemon } from '../../helpers/daemon.js';
import { startChatServer, toolCall, type ChatRequest } from '../ai-agents/chat-server.js';

/**
 * POST /dialer/agent/ask against a local chat server scripted like a model that reads the
 * campaigns, pauses the one asked for, then answers; every tool call is reported.
 */
/** A daemon whose `[ai]` chat model is the scripted local server, an account and its campaign scheduled for tomorrow. */
async function withCampaign(
  t: Parameters<typeof startTestDaemon>[0] & { equal(found: unknown, wanted: unknown, message: string): boolean },
  script: (req: ChatRequest) => Record<string, unknown>,
) {
  const chat = await startChatServer(t, script);
  const d = await startTestDaemon(t, { ai: { chat_url: chat.url, chat_api_key: 'sk-local' } });
  const { accounts, keys } = d.modules.services;
  const acc = await accounts.createAccount({ email: `${randomUUID()}@ask.test`, password: 'correct horse battery 42' });
  const token = (await keys.create(acc.id, { mode: 'live', scopes: ['dialer:write'] })).secret;
  const full = (await keys.create(acc.id, { mode: 'live', scopes: [] })).secret;
  // A purchased route is needed for a campaign: an own route of the account counts.
  const route = await d.https('POST', '/routes', {
    token: full,
    body: {
      type: 'voice',
      name: 'own',
      country: 'GB',
      billingIncrement: '60/60',
      endpoints: [{ host: '127.0.0.1', port: 9, transport: 'udp' }],
    },
  });
  t.equal(route.status, 201, route.text);
  await d.https('POST', `/routes/${route.json.data.id}/rates`, {
    token: full,
    body: { format: 'csv', csv: 'prefix,destination,rate\n44,UK,0.010\n' },
  });
  const cli = (await d.https('POST', '/dialer/cli-sets', { token, body: { name: 'c', clis: ['+15550001111'] } })).json
    .data;
  const created = await d.https('POST', '/dialer/campaigns', {
    token,
    body: {
      name: 'Spring sale',
      routeId: route.json.data.id,
      cliSetId: cli.id,
      actions: [{ say: 'Hi' }],
      scheduleAt: new Date(Date.now() + 86400_000).toISOString(),
    },
  });
  t.equal(created.status, 201, created.text);
  const id = created.json.data.id as string;
  await d.https('POST', `/dialer/campaigns/${id}/numbers`, { token, body: { numbers: ['+447700900001'] } });
  const started = await d.https('POST', `/dialer/campaigns/${id}/control`, { token, body: { action: 'start' } });
  t.equal(started.json.data.status, 'ready', 'scheduled for tomorrow');

  return { d, token, full, id, acc, chat };
}

t.test('the dialer assistant reads the account data and performs the action asked for', async (t) => {
  const script = (req: ChatRequest) => {
    const tools = req.messages.filter((m) => m.role === 'tool');
    if (tools.length === 0)
      return {
        content: '',
        tool_calls: [toolCall('list_campaigns', {}), toolCall('get_campaign', { campaignId: 'nope' })],
      };
    if (tools.length === 2) {
      const list = JSON.parse(tools[0]!.content) as { id: string; name: string }[];
      const target = list.find((c) => c.name === 'Spring sale')!;
      return { content: '', tool_calls: [toolCall('control_campaign', { campaignId: target.id, action: 'pause' })] };
    }
    const result = JSON.parse(tools[2]!.content) as { status: string; name: string };
    return { content: `${result.name} is now ${result.status}.` };
  };
  const { d, token, id, chat } = await withCampaign(t, script);
  const r = await d.https('POST', '/dialer/agent/ask', { token, body: { message: 'Pause my spring sale campaign' } });
  t.equal(r.status, 200, r.text);
  t.same(r.json.data.actions, [
    { tool: 'list_campaigns', ok: true, write: false },
    { tool: 'get_campaign', ok: false, write: false },
    { tool: 'control_campaign', ok: true, write: true },
  ]);
  t.equal(r.json.data.reply, 'Spring sale is now paused.');
  t.equal(
    (await d.https('GET', `/dialer/campaigns/${id}`, { token })).json.data.status,
    'paused',
    'the action was performed',
  );
  t.same(r.json.data.history, [
    { role: 'user', content: 'Pause my spring sale campaign' },
    { role: 'assistant', content: 'Spring sale is now paused.' },
  ]);
  t.ok(r.json.data.suggestions.length > 0);
  const last = chat.seen[chat.seen.length - 1]!;
  t.ok(
    last.messages.some((m) => m.role === 'tool' && m.tool_call_id),
    'tool results go back with their call ids',
  );
  t.ok(last.messages.some((m) => m.role === 'assistant' && Array.isArray(m.tool_calls)));
});

t.test('the assistant records a disposition, which the analytics count with its label', async (t) => {
  let attemptId = '';
  let campaignId = '';
  const script = (req: ChatRequest) => {
    const tools = req.messages.filter((m) => m.role === 'tool');
    if (tools.length === 0)
      return {
        content: '',
        tool_calls: [
          toolCall('set_disposition', { campaignId, attemptId, disposition: 'Not Valid!' }),
          toolCall('set_disposition', { campaignId, attemptId, disposition: 'interested', note: 'wants a demo' }),
        ],
      };
    return { content: 'Marked as interested.' };
  };
  const { d, token, full, id, acc } = await withCampaign(t, script);
  campaignId = id;
  attemptId = randomUUID();
  const at = new Date();
  await d.sql`
    insert into dialer_attempts (id, campaign_id, account_id, number, attempt, cli, status, duration_seconds,
                                 cost, started_at, ended_at)
    values (${attemptId}, ${id}, ${acc.id}, '447700900001', 1, '15550001111', 'completed', 30, 0.005, ${at}, ${at})`;
  const r = await d.https('POST', '/dialer/agent/ask', { token, body: { message: 'The first call was interested' } });
  t.equal(r.status, 200, r.text);
  t.same(r.json.data.actions, [
    { tool: 'set_disposition', ok: false, write: true },
    { tool: 'set_disposition', ok: true, write: true },
  ]);
  const results = await d.https('GET', `/dialer/campaigns/${id}/results`, { token });
  t.match(results.json.data, [{ id: attemptId, disposition: 'interested', dispositionNote: 'wants a demo' }]);
  const figures = await d.https('GET', `/dialer/campaigns/${id}/analytics`, { token: full });
  t.equal(figures.status, 200, figures.text);
  t.same(
    figures.json.data.dispositionCodes.map((x: { code: string; label: string; count: number }) => [
      x.code,
      x.label,
      x.count,
    ]),
    [['interested', 'Interested', 1]],
  );
});
