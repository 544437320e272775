import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { ChatHistory } from './history.js';
import { CursorPage, DateTime, Nullable, Ok, Uuid, ok } from '../../http/envelope.js';
import { cursorPage, CursorQuery } from '../../http/pagination.js';
import { AGENT_TOOLS, type AiAgentsService } from './service.js';

const TAGS = ['AI voice agents'];
const READ = { auth: 'required', scope: 'dialer:write' } as const;
// Agents are records live calls use: a test key reads them; only live credentials change them.
const WRITE = READ;
// Drafts, previews and simulations save nothing and bill nothing, so a test key may use them.
const TRY = { ...READ, testKeys: 'allow' } as const;
const PER_MINUTE_20 = { points: 20, seconds: 60 };
const Id = Type.Object({ id: Uuid() });

const Agent = Type.Object({
  id: Uuid(),
  userId: Uuid(),
  name: Type.String(),
  voiceId: Nullable(Type.String()),
  voiceProvider: Type.String(),
  language: Type.String(),
  firstMessage: Nullable(Type.String()),
  systemPrompt: Type.String(),
  model: Type.String(),
  guardrails: Nullable(Type.String()),
  tools: Type.Array(Type.String()),
  maxCallSeconds: Type.Integer(),
  enabled: Type.Boolean(),
  createdAt: DateTime(),
  updatedAt: DateTime(),
});

const Tools = Type.Array(Type.String({ maxLength: 40, description: AGENT_TOOLS.join(', ') }), { maxItems: 10 });
const Fields = {
  voiceId: Type.Optional(Nullable(Type.String({ maxLength: 120 }))),
  voiceProvider: Type.Optional(Type.String({ maxLength: 40 })),
  language: Type.Optional(Type.String({ maxLength: 12 })),
  firstMessage: Type.Optional(Nullable(Type.String({ maxLength: 500 }))),
  model: Type.Optional(Type.String({ maxLength: 60 })),
  guardrails: Type.Optional(Nullable(Type.String({ maxLength: 4000 }))),
  tools: Type.Optional(Tools),
  maxCallSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 3600 })),
  enabled: Type.Optional(Type.Boolean()),
};

