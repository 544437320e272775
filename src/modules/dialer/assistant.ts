import { AppError, notFound, ruleError } from '../../http/errors.js';
import type { ChatMessage, ChatProvider, ChatTool } from '../ai-agents/providers.js';
import type { DialerAnalytics } from './analytics.js';
import type { CampaignsService } from './campaigns.js';
import type { Results } from './results.js';

/** The do-not-call operations the assistant may use. */
export interface AssistantDnc {
  check(accountId: string, number: string): Promise<unknown>;
  add(accountId: string, input: { numbers?: string[] }): Promise<unknown>;
}

interface Tool extends ChatTool {
  write: boolean;
  run(accountId: string, args: Record<string, unknown>): Promise<unknown>;
}

const MAX_ROUNDS = 5;
const MAX_HISTORY = 40;

const str = (v: unknown, what: string): string => {
  if (typeof v !== 'string' || v === '') throw ruleError(`${what} is required`);
  return v;
};

const DISPOSITION = /^[a-z0-9_]{1,40}$/;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A campaign id as the model gave it: anything but a UUID names no campaign. */
const campaignId = (v: unknown): string => {
  const id = str(v, 'campaignId');
  if (!UUID.test(id)) throw notFound('Campaign');
  return id;
};

/**
 * `POST /dialer/agent/ask`: a chat model answering from the account's own dialer data and
 * performing the dialer actions asked for, through tools that call the same services as the
 * HTTP operations (so every rule and refusal applies). Each tool call is reported with `ok`
 * and `write`.
 */
