import { AppError } from '../../http/errors.js';
import { wavOf } from '../../telephony/media/pcm.js';

/** Kept here for the agent modules that take it from the providers. */
export { wavOf };

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

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  tools?: ChatTool[];
  json?: boolean;
}

export interface ChatProvider {
  complete(req: ChatRequest): Promise<ChatReply>;
  /**
   * The same turn streamed (server-sent events): `onText` gets the reply's text as it arrives, so
   * speech can start on the first sentence; resolves with the whole reply.
   */
  stream(req: ChatRequest, onText: (delta: string) => void, signal?: AbortSignal): Promise<ChatReply>;
}

/** Speech to text (OpenAI-compatible `POST /audio/transcriptions`). */
export interface TranscriptionProvider {
  transcribe(req: { wav: Uint8Array; language?: string }, signal?: AbortSignal): Promise<string>;
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

async function post(ep: Endpoint, path: string, body: unknown, what: string, signal?: AbortSignal): Promise<Response> {
  let res: Response;
  const timeout = AbortSignal.timeout(ep.timeoutMs);
  try {
    res = await fetch(`${ep.url.replace(/\/+$/, '')}${path}`, {
      method: 'POST',
      headers: {
        ...(body instanceof FormData ? {} : { 'content-type': 'application/json' }),
        ...(ep.apiKey ? { authorization: `Bearer ${ep.apiKey}` } : {}),
      },
      body: body instanceof FormData ? body : JSON.stringify(body),
      signal: signal ? AbortSignal.any([timeout, signal]) : timeout,
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

function chatBody(req: ChatRequest, stream: boolean): Record<string, unknown> {
  return {
    model: req.model,
    ...(stream ? { stream: true } : {}),
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
  };
}

type WireToolCall = { index?: unknown; id?: unknown; function?: { name?: unknown; arguments?: unknown } };

/** Reads an SSE body: one `data:` payload per event, up to `[DONE]`. */
async function* sseData(res: Response): AsyncGenerator<string> {
  if (!res.body) return;
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buffered += decoder.decode(chunk, { stream: true });
    let cut: number;
    while ((cut = buffered.search(/\r?\n\r?\n/)) >= 0) {
      const event = buffered.slice(0, cut);
      buffered = buffered.slice(cut).replace(/^\r?\n\r?\n/, '');
      const data = event
        .split(/\r?\n/)
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).trimStart())
        .join('\n');
      if (data === '[DONE]') return;
      if (data) yield data;
    }
  }
}

export function createChatProvider(ep: Endpoint): ChatProvider {
  return {
    async stream(req, onText, signal) {
      const res = await post(ep, '/chat/completions', chatBody(req, true), 'chat model', signal);
      let content = '';
      const calls = new Map<number, { id: string; name: string; args: string }>();
      try {
        for await (const data of sseData(res)) {
          const chunk = JSON.parse(data) as {
            choices?: { delta?: { content?: unknown; tool_calls?: WireToolCall[] } }[];
          };
          const delta = chunk.choices?.[0]?.delta;
          if (!delta) continue;
          if (typeof delta.content === 'string' && delta.content) {
            content += delta.content;
            onText(delta.content);
          }
          for (const c of Array.isArray(delta.tool_calls) ? delta.tool_calls : []) {
            const index = typeof c.index === 'number' ? c.index : calls.size;
            const cur = calls.get(index) ?? { id: `call_${index}`, name: '', args: '' };
            if (typeof c.id === 'string') cur.id = c.id;
            if (typeof c.function?.name === 'string') cur.name += c.function.name;
            if (typeof c.function?.arguments === 'string') cur.args += c.function.arguments;
            calls.set(index, cur);
          }
        }
      } catch (err) {
        if (signal?.aborted) throw err;
        throw unavailable('chat model');
      }
      return {
        content,
        toolCalls: [...calls.values()]
          .filter((c) => c.name)
          .map((c) => ({ id: c.id, name: c.name, arguments: parseArguments(c.args) })),
      };
    },
    async complete(req) {
      const res = await post(ep, '/chat/completions', chatBody(req, false), 'chat model');
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

/** 16-bit mono PCM as a WAV file (what transcription endpoints take). */
export function createTranscriptionProvider(ep: Endpoint & { model: string }): TranscriptionProvider {
  return {
    async transcribe(req, signal) {
      const form = new FormData();
      form.set('file', new Blob([req.wav], { type: 'audio/wav' }), 'speech.wav');
      form.set('model', ep.model);
      form.set('response_format', 'json');
      if (req.language) form.set('language', req.language.slice(0, 2));
      const res = await post(ep, '/audio/transcriptions', form, 'speech-to-text', signal);
      let body: { text?: unknown };
      try {
        body = (await res.json()) as typeof body;
      } catch {
        throw unavailable('speech-to-text');
      }
      if (typeof body.text !== 'string') throw unavailable('speech-to-text');
      return body.text.trim();
    },
  };
}
