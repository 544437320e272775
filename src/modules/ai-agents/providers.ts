import { AppError } from '../../http/errors.js';

/**
 * Clients of the OpenAI-compatible provider protocols the agents use (`[ai]`): chat completions
 * (OpenAI, Ollama, vLLM, llama.cpp servers) and speech. The URLs come from the operator's
 * settings, never from a customer, so they are not subject to the outbound guard.
 */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  /** An assistant turn that called tools (sent back so the model sees its own calls). */
  toolCalls?: ChatReply['toolCalls'];
  /** A tool result: the id of the call it answers. */
  toolCallId?: string;
}

export interface ChatTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface ChatReply {
  content: string;
  toolCalls: { id: string; name: string; arguments: Record<string, unknown> }[];
}

export interface ChatProvider {
  complete(req: { model: string; messages: ChatMessage[]; tools?: ChatTool[]; json?: boolean }): Promise<ChatReply>;
}

export interface SpeechProvider {
  /** MP3 of `text` in `voice`. */
  speak(req: { voice: string; text: string }): Promise<Buffer>;
}

interface Endpoint {
  url: string;
  apiKey: string;
  timeoutMs: number;
}

const unavailable = (what: string) =>
  new AppError('SERVICE_UNAVAILABLE', `The ${what} provider did not answer usably; try again shortly`);

async function post(ep: Endpoint, path: string, body: unknown, what: string): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(`${ep.url.replace(/\/+$/, '')}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(ep.apiKey ? { authorization: `Bearer ${ep.apiKey}` } : {}) },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(ep.timeoutMs),
      redirect: 'error',
    });
  } catch {
    throw unavailable(what);
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw unavailable(what);
  }
  return res;
}

function parseArguments(raw: unknown): Record<string, unknown> {
  if (typeof raw === 'object' && raw !== null) return raw as Record<string, unknown>;
  if (typeof raw !== 'string' || raw.trim() === '') return {};
  try {
    const v: unknown = JSON.parse(raw);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

export function createChatProvider(ep: Endpoint): ChatProvider {
  return {
    async complete(req) {
      const res = await post(
        ep,
        '/chat/completions',
        {
          model: req.model,
          messages: req.messages.map((m) => ({
            role: m.role,
            content: m.content,
            ...(m.toolCalls?.length
              ? {
                  tool_calls: m.toolCalls.map((c) => ({
                    id: c.id,
                    type: 'function',
                    function: { name: c.name, arguments: JSON.stringify(c.arguments) },
                  })),
                }
              : {}),
            ...(m.toolCallId ? { tool_call_id: m.toolCallId } : {}),
          })),
          ...(req.tools?.length
            ? {
                tools: req.tools.map((t) => ({
                  type: 'function',
                  function: { name: t.name, description: t.description, parameters: t.parameters },
                })),
              }
            : {}),
          ...(req.json ? { response_format: { type: 'json_object' } } : {}),
        },
        'chat model',
      );
      let body: { choices?: { message?: { content?: unknown; tool_calls?: unknown } }[] };
      try {
        body = (await res.json()) as typeof body;
      } catch {
        throw unavailable('chat model');
      }
      const message = body.choices?.[0]?.message;
      if (!message) throw unavailable('chat model');
      const calls = Array.isArray(message.tool_calls)
        ? (message.tool_calls as { id?: unknown; function?: { name?: unknown; arguments?: unknown } }[])
        : [];
      return {
        content: typeof message.content === 'string' ? message.content : '',
        toolCalls: calls
          .filter((c) => typeof c.function?.name === 'string')
          .map((c, i) => ({
            id: typeof c.id === 'string' ? c.id : `call_${i}`,
            name: c.function!.name as string,
            arguments: parseArguments(c.function!.arguments),
          })),
      };
    },
  };
}

export function createSpeechProvider(ep: Endpoint & { model: string }): SpeechProvider {
  return {
    async speak(req) {
      const res = await post(
        ep,
        '/audio/speech',
        { model: ep.model, voice: req.voice, input: req.text, response_format: 'mp3' },
        'speech',
      );
      return Buffer.from(await res.arrayBuffer());
    },
  };
}
