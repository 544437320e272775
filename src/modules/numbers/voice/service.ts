import { createReadStream } from 'node:fs';
import { mkdir, rename, unlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Logger } from 'pino';
import type { Sql } from '../../../db/connection.js';
import { notFound, validationError } from '../../../http/errors.js';
import type { Clock } from '../../../platform/clock.js';
import { newId } from '../../../platform/ids.js';
import { checkPlayUrl } from '../../../telephony/media/downloader.js';
import { MediaError } from '../../../telephony/media/errors.js';
import type { NumberManagement } from '../manage.js';
import { isMp3 } from './mp3-check.js';
import * as repo from './repo.js';

/** An uploaded greeting at most this big (the greeting URL downloader's limit). */
export const GREETING_MAX_BYTES = 2 * 1024 * 1024;

/** Removes a file that may already be gone (a deletion finished twice after a stop). */
const removeFile = (path: string) =>
  unlink(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });

const presentSettings = (s: repo.VoicemailSettings) => ({
  mode: s.mode,
  greetingText: s.greetingText,
  greetingUrl: s.greetingUrl,
  greetingUploaded: s.greetingFile !== null,
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
export function createVoicemailService(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  manage: NumberManagement;
  stateDir: string;
  /** The number's greeting (URL or upload) changed: its decoded copy is dropped. */
  greetingChanged?: ((didId: string) => void) | undefined;
}) {
  const { sql, manage } = deps;

  /**
   * The last steps of deleting a message: its recording, then its row. The row (already hidden)
   * goes after the file, so a stop between the two leaves a row that says to finish, never a file
   * nothing points to.
   */
  async function removeMarked(v: { id: string; file: string }) {
    await removeFile(join(deps.stateDir, v.file));
    await repo.removeVoicemail(sql, v.id);
  }

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
      input: Partial<Omit<repo.VoicemailSettings, 'greetingFile'>> & { mode: repo.VoicemailMode },
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
      deps.greetingChanged?.(d.id);
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

    /** Deletes a message: hidden at once (the step that decides), then its recording and its row. */
    async remove(viewerId: string, didId: string, id: string) {
      const d = await manage.own(viewerId, didId);
      const file = await repo.markDeleted(sql, d.id, id, d.accountId, deps.clock.now());
      if (file === undefined) throw notFound('Voicemail');
      await removeMarked({ id, file });
      deps.log.info({ didId: d.id, voicemailId: id }, 'voicemail deleted');
    },

    /** Finishes deletions a stop interrupted (at start); how many. */
    async finishDeletions() {
      let n = 0;
      for (;;) {
        const batch = await repo.markedDeleted(sql, 100);
        for (const v of batch) await removeMarked(v);
        n += batch.length;
        if (batch.length < 100) return n;
      }
    },

    /**
     * Stores an uploaded greeting (MP3, checked from its bytes) under the state directory; it plays
     * instead of `greetingUrl` and `greetingText`. The new file is in place before the number points
     * to it, and the old one goes after: a stop in between leaves at worst an unused file.
     */
    async uploadGreeting(viewerId: string, didId: string, body: Buffer) {
      const d = await manage.own(viewerId, didId);
      if (body.length === 0) throw validationError([{ path: 'body', message: 'is empty' }]);
      if (body.length > GREETING_MAX_BYTES)
        throw validationError([{ path: 'body', message: `is larger than ${GREETING_MAX_BYTES} bytes` }]);
      if (!isMp3(body)) throw validationError([{ path: 'body', message: 'is not an MP3 file' }]);
      const file = join('voicemail-greetings', d.id, `${newId()}.mp3`);
      const path = join(deps.stateDir, file);
      await mkdir(dirname(path), { recursive: true });
      await writeFile(`${path}.part`, body);
      await rename(`${path}.part`, path);
      const before = (await repo.answeringRow(sql, d.id))!.greetingFile;
      await repo.setGreetingFile(sql, d.id, file);
      deps.greetingChanged?.(d.id);
      if (before) await removeFile(join(deps.stateDir, before));
      return settings(viewerId, didId);
    },

    /** Removes the uploaded greeting: the URL or the spoken text plays again. */
    async removeGreeting(viewerId: string, didId: string) {
      const d = await manage.own(viewerId, didId);
      const before = (await repo.answeringRow(sql, d.id))!.greetingFile;
      if (!before) throw notFound('Uploaded greeting');
      await repo.setGreetingFile(sql, d.id, null);
      deps.greetingChanged?.(d.id);
      await removeFile(join(deps.stateDir, before));
      return settings(viewerId, didId);
    },
  };
}

export type VoicemailService = ReturnType<typeof createVoicemailService>;
