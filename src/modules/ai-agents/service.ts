import type { Config } from '../../config/schema.js';
import type { Sql } from '../../db/connection.js';
import { AppError, notFound, ruleError, validationError } from '../../http/errors.js';
import type { Clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import type { ChatProvider, SpeechProvider } from './providers.js';
import { AGENT_TOOLS, readToolCalls, toolsFor, turnMessages } from './turn.js';

export { AGENT_TOOLS } from './turn.js';
import { espeakMp3, voiceCatalog } from './voices.js';

export interface AgentInput {
  name?: string | undefined;
  voiceId?: string | null | undefined;
  voiceProvider?: string | undefined;
  language?: string | undefined;
  firstMessage?: string | null | undefined;
  systemPrompt?: string | undefined;
  model?: string | undefined;
  guardrails?: string | null | undefined;
  tools?: string[] | undefined;
  maxCallSeconds?: number | undefined;
  enabled?: boolean | undefined;
}

interface AgentRow {
  id: string;
  accountId: string;
  name: string;
  voiceId: string | null;
  voiceProvider: string;
  language: string;
  firstMessage: string | null;
  systemPrompt: string;
  model: string;
  guardrails: string | null;
  tools: string[];
  maxCallSeconds: number;
  enabled: boolean;
  createdAt: Date;
  updatedAt: Date;
}

const view = (r: AgentRow) => ({
  id: r.id,
  userId: r.accountId,
  name: r.name,
  voiceId: r.voiceId,
  voiceProvider: r.voiceProvider,
  language: r.language,
  firstMessage: r.firstMessage,
  systemPrompt: r.systemPrompt,
  model: r.model,
  guardrails: r.guardrails,
  tools: r.tools,
  maxCallSeconds: r.maxCallSeconds,
  enabled: r.enabled,
  createdAt: r.createdAt.toISOString(),
  updatedAt: r.updatedAt.toISOString(),
});

const COLUMNS =
  'id, account_id, name, voice_id, voice_provider, language, first_message, system_prompt, model, guardrails, tools, max_call_seconds, enabled, created_at, updated_at';

export function createAiAgentsService(deps: {
  sql: Sql;
  clock: Clock;
  config: Readonly<Config>;
  chat: ChatProvider | null;
  speech: SpeechProvider | null;
}) {
  const { sql, clock, config } = deps;

  /** The missing provider setting, named, so an operator knows what to set (spec: never a fake reply). */
  function needChat(): ChatProvider {
    if (!deps.chat)
      throw ruleError(
        'AI voice agents need a chat model provider: set [ai] chat_url (an OpenAI-compatible chat completions endpoint)',
      );
    return deps.chat;
  }

  function checkVoice(input: AgentInput): void {
    if (input.voiceId == null) return;
    if (!voiceCatalog(deps.speech !== null).some((v) => v.id === input.voiceId)) {
      throw validationError([{ path: 'voiceId', message: 'not a voice of GET /ai-agents/voices' }]);
    }
  }

  function checkTools(tools: string[] | undefined): void {
    const bad = (tools ?? []).findIndex((t) => !(AGENT_TOOLS as readonly string[]).includes(t));
    if (bad >= 0)
      throw validationError([{ path: `tools/${bad}`, message: `must be one of ${AGENT_TOOLS.join(', ')}` }]);
  }

  async function mustGet(accountId: string, id: string): Promise<AgentRow> {
    const [r] = await sql<
      AgentRow[]
    >`select ${sql.unsafe(COLUMNS)} from ai_agents where id = ${id} and account_id = ${accountId}`;
    if (!r) throw notFound('AI agent');
    return r;
  }

  return {
    voices: () => voiceCatalog(deps.speech !== null),

    async create(accountId: string, input: AgentInput & { name: string; systemPrompt: string }) {
      needChat();
      if (!config.ai.stt_url) {
        throw ruleError(
          'AI voice agents need a speech-to-text provider: set [ai] stt_url (an OpenAI-compatible transcription endpoint)',
        );
      }
      checkVoice(input);
      checkTools(input.tools);
      const now = clock.now();
      const voiceId = input.voiceId ?? 'espeak:en-us';
      const [r] = await sql<AgentRow[]>`
        insert into ai_agents (id, account_id, name, voice_id, voice_provider, language, first_message, system_prompt, model,
                               guardrails, tools, max_call_seconds, enabled, created_at, updated_at)
        values (${newId()}, ${accountId}, ${input.name}, ${voiceId}, ${input.voiceProvider ?? voiceId.split(':')[0]!},
                ${input.language ?? 'en'}, ${input.firstMessage ?? null}, ${input.systemPrompt}, ${input.model ?? config.ai.chat_model},
                ${input.guardrails ?? null}, ${input.tools ?? ['end']}, ${input.maxCallSeconds ?? 300}, ${input.enabled ?? true}, ${now}, ${now})
        returning ${sql.unsafe(COLUMNS)}`;
      return view(r!);
    },

    async list(accountId: string, q: { cursor?: string | undefined; limit: number }) {
      const rows = await sql<AgentRow[]>`
        select ${sql.unsafe(COLUMNS)} from ai_agents where account_id = ${accountId}
        ${q.cursor ? sql`and id < ${q.cursor}` : sql``} order by id desc limit ${q.limit + 1}`;
      return rows.map(view);
    },

    get: async (accountId: string, id: string) => view(await mustGet(accountId, id)),

    async update(accountId: string, id: string, input: AgentInput) {
      await mustGet(accountId, id);
      checkVoice(input);
      checkTools(input.tools);
      const f: Record<string, unknown> = {};
      for (const k of [
        'name',
        'voiceId',
        'voiceProvider',
        'language',
        'firstMessage',
        'systemPrompt',
        'model',
        'guardrails',
        'tools',
        'maxCallSeconds',
        'enabled',
      ] as const) {
        if (input[k] !== undefined) f[k] = input[k];
      }
      f['updatedAt'] = clock.now();
      const [r] = await sql<
        AgentRow[]
      >`update ai_agents set ${sql(f as never)} where id = ${id} returning ${sql.unsafe(COLUMNS)}`;
      return view(r!);
    },

    async remove(accountId: string, id: string) {
      await mustGet(accountId, id);
      await sql`delete from ai_agents where id = ${id}`;
      return { id };
    },

    async preview(input: { voiceId: string; text: string }): Promise<Buffer> {
      const [provider, voice] = input.voiceId.split(':', 2) as [string, string | undefined];
      if (!voiceCatalog(deps.speech !== null).some((v) => v.id === input.voiceId) || !voice) {
        throw validationError([{ path: 'voiceId', message: 'not a voice of GET /ai-agents/voices' }]);
      }
      if (provider === 'openai') return deps.speech!.speak({ voice, text: input.text });
      return espeakMp3(voice, input.text);
    },

    /** An agent drafted from a description by the chat model; nothing is saved. */
    async draft(description: string) {
      const chat = needChat();
      const reply = await chat.complete({
        model: config.ai.chat_model,
        json: true,
        messages: [
          {
            role: 'system',
            content:
              'You design phone voice agents. Answer with one JSON object with string fields "name" (at most 120 characters), ' +
              '"firstMessage" (what the agent says first, at most 500), "systemPrompt" (at most 8000), "guardrails" (at most 4000) ' +
              `and "suggestedTools", an array drawn from ${JSON.stringify(AGENT_TOOLS)}.`,
          },
          { role: 'user', content: description },
        ],
      });
      let parsed: Record<string, unknown>;
      try {
        const v: unknown = JSON.parse(reply.content);
        if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('not an object');
        parsed = v as Record<string, unknown>;
      } catch {
        throw new AppError('SERVICE_UNAVAILABLE', 'The chat model did not answer with a draft; try again');
      }
      const text = (k: string, max: number) =>
        typeof parsed[k] === 'string' ? (parsed[k] as string).slice(0, max) : '';
      const tools = Array.isArray(parsed['suggestedTools']) ? parsed['suggestedTools'] : [];
      const name = text('name', 120);
      const systemPrompt = text('systemPrompt', 8000);
      if (!name || !systemPrompt)
        throw new AppError('SERVICE_UNAVAILABLE', 'The chat model did not answer with a draft; try again');
      return {
        name,
        firstMessage: text('firstMessage', 500) || null,
        systemPrompt,
        guardrails: text('guardrails', 4000) || null,
        suggestedTools: tools.filter(
          (t): t is string => typeof t === 'string' && (AGENT_TOOLS as readonly string[]).includes(t),
        ),
      };
    },

    /** One turn of the agent as the call would take it: no call placed, nothing billed. */
    async simulate(
      accountId: string,
      id: string,
      input: { history?: { role: 'user' | 'assistant'; content: string }[] | undefined; message: string },
    ) {
      const chat = needChat();
      const a = await mustGet(accountId, id);
      const reply = await chat.complete({
        model: a.model,
        messages: turnMessages(a, input.history ?? [], input.message),
        tools: toolsFor(a),
      });
      const { action, transferTo, captured } = readToolCalls(a, reply.toolCalls);
      return { reply: reply.content.trim(), action, captured, ...(transferTo ? { transferTo } : {}) };
    },
  };
}

export type AiAgentsService = ReturnType<typeof createAiAgentsService>;