export function createDialerAssistant(deps: {
  chat: ChatProvider | null;
  model: string;
  campaigns: CampaignsService;
  analytics: DialerAnalytics;
  dnc: AssistantDnc;
  results: Pick<Results, 'setDisposition'>;
  now: () => Date;
}) {
  const { campaigns } = deps;
  const brief = (c: Awaited<ReturnType<CampaignsService['get']>>) => ({
    id: c.id,
    name: c.name,
    kind: c.kind,
    status: c.status,
    statusReason: c.statusReason,
    totalNumbers: c.totalNumbers,
    numbersDialed: c.numbersDialed,
    numbersAnswered: c.numbersAnswered,
    numbersFailed: c.numbersFailed,
    spent: c.spent,
    maxSpend: c.maxSpend,
  });
  const id = { type: 'object', properties: { campaignId: { type: 'string' } }, required: ['campaignId'] };

  const tools: Tool[] = [
    {
      name: 'list_campaigns',
      description: 'List the account campaigns (newest first), optionally by status.',
      parameters: { type: 'object', properties: { status: { type: 'string' } } },
      write: false,
      run: async (a, x) =>
        (await campaigns.list(a, { status: typeof x['status'] === 'string' ? x['status'] : undefined, limit: 50 })).map(
          brief,
        ),
    },
    {
      name: 'get_campaign',
      description: 'One campaign with its settings and counters.',
      parameters: id,
      write: false,
      run: (a, x) => campaigns.get(a, campaignId(x['campaignId'])),
    },
    {
      name: 'campaign_analytics',
      description:
        'Figures of one campaign: connect rate, ASR, ACD, best hour, dispositions, failure causes, by hour and destination.',
      parameters: id,
      write: false,
      run: async (a, x) => deps.analytics.campaign(await campaigns.mustGet(a, campaignId(x['campaignId']))),
    },
    {
      name: 'analytics_overview',
      description: 'Figures of every campaign over the last 30 days.',
      parameters: { type: 'object', properties: {} },
      write: false,
      run: (a) => {
        // The injected clock, as the runner's: "the last 30 days" is the exchange's days, not the host's.
        const to = deps.now();
        return deps.analytics.overview(a, new Date(to.getTime() - 30 * 86400_000), to);
      },
    },
    {
      name: 'control_campaign',
      description: 'Start, pause or stop a campaign.',
      parameters: {
        type: 'object',
        properties: { campaignId: { type: 'string' }, action: { type: 'string', enum: ['start', 'pause', 'stop'] } },
        required: ['campaignId', 'action'],
      },
      write: true,
      run: async (a, x) => {
        const action = str(x['action'], 'action');
        if (action !== 'start' && action !== 'pause' && action !== 'stop')
          throw ruleError('action must be start, pause or stop');
        return brief(await campaigns.control(a, campaignId(x['campaignId']), action));
      },
    },
    {
      name: 'set_disposition',
      description:
        "Record the account's outcome of one call of a campaign (its attempt id from the results): a code of " +
        'lower-case letters, digits and _ (interested, callback, wrong_number…), or null to clear it, with an optional note.',
      parameters: {
        type: 'object',
        properties: {
          campaignId: { type: 'string' },
          attemptId: { type: 'string' },
          disposition: { type: ['string', 'null'] },
          note: { type: 'string' },
        },
        required: ['campaignId', 'attemptId', 'disposition'],
      },
      write: true,
      run: async (a, x) => {
        const c = await campaigns.mustGet(a, campaignId(x['campaignId']));
        const attemptId = str(x['attemptId'], 'attemptId');
        if (!UUID.test(attemptId)) throw notFound('Attempt');
        const d = x['disposition'];
        if (d !== null && (typeof d !== 'string' || !DISPOSITION.test(d)))
          throw ruleError('disposition must be 1-40 lower-case letters, digits or _, or null');
        const note = typeof x['note'] === 'string' ? x['note'].slice(0, 1000) : null;
        return deps.results.setDisposition(c.id, attemptId, { disposition: d, note }, deps.now());
      },
    },
    {
      name: 'check_do_not_call',
      description: 'Whether a number is on the do-not-call list.',
      parameters: { type: 'object', properties: { number: { type: 'string' } }, required: ['number'] },
      write: false,
      run: (a, x) => deps.dnc.check(a, str(x['number'], 'number')),
    },
    {
      name: 'add_do_not_call',
      description: 'Add numbers (E.164) to the do-not-call list.',
      parameters: {
        type: 'object',
        properties: { numbers: { type: 'array', items: { type: 'string' } } },
        required: ['numbers'],
      },
      write: true,
      run: (a, x) =>
        deps.dnc.add(a, {
          numbers: Array.isArray(x['numbers'])
            ? x['numbers'].filter((n): n is string => typeof n === 'string').slice(0, 1000)
            : [],
        }),
    },
  ];
  const byName = new Map(tools.map((t) => [t.name, t]));

  return async function ask(
    accountId: string,
    input: { message: string; history?: { role: 'user' | 'assistant'; content: string }[] | undefined },
  ) {
    if (!deps.chat) throw ruleError('The dialer assistant needs a chat model provider: set [ai] chat_url');
    const history = (input.history ?? []).slice(-MAX_HISTORY);
    const messages: ChatMessage[] = [
      {
        role: 'system',
        content:
          "You are the assistant of a voice and SMS dialer. Answer from the account's data, which you read with the tools; " +
          'never invent figures. Perform the actions the user asks for with the tools, and only those. Money is in USD. ' +
          'Be brief.',
      },
      ...history.map((h) => ({ role: h.role, content: h.content })),
      { role: 'user', content: input.message },
    ];
    const actions: { tool: string; ok: boolean; write: boolean }[] = [];
    let reply = '';
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const r = await deps.chat.complete({ model: deps.model, messages, tools });
      if (r.toolCalls.length === 0) {
        reply = r.content.trim();
        break;
      }
      messages.push({ role: 'assistant', content: r.content, toolCalls: r.toolCalls });
      for (const call of r.toolCalls) {
        const tool = byName.get(call.name);
        let result: unknown;
        let ok = false;
        if (!tool) result = { error: `no tool named ${call.name}` };
        else {
          try {
            result = await tool.run(accountId, call.arguments);
            ok = true;
          } catch (err) {
            if (!(err instanceof AppError)) throw err;
            result = { error: err.message };
          }
        }
        actions.push({ tool: call.name, ok, write: tool?.write ?? false });
        messages.push({ role: 'tool', toolCallId: call.id, content: JSON.stringify(result).slice(0, 20_000) });
      }
    }
    if (!reply) reply = 'I could not finish that; try asking in smaller steps.';
    const running = (await campaigns.list(accountId, { status: 'running', limit: 1 }))[0];
    const suggestions = running
      ? [`How is "${running.name}" doing?`, `Pause "${running.name}"`, 'Which hour answers best?']
      : ['Show my campaigns', 'How did my campaigns do this month?', 'Is a number on my do-not-call list?'];
    return {
      reply,
      actions,
      suggestions,
      history: [
        ...history,
        { role: 'user' as const, content: input.message },
        { role: 'assistant' as const, content: reply },
      ],
    };
  };
}

export type DialerAssistant = ReturnType<typeof createDialerAssistant>;
