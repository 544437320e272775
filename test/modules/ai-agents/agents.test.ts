import { randomUUID } from 'node:crypto';
import t from 'tap';
import { startTestDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { startChatServer, toolCall, type ChatRequest } from './chat-server.js';

/** Scripted answers: a draft in JSON mode, else tool calls by keywords of the last message. */
function chatServer(t: { teardown(fn: () => unknown): void }) {
  return startChatServer(t, (body: ChatRequest) => {
    const last = body.messages[body.messages.length - 1]!.content.toLowerCase();
    if (body.response_format?.type === 'json_object') {
      return {
        content: JSON.stringify({
          name: 'Dental reminder',
          firstMessage: 'Hi, this is Smile Dental calling about your appointment.',
          systemPrompt: 'You confirm dental appointments.',
          guardrails: 'Never give medical advice.',
          suggestedTools: ['end', 'capture', 'fly'],
        }),
      };
    }
    const tools: unknown[] = [];
    if (last.includes('goodbye')) tools.push(toolCall('end_call', { reason: 'done' }));
    if (last.includes('human')) tools.push(toolCall('transfer_call', { number: '+447700900000' }));
    if (last.includes('my name is')) tools.push(toolCall('capture', { fields: { name: 'Ada' } }));
    return {
      content: last.includes('goodbye') ? 'Goodbye!' : 'Sure, I can help.',
      ...(tools.length ? { tool_calls: tools } : {}),
    };
  });
}

async function keyFor(d: TestDaemon) {
  const acc = await d.modules.services.accounts.createAccount({
    email: `${randomUUID()}@ai.test`,
    password: 'correct horse battery 42',
  });
  return (await d.modules.services.keys.create(acc.id, { mode: 'live', scopes: ['dialer:write'] })).secret;
}

t.test('without providers, creating an agent names the missing setting', async (t) => {
  const d = await startTestDaemon(t);
  const token = await keyFor(d);
  const r = await d.https('POST', '/ai-agents', { token, body: { name: 'A', systemPrompt: 'Be nice.' } });
  t.equal(r.status, 400);
  t.equal(r.json.error.code, 'VALIDATION_ERROR');
  t.match(r.json.error.message, /\[ai\] chat_url/);
  const voices = await d.https('GET', '/ai-agents/voices', { token });
  t.ok(voices.json.data.length >= 55, `about 60 voices (${voices.json.data.length})`);
  t.match(voices.json.data[0], { id: 'espeak:en-us', language: 'en-US', is_pro: false });
  t.notOk(
    voices.json.data.some((v: { is_pro: boolean }) => v.is_pro),
    'no premium voices without a speech provider',
  );
});

t.test('agents over a local OpenAI-compatible chat server', async (t) => {
  const chat = await chatServer(t);
  const d = await startTestDaemon(t, {
    ai: { chat_url: chat.url, chat_api_key: 'sk-local', stt_url: '', chat_model: 'local-small' },
  });
  const token = await keyFor(d);
  const noStt = await d.https('POST', '/ai-agents', { token, body: { name: 'A', systemPrompt: 'x' } });
  t.match(noStt.json.error.message, /\[ai\] stt_url/, 'speech-to-text is named when only it is missing');
  t.equal(chat.seen.length, 0, 'nothing asked of the model');
});

t.test('agent CRUD, preview, draft and simulated turns', async (t) => {
  const chat = await chatServer(t);
  const d = await startTestDaemon(t, {
    ai: { chat_url: chat.url, chat_api_key: 'sk-local', stt_url: chat.url, chat_model: 'local-small' },
  });
  const token = await keyFor(d);
  const other = await keyFor(d);

  const created = await d.https('POST', '/ai-agents', {
    token,
    body: {
      name: 'Reception',
      systemPrompt: 'You book appointments for Smile Dental.',
      guardrails: 'Never quote prices.',
      firstMessage: 'Hello, Smile Dental.',
      tools: ['end', 'transfer', 'capture'],
      maxCallSeconds: 240,
      voiceId: 'espeak:en-gb',
    },
  });
  t.equal(created.status, 201, created.text);
  const a = created.json.data;
  t.match(a, {
    name: 'Reception',
    model: 'local-small',
    voiceProvider: 'espeak',
    language: 'en',
    maxCallSeconds: 240,
    enabled: true,
  });
  const bad = await d.https('POST', '/ai-agents', { token, body: { name: 'B', systemPrompt: 'x', tools: ['fly'] } });
  t.equal(bad.status, 400);
  t.equal(bad.json.error.details[0].path, 'tools/0');

  t.equal((await d.https('GET', `/ai-agents/${a.id}`, { token: other })).status, 404, 'not visible to another account');
  const patched = await d.https('PATCH', `/ai-agents/${a.id}`, {
    token,
    body: { enabled: false, model: 'local-large' },
  });
  t.match(patched.json.data, { enabled: false, model: 'local-large', name: 'Reception' });
  const list = await d.https('GET', '/ai-agents', { token });
  t.equal(list.json.data.length, 1);

  const preview = await d.https('POST', '/ai-agents/voices/preview', {
    token,
    body: { voiceId: 'espeak:en-gb', text: 'Thank you for calling.' },
  });
  t.equal(preview.status, 200);
  t.match(preview.headers['content-type'], /^audio\/mpeg/);
  t.ok(preview.text.length > 1000, 'some audio came back');

  const draft = await d.https('POST', '/ai-agents/draft', {
    token,
    body: { description: 'Remind dental patients of visits' },
  });
  t.equal(draft.status, 200, draft.text);
  t.same(draft.json.data, {
    name: 'Dental reminder',
    firstMessage: 'Hi, this is Smile Dental calling about your appointment.',
    systemPrompt: 'You confirm dental appointments.',
    guardrails: 'Never give medical advice.',
    suggestedTools: ['end', 'capture'],
  });
  t.equal((await d.https('GET', '/ai-agents', { token })).json.data.length, 1, 'a draft saves nothing');

  const turn = async (message: string, history: unknown[] = []) =>
    d.https('POST', `/ai-agents/${a.id}/simulate`, { token, body: { message, history } });
  const first = await turn('Can I book for Tuesday?');
  t.equal(first.status, 200, first.text);
  t.same(first.json.data, { reply: 'Sure, I can help.', action: 'continue', captured: {} });
  const asked = chat.seen[chat.seen.length - 1]!;
  t.equal(asked.model, 'local-large');
  t.match(asked.messages[0]!.content, /Smile Dental[\s\S]*Never quote prices/, 'system prompt with guardrails');
  t.same(asked.messages[1], { role: 'assistant', content: 'Hello, Smile Dental.' }, 'the first message opens the call');
  t.same(
    asked.tools!.map((x) => x.function.name),
    ['end_call', 'transfer_call', 'capture'],
  );
  t.same((await turn('My name is Ada', [{ role: 'user', content: 'hi' }])).json.data.captured, { name: 'Ada' });
  t.match((await turn('Put me through to a human')).json.data, { action: 'transfer', transferTo: '+447700900000' });
  t.match((await turn('ok goodbye')).json.data, { action: 'end', reply: 'Goodbye!' });

  await d.https('PATCH', `/ai-agents/${a.id}`, { token, body: { tools: ['capture'] } });
  t.match((await turn('ok goodbye')).json.data, { action: 'continue' }, 'a tool the agent was not given is ignored');

  let limited = null;
  for (let i = 0; i < 20 && !limited; i++) {
    const r = await turn('again');
    if (r.status === 429) limited = r;
  }
  t.ok(limited, 'simulate is limited to 20 a minute');
  t.ok(Number(limited?.headers['retry-after']) > 0, 'with Retry-After');

  t.same((await d.https('DELETE', `/ai-agents/${a.id}`, { token })).json.data, { id: a.id });
  t.equal((await d.https('GET', `/ai-agents/${a.id}`, { token })).status, 404);
});
