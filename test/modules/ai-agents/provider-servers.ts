import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { espeakMp3 } from '../../../src/modules/ai-agents/voices.js';

/**
 * Local servers speaking the providers' real protocols for AI agents on calls: OpenAI-compatible
 * speech-to-text (`POST /v1/audio/transcriptions`, multipart with a WAV `file`) and streamed chat
 * completions (`POST /v1/chat/completions` with `stream: true`, answered as server-sent events),
 * and text to speech (`POST /v1/audio/speech`, answered with MP3). All want bearer `sk-local` and answer from the script they are given.
 */

type Tt = { teardown(fn: () => unknown): void };

/** `started`: performance.now() when the request arrived, so a server can report its own time. */
async function listen(
  t: Tt,
  handler: (req: IncomingMessage, body: Buffer, res: ServerResponse, started: number) => void,
) {
  const server = createServer((req, res) => {
    const started = performance.now();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.headers.authorization !== 'Bearer sk-local') {
        res.writeHead(401).end();
        return;
      }
      handler(req, Buffer.concat(chunks), res, started);
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
  /** The server's own time: from the request's arrival to the answer sent (ms). */
  ms: number;
}

/** Transcribes the n-th request as `texts[n]` (the last one again after that). */
export async function startSttServer(t: Tt, texts: string[]) {
  const seen: Transcription[] = [];
  const url = await listen(t, (req, body, res, started) => {
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
    const heard = { model, seconds: body.readUInt32LE(dataAt + 4) / 16000, ms: 0 };
    seen.push(heard);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ text: texts[Math.min(seen.length - 1, texts.length - 1)] }));
    heard.ms = performance.now() - started;
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
  /** The server's own time to its first words: from the request's arrival to the first content event (ms). */
  firstTextMs?: number;
}

/** Streams the n-th chat request's answer from `turns` as OpenAI chat.completion.chunk events. */
export async function startStreamingChat(t: Tt, turns: StreamedTurn[]) {
  const seen: ChatRequestSeen[] = [];
  const url = await listen(t, (req, body, res, started) => {
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
    for (let i = 0; i < words.length; i += 3) {
      event({ content: words.slice(i, i + 3).join('') });
      request.firstTextMs ??= performance.now() - started;
    }
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

export interface SpeechRequestSeen {
  model: string;
  voice: string;
  input: string;
  response_format?: string;
}

/**
 * Speaks each of `lines` as MP3 (espeak-ng through lame: real MP3 the daemon must decode), rendered
 * before it listens so its answers take no time; any other input is refused.
 */
export async function startSpeechServer(t: Tt, lines: string[]) {
  const mp3 = new Map(await Promise.all(lines.map(async (l) => [l, await espeakMp3('en-gb', l)] as const)));
  const seen: SpeechRequestSeen[] = [];
  const url = await listen(t, (req, body, res) => {
    const request = JSON.parse(body.toString('utf8')) as SpeechRequestSeen;
    const audio = mp3.get(request.input);
    if (req.url !== '/v1/audio/speech' || !audio) {
      res.writeHead(400).end();
      return;
    }
    seen.push(request);
    res.writeHead(200, { 'content-type': 'audio/mpeg' }).end(audio);
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
