import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import type { Sql } from '../../../db/connection.js';
import { notFound, validationError } from '../../../http/errors.js';
import type { Clock } from '../../../platform/clock.js';
import { checkPlayUrl } from '../../../telephony/media/downloader.js';
import { MediaError } from '../../../telephony/media/errors.js';
import type { NumberManagement } from '../manage.js';
import * as repo from './repo.js';

const presentSettings = (s: repo.VoicemailSettings) => ({
  mode: s.mode,
  greetingText: s.greetingText,
  greetingUrl: s.greetingUrl,
  language: s.language,
  maxSeconds: s.maxSeconds,
  silenceSeconds: s.silenceSeconds,
});

const presentVoicemail = (v: repo.VoicemailRow) => ({
  id: v.id,
  didId: v.didId,
  callId: v.callId,
  from: v.fromNumber,
  to: v.toNumber,
  durationSeconds: Math.round(v.durationMs / 100) / 10,
  bytes: v.bytes,
  contentType: 'audio/wav',
  downloadPath: `/api/v1/dids/${v.didId}/voicemails/${v.id}/audio`,
  readAt: v.readAt?.toISOString() ?? null,
  createdAt: v.createdAt.toISOString(),
});

/** A number's voicemail settings and the messages callers left (the renter's reads). */
export function createVoicemailService(deps: { sql: Sql; clock: Clock; manage: NumberManagement; stateDir: string }) {
  const { sql, manage } = deps;

  async function settings(viewerId: string, didId: string) {
    const d = await manage.own(viewerId, didId);
    const r = await repo.answeringRow(sql, d.id);
    return presentSettings(r!);
  }

  return {
    settings,

    async setSettings(
      viewerId: string,
      didId: string,
      input: Partial<repo.VoicemailSettings> & { mode: repo.VoicemailMode },
    ) {
      const d = await manage.own(viewerId, didId);
      if (input.greetingUrl) {
        try {
          checkPlayUrl(input.greetingUrl);
        } catch (err) {
          if (err instanceof MediaError) throw validationError([{ path: 'greetingUrl', message: err.message }]);
          throw err;
        }
      }
      const now = (await repo.answeringRow(sql, d.id))!;
      await repo.setSettings(sql, d.id, {
        mode: input.mode,
        greetingText: input.greetingText === undefined ? now.greetingText : input.greetingText,
        greetingUrl: input.greetingUrl === undefined ? now.greetingUrl : input.greetingUrl,
        language: input.language ?? now.language,
        maxSeconds: input.maxSeconds ?? now.maxSeconds,
        silenceSeconds: input.silenceSeconds ?? now.silenceSeconds,
      });
      return settings(viewerId, didId);
    },

    async list(viewerId: string, didId: string, q: { cursor?: string | undefined; limit: number }) {
      const d = await manage.own(viewerId, didId);
      return (await repo.listVoicemails(sql, d.id, d.accountId, q)).map(presentVoicemail);
    },

    /** The recording as a stream; reading it marks the message read. */
    async audio(viewerId: string, didId: string, id: string) {
      const d = await manage.own(viewerId, didId);
      const v = await repo.voicemail(sql, d.id, id, d.accountId);
      if (!v) throw notFound('Voicemail');
      await repo.markRead(sql, v.id, deps.clock.now());
      return { stream: createReadStream(join(deps.stateDir, v.file)), bytes: v.bytes };
    },
  };
}

export type VoicemailService = ReturnType<typeof createVoicemailService>;
