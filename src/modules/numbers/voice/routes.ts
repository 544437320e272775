import { Type } from 'typebox';
import type { App } from '../../../http/app.js';
import { CursorPage, DateTime, Nullable, Ok, Uuid, ok } from '../../../http/envelope.js';
import { validationError } from '../../../http/errors.js';
import { cursorPage, CursorQuery } from '../../../http/pagination.js';
import { READ, TAGS, WRITE } from '../schemas.js';
import { GREETING_MAX_BYTES, type VoicemailService } from './service.js';

const IdParams = Type.Object({ id: Uuid() });
const Mode = Type.Union([Type.Literal('off'), Type.Literal('always'), Type.Literal('fallback')]);
const Language = Type.Union(['en', 'es', 'fr', 'de', 'pt', 'hi'].map((l) => Type.Literal(l)));

const Settings = Type.Object({
  mode: Mode,
  greetingText: Nullable(Type.String()),
  greetingUrl: Nullable(Type.String()),
  greetingUploaded: Type.Boolean({
    description: 'an uploaded MP3 greeting plays (before greetingUrl and greetingText)',
  }),
  language: Type.String(),
  maxSeconds: Type.Integer(),
  silenceSeconds: Type.Integer(),
});

const Voicemail = Type.Object({
  id: Uuid(),
  didId: Uuid(),
  callId: Uuid(), // the inbound call that recorded it (its CDRs carry it as callGroupId)
  from: Type.String(),
  to: Type.String(),
  durationSeconds: Type.Number(),
  bytes: Type.Integer(),
  contentType: Type.String(),
  downloadPath: Type.String({ description: 'GET it with the same credentials' }),
  readAt: Nullable(DateTime()),
  createdAt: DateTime(),
});

/** Voicemail on a number: its settings, the messages left and their recordings. */
export function voicemailRoutes(svc: VoicemailService) {
  return async (app: App) => {
    app.get(
      '/dids/:id/voicemail',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "The number's voicemail settings",
          params: IdParams,
          response: { 200: Ok(Settings) },
        },
      },
      async (req) => ok(await svc.settings(req.principal!.accountId, req.params.id)),
    );

    app.put(
      '/dids/:id/voicemail',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Set how the number answers with voicemail',
          description:
            "`mode` `always` answers every inbound call with voicemail; `fallback` when the number's SIP targets " +
            'fail or cannot be reached; `off` never. The greeting is `greetingUrl` (an https MP3 fetched through ' +
            'the outbound guard when a call arrives) or `greetingText` spoken in `language`. The message ends when ' +
            'the caller hangs up, is silent for `silenceSeconds`, or after `maxSeconds`. Billed as the inbound call.',
          params: IdParams,
          body: Type.Object(
            {
              mode: Mode,
              greetingText: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 500 }))),
              greetingUrl: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 2048 }))),
              language: Type.Optional(Language),
              maxSeconds: Type.Optional(Type.Integer({ minimum: 5, maximum: 600 })),
              silenceSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 30 })),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Settings) },
        },
      },
      async (req) => ok(await svc.setSettings(req.principal!.accountId, req.params.id, req.body)),
    );

    app.get(
      '/dids/:id/voicemails',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'Messages callers left on the number, newest first',
          params: IdParams,
          querystring: Type.Object({ ...CursorQuery() }),
          response: { 200: CursorPage(Voicemail) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 25;
        return cursorPage(await svc.list(req.principal!.accountId, req.params.id, { ...req.query, limit }), limit);
      },
    );

    app.get(
      '/dids/:id/voicemails/:voicemailId/audio',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'The recording of a message (audio/wav, 8 kHz mono); marks it read',
          params: Type.Object({ id: Uuid(), voicemailId: Uuid() }),
          produces: ['audio/wav'],
        },
      },
      async (req, reply) => {
        const a = await svc.audio(req.principal!.accountId, req.params.id, req.params.voicemailId);
        return reply.type('audio/wav').header('content-length', a.bytes).send(a.stream);
      },
    );

    app.delete(
      '/dids/:id/voicemails/:voicemailId',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Delete a message and its recording',
          params: Type.Object({ id: Uuid(), voicemailId: Uuid() }),
          response: { 200: Ok(Type.Object({ id: Uuid(), deleted: Type.Literal(true) })) },
        },
      },
      async (req) => {
        await svc.remove(req.principal!.accountId, req.params.id, req.params.voicemailId);
        return ok({ id: req.params.voicemailId, deleted: true as const });
      },
    );

    app.delete(
      '/dids/:id/voicemail/greeting',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Remove the uploaded greeting (greetingUrl or greetingText plays again)',
          params: IdParams,
          response: { 200: Ok(Settings) },
        },
      },
      async (req) => ok(await svc.removeGreeting(req.principal!.accountId, req.params.id)),
    );

    await app.register(async (scope) => {
      // Only this scope takes audio bodies, as bytes, up to the greeting limit (more: 413).
      scope.addContentTypeParser(
        'audio/mpeg',
        { parseAs: 'buffer', bodyLimit: GREETING_MAX_BYTES },
        (_req, body, done) => done(null, body),
      );
      // The child scope keeps the TypeBox provider at run time; only its static type is the plain instance.
      (scope as unknown as App).put(
        '/dids/:id/voicemail/greeting',
        {
          config: { access: WRITE },
          schema: {
            tags: TAGS,
            summary: 'Upload the voicemail greeting (an MP3 file)',
            description:
              `Body: the MP3 file as \`audio/mpeg\`, up to ${GREETING_MAX_BYTES} bytes (413 past it). The bytes must be ` +
              'MPEG audio (an ID3 tag allowed first): anything else is 400 naming `body`. It replaces an earlier upload ' +
              'and plays instead of `greetingUrl` and `greetingText`.',
            params: IdParams,
            consumes: ['audio/mpeg'],
            response: { 200: Ok(Settings) },
          },
        },
        async (req) => {
          if (!Buffer.isBuffer(req.body))
            throw validationError([{ path: 'body', message: 'must be sent as audio/mpeg' }]);
          return ok(await svc.uploadGreeting(req.principal!.accountId, req.params.id, req.body));
        },
      );
    });
  };
}