export function aiAgentsRoutes(svc: AiAgentsService) {
  return (app: App) => {
    app.get(
      '/ai-agents',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'AI voice agents, newest first',
          querystring: Type.Object({ ...CursorQuery() }),
          response: { 200: CursorPage(Agent) },
        },
      },
      async (req) =>
        cursorPage(
          await svc.list(req.principal!.accountId, { ...req.query, limit: req.query.limit ?? 25 }),
          req.query.limit ?? 25,
        ),
    );

    app.post(
      '/ai-agents',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Create an AI voice agent',
          description:
            'Needs the operator to have set a chat model (`[ai] chat_url`) and speech-to-text (`[ai] stt_url`); without ' +
            'either, 400 `VALIDATION_ERROR` names the missing setting. `tools`: `end` (hang up), `transfer` (to an E.164 ' +
            'number), `capture` (record fields). `voiceId` from `GET /ai-agents/voices` (default `espeak:en-us`); `model` ' +
            'defaults to `[ai] chat_model`.',
          body: Type.Object(
            {
              name: Type.String({ minLength: 1, maxLength: 120 }),
              systemPrompt: Type.String({ minLength: 1, maxLength: 8000 }),
              ...Fields,
            },
            { additionalProperties: false },
          ),
          response: { 201: Ok(Agent) },
        },
      },
      async (req, reply) => reply.code(201).send(ok(await svc.create(req.principal!.accountId, req.body))),
    );

    app.get(
      '/ai-agents/voices',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary:
            'Voices an agent can speak with (English built-in voices first; premium voices when a speech provider is set)',
          response: {
            200: Ok(
              Type.Array(
                Type.Object({
                  id: Type.String(),
                  name: Type.String(),
                  description: Type.String(),
                  gender: Type.String(),
                  language: Type.String(),
                  is_pro: Type.Boolean(),
                }),
              ),
            ),
          },
        },
      },
      async () => ok(svc.voices()),
    );

    app.post(
      '/ai-agents/voices/preview',
      {
        config: { access: TRY, rateLimit: PER_MINUTE_20 },
        schema: {
          tags: TAGS,
          summary: 'Hear a voice: the text spoken, as MP3 (audio/mpeg)',
          body: Type.Object(
            {
              voiceId: Type.String({ minLength: 1, maxLength: 120 }),
              text: Type.String({ minLength: 1, maxLength: 300 }),
            },
            { additionalProperties: false },
          ),
          produces: ['audio/mpeg'],
        },
      },
      async (req, reply) => reply.type('audio/mpeg').send(await svc.preview(req.body)),
    );

    app.post(
      '/ai-agents/draft',
      {
        config: { access: TRY, rateLimit: PER_MINUTE_20 },
        schema: {
          tags: TAGS,
          summary: 'Draft an agent from a description with the chat model (saves nothing)',
          body: Type.Object(
            { description: Type.String({ minLength: 1, maxLength: 2000 }) },
            { additionalProperties: false },
          ),
          response: {
            200: Ok(
              Type.Object({
                name: Type.String(),
                firstMessage: Nullable(Type.String()),
                systemPrompt: Type.String(),
                guardrails: Nullable(Type.String()),
                suggestedTools: Type.Array(Type.String()),
              }),
            ),
          },
        },
      },
      async (req) => ok(await svc.draft(req.body.description)),
    );

    app.get(
      '/ai-agents/:id',
      {
        config: { access: READ },
        schema: { tags: TAGS, summary: 'One AI voice agent', params: Id, response: { 200: Ok(Agent) } },
      },
      async (req) => ok(await svc.get(req.principal!.accountId, req.params.id)),
    );

    app.patch(
      '/ai-agents/:id',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Change an AI voice agent (fields given are set)',
          params: Id,
          body: Type.Object(
            {
              name: Type.Optional(Type.String({ minLength: 1, maxLength: 120 })),
              systemPrompt: Type.Optional(Type.String({ minLength: 1, maxLength: 8000 })),
              ...Fields,
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Agent) },
        },
      },
      async (req) => ok(await svc.update(req.principal!.accountId, req.params.id, req.body)),
    );

    app.delete(
      '/ai-agents/:id',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Delete an AI voice agent',
          params: Id,
          response: { 200: Ok(Type.Object({ id: Uuid() })) },
        },
      },
      async (req) => ok(await svc.remove(req.principal!.accountId, req.params.id)),
    );

    app.post(
      '/ai-agents/:id/simulate',
      {
        config: { access: TRY, rateLimit: PER_MINUTE_20 },
        schema: {
          tags: TAGS,
          summary: 'One turn of the agent: its reply to a message after a history (no call placed, nothing billed)',
          description:
            '`action`: `end` when the model called the end tool, `transfer` (with `transferTo`) when it transferred to a ' +
            'valid E.164 number, else `continue`; `captured`: fields recorded with the capture tool. Tools the agent was not ' +
            'given are ignored.',
          params: Id,
          body: Type.Object(
            {
              history: Type.Optional(ChatHistory(4000)),
              message: Type.String({ minLength: 1, maxLength: 2000 }),
            },
            { additionalProperties: false },
          ),
          response: {
            200: Ok(
              Type.Object({
                reply: Type.String(),
                action: Type.Union([Type.Literal('continue'), Type.Literal('end'), Type.Literal('transfer')]),
                captured: Type.Record(Type.String(), Type.String()),
                transferTo: Type.Optional(Type.String()),
              }),
            ),
          },
        },
      },
      async (req) => ok(await svc.simulate(req.principal!.accountId, req.params.id, req.body)),
    );
  };
}
