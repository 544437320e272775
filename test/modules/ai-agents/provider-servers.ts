import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Local servers speaking the providers' real protocols for AI agents on calls: OpenAI-compatible
 * speech-to-text (`POST /v1/audio/transcriptions`, multipart with a WAV `file`) and streamed chat
 * completions (`POST /v1/chat/completions` with `stream: true`, answered as server-sent events).
 * Both want bearer `sk-local` and answer from the script they are given.
 */

type Tt = { teardown(fn: () => unknown): void };

async function listen(t: Tt, handler: (req: IncomingMessage, body: Buffer, res: ServerResponse) => void) {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.headers.authorization !== 'Bearer sk-local') {
        res.writeHead(401).end();
        return;
      }
      handler(req, Buffer.concat(chunks), res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
}

export interface Transcription {
  model: string;
  /** Seconds of 8 kHz 16-bit audio in the WAV. */
  seconds: number;
}

/** Transcribes the n-th request as `texts[n]` (the last one again after that). */
export async function startSttServer(t: Tt, texts: string[]) {
  const seen: Transcription[] = [];
  const url = await listen(t, (req, body, res) => {
    const type = req.headers['content-type'] ?? '';
    const boundary = /boundary=(.+)$/.exec(type)?.[1];
    if (req.url !== '/v1/audio/transcriptions' || !boundary) {
      res.writeHead(400).end();
      return;
    }
    const text = body.toString('latin1');
    const model = /name="model"\r\n\r\n([^\r]*)/.exec(text)?.[1] ?? '';
    const riff = body.indexOf('RIFF');
    const dataAt = body.indexOf('data', riff + 12);
    if (riff < 0 || dataAt < 0) {
      res.writeHead(400).end(JSON.stringify({ error: { message: 'no WAV file' } }));
      return;
    }
    seen.push({ model, seconds: body.readUInt32LE(dataAt + 4) / 16000 });
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ text: texts[Math.min(seen.length - 1, texts.length - 1)] }));
  });
  return { url, seen };
}

export interface StreamedTurn {
  /** Sent in pieces of a few words. */
  content: string;
  toolCalls?: { name: string; arguments: unknown }[];
}

export interface ChatRequestSeen {
  model: string;
  stream?: boolean;
  messages: { role: string; content: string }[];
  tools?: { function: { name: string } }[];
}

/** Streams the n-th chat request's answer from `turns` as OpenAI chat.completion.chunk events. */
export async function startStreamingChat(t: Tt, turns: StreamedTurn[]) {
  const seen: ChatRequestSeen[] = [];
  const url = await listen(t, (req, body, res) => {
    if (req.url !== '/v1/chat/completions') {
      res.writeHead(404).end();
      return;
    }
    const request = JSON.parse(body.toString('utf8')) as ChatRequestSeen;
    seen.push(request);
    const turn = turns[Math.min(seen.length - 1, turns.length - 1)]!;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const event = (delta: Record<string, unknown>, finish: string | null = null) =>
      res.write(
        `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: request.model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`,
      );
    event({ role: 'assistant', content: '' });
    const words = turn.content.split(/(?<= )/);
    for (let i = 0; i < words.length; i += 3) event({ content: words.slice(i, i + 3).join('') });
    (turn.toolCalls ?? []).forEach((c, index) => {
      const args = JSON.stringify(c.arguments);
      event({
        tool_calls: [{ index, id: `call_${index}`, type: 'function', function: { name: c.name, arguments: '' } }],
      });
      // Arguments arrive split, as real servers stream them.
      event({ tool_calls: [{ index, function: { arguments: args.slice(0, 5) } }] });
      event({ tool_calls: [{ index, function: { arguments: args.slice(5) } }] });
    });
    event({}, turn.toolCalls?.length ? 'tool_calls' : 'stop');
    res.end('data: [DONE]\n\n');
  });
  return { url, seen };
}

/** The daemon's `[ai]` section for the servers above, a 0.05 per-minute agent fee and a short end of speech. */
export const aiSection = (stt: { url: string }, chat: { url: string }, extra: Record<string, unknown> = {}) => ({
  chat_url: chat.url,
  chat_api_key: 'sk-local',
  stt_url: stt.url,
  stt_api_key: 'sk-local',
  agent_fee_per_minute: '0.050000',
  end_of_speech_ms: 500,
  ...extra,
});
