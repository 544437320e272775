import { randomBytes } from 'node:crypto';
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
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

/** A request body and its content type. */
interface Body {
  type: string;
  bytes: Buffer;
}

const json = (value: unknown): Body => ({ type: 'application/json', bytes: Buffer.from(JSON.stringify(value)) });

/**
 * multipart/form-data (RFC 7578) built in one buffer: the WAV is already whole, and the
 * FormData of fetch streamed it in pieces at about 1.5 ms more CPU per turn.
 */
function multipart(
  fields: Record<string, string>,
  file: { name: string; filename: string; type: string; bytes: Uint8Array },
): Body {
  const boundary = `svc-exchange-${randomBytes(16).toString('hex')}`;
  const part = (name: string, extra = '') =>
    `--${boundary}\r\nContent-Disposition: form-data; name="${name}"${extra}\r\n`;
  const tail = Object.entries(fields)
    .map(([name, value]) => `${part(name)}\r\n${value}\r\n`)
    .join('');
  return {
    type: `multipart/form-data; boundary=${boundary}`,
    bytes: Buffer.concat([
      Buffer.from(`${part(file.name, `; filename="${file.filename}"`)}Content-Type: ${file.type}\r\n\r\n`),
      file.bytes,
      Buffer.from(`\r\n${tail}--${boundary}--\r\n`),
    ]),
  };
}

/** A free connection to a provider is closed after this long unused (or sooner, when the server says so). */
const IDLE_MS = 30_000;

/**
 * POSTs to one provider over node:http(s) rather than fetch: a fetch cost about 2 ms more CPU
 * per request (two requests a turn), and its connections closed after 4 s idle unless the server
 * hinted otherwise, so every turn of a call (seconds apart) opened a new TLS connection to the
 * provider. This agent keeps them `IDLE_MS`, shorter when the server's Keep-Alive says so.
 * Resolves with a 2xx response, its body unread; no redirect is followed.
 */
function createPoster(ep: Endpoint) {
  const base = ep.url.replace(/\/+$/, '');
  const secure = base.startsWith('https:');
  const agent = secure
    ? new HttpsAgent({ keepAlive: true, timeout: IDLE_MS })
    : new HttpAgent({ keepAlive: true, timeout: IDLE_MS });
  const send = secure ? httpsRequest : httpRequest;
  return (path: string, body: Body, what: string, signal?: AbortSignal): Promise<IncomingMessage> => {
    const timeout = AbortSignal.timeout(ep.timeoutMs);
    const aborted = signal ? AbortSignal.any([timeout, signal]) : timeout;
    const attempt = (mayRetry: boolean) =>
      new Promise<IncomingMessage>((resolve, reject) => {
        let req: ReturnType<typeof send>;
        try {
          req = send(
            `${base}${path}`,
            {
              method: 'POST',
              agent,
              signal: aborted,
              headers: {
                'content-type': body.type,
                'content-length': body.bytes.length,
                ...(ep.apiKey ? { authorization: `Bearer ${ep.apiKey}` } : {}),
              },
            },
            (res) => {
              const status = res.statusCode ?? 0;
              if (status >= 200 && status < 300) return resolve(res);
              res.resume();
              reject(unavailable(what));
            },
          );
        } catch {
          return reject(unavailable(what));
        }
        req.on('error', (err: NodeJS.ErrnoException) => {
          // A kept connection the server closed as the request went out: Node's advice is to send
          // it again on a new one (https://nodejs.org/api/http.html#requestreusedsocket).
          if (mayRetry && req.reusedSocket && err.code === 'ECONNRESET' && !aborted.aborted) resolve(attempt(false));
          else reject(unavailable(what));
        });
        req.end(body.bytes);
      });
    return attempt(true);
  };
}

/** A response's whole body as JSON; anything else is the provider failing. */
async function readJson<T>(res: IncomingMessage, what: string): Promise<T> {
  const chunks: Buffer[] = [];
  try {
    for await (const c of res) chunks.push(c as Buffer);
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as T;
  } catch {
    throw unavailable(what);
  }
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

/**
 * Reads an SSE body: each event's `data:` payload goes to `onData`, up to `[DONE]`. What follows
 * `[DONE]` is drained unread rather than the response destroyed, so its connection stays usable.
 */
function readSse(res: IncomingMessage, onData: (data: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const decoder = new TextDecoder();
    let buffered = '';
    let settled = false;
    const settle = (err?: unknown) => {
      if (settled) return;
      settled = true;
      if (err === undefined) resolve();
      else reject(err instanceof Error ? err : new Error('stream failed'));
    };
    res.on('data', (chunk: Buffer) => {
      if (settled) return;
      buffered += decoder.decode(chunk, { stream: true });
      let cut: number;
      try {
        while ((cut = buffered.search(/\r?\n\r?\n/)) >= 0) {
          const event = buffered.slice(0, cut);
          buffered = buffered.slice(cut).replace(/^\r?\n\r?\n/, '');
          const data = event
            .split(/\r?\n/)
            .filter((l) => l.startsWith('data:'))
            .map((l) => l.slice(5).trimStart())
            .join('\n');
          if (data === '[DONE]') return settle();
          if (data) onData(data);
        }
      } catch (err) {
        settle(err);
        res.destroy();
      }
    });
    res.on('end', () => settle());
    res.on('error', (err) => settle(err));
    res.on('close', () => settle(res.complete ? undefined : new Error('the stream closed early')));
  });
}

export function createChatProvider(ep: Endpoint): ChatProvider {
  const post = createPoster(ep);
  return {
    async stream(req, onText, signal) {
      const res = await post('/chat/completions', json(chatBody(req, true)), 'chat model', signal);
      let content = '';
      const calls = new Map<number, { id: string; name: string; args: string }>();
      try {
        await readSse(res, (data) => {
          const chunk = JSON.parse(data) as {
            choices?: { delta?: { content?: unknown; tool_calls?: WireToolCall[] } }[];
          };
          const delta = chunk.choices?.[0]?.delta;
          if (!delta) return;
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
        });
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
      const res = await post('/chat/completions', json(chatBody(req, false)), 'chat model');
      const body = await readJson<{ choices?: { message?: { content?: unknown; tool_calls?: unknown } }[] }>(
        res,
        'chat model',
      );
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
  const post = createPoster(ep);
  return {
    async speak(req) {
      const res = await post(
        '/audio/speech',
        json({ model: ep.model, voice: req.voice, input: req.text, response_format: 'mp3' }),
        'speech',
      );
      const chunks: Buffer[] = [];
      try {
        for await (const c of res) chunks.push(c as Buffer);
      } catch {
        throw unavailable('speech');
      }
      return Buffer.concat(chunks);
    },
  };
}

/** 16-bit mono PCM as a WAV file (what transcription endpoints take). */
export function createTranscriptionProvider(ep: Endpoint & { model: string }): TranscriptionProvider {
  const post = createPoster(ep);
  return {
    async transcribe(req, signal) {
      const form = multipart(
        {
          model: ep.model,
          response_format: 'json',
          ...(req.language ? { language: req.language.slice(0, 2) } : {}),
        },
        { name: 'file', filename: 'speech.wav', type: 'audio/wav', bytes: req.wav },
      );
      const res = await post('/audio/transcriptions', form, 'speech-to-text', signal);
      const body = await readJson<{ text?: unknown }>(res, 'speech-to-text');
      if (typeof body.text !== 'string') throw unavailable('speech-to-text');
      return body.text.trim();
    },
  };
}
