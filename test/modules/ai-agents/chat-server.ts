import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ChatRequest {
  model: string;
  messages: { role: string; content: string; tool_call_id?: string; tool_calls?: unknown[] }[];
  tools?: { function: { name: string } }[];
  response_format?: { type: string };
}

/** A tool call in the OpenAI wire shape. */
export const toolCall = (name: string, args: unknown) => ({
  id: randomUUID(),
  type: 'function',
  function: { name, arguments: JSON.stringify(args) },
});

/**
 * A local server speaking the OpenAI chat completions protocol (`POST /v1/chat/completions`,
 * bearer `sk-local`), answering each request with the message `respond` scripts.
 */
export async function startChatServer(
  t: { teardown(fn: () => unknown): void },
  respond: (req: ChatRequest) => Record<string, unknown>,
) {
  const seen: ChatRequest[] = [];
  const read = async (req: IncomingMessage) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as ChatRequest;
  };
  const server = createServer((req, res) => {
    void (async () => {
      if (
        req.method !== 'POST' ||
        req.url !== '/v1/chat/completions' ||
        req.headers.authorization !== 'Bearer sk-local'
      ) {
        res.writeHead(404).end();
        return;
      }
      const body = await read(req);
      seen.push(body);
      const message = { role: 'assistant', ...respond(body) };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ id: 'x', object: 'chat.completion', choices: [{ index: 0, message, finish_reason: 'stop' }] }),
      );
    })();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, seen };
}
