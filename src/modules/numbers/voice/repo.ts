import type { Db } from '../../../db/connection.js';

export type VoicemailMode = 'off' | 'always' | 'fallback';

export interface VoicemailSettings {
  mode: VoicemailMode;
  greetingText: string | null;
  greetingUrl: string | null;
  /** An uploaded MP3 greeting, relative to the state directory (set by the upload, not the settings). */
  greetingFile: string | null;
  language: string;
  maxSeconds: number;
  silenceSeconds: number;
}

/** What the answering side needs of a number when its call arrives. */
export interface AnsweringRow extends VoicemailSettings {
  id: string;
  accountId: string;
  number: string | null;
  aiAgentId: string | null;
}

export interface VoicemailRow {
  id: string;
  didId: string;
  accountId: string;
  callId: string;
  fromNumber: string;
  toNumber: string;
  durationMs: number;
  bytes: number;
  file: string;
  readAt: Date | null;
  createdAt: Date;
}

export async function answeringRow(db: Db, didId: string): Promise<AnsweringRow | undefined> {
  const [r] = await db<AnsweringRow[]>`
    select id, account_id, number, ai_agent_id, voicemail_mode as mode, voicemail_greeting_text as greeting_text,
           voicemail_greeting_url as greeting_url, voicemail_greeting_file as greeting_file,
           voicemail_language as language,
           voicemail_max_seconds as max_seconds, voicemail_silence_seconds as silence_seconds
    from dids where id = ${didId}`;
  return r;
}

export async function setGreetingFile(db: Db, didId: string, file: string | null): Promise<void> {
  await db`update dids set voicemail_greeting_file = ${file} where id = ${didId}`;
}

export async function setSettings(db: Db, didId: string, s: Omit<VoicemailSettings, 'greetingFile'>): Promise<void> {
  await db`
    update dids set voicemail_mode = ${s.mode}, voicemail_greeting_text = ${s.greetingText},
                    voicemail_greeting_url = ${s.greetingUrl}, voicemail_language = ${s.language},
                    voicemail_max_seconds = ${s.maxSeconds}, voicemail_silence_seconds = ${s.silenceSeconds}
    where id = ${didId}`;
}

export async function insertVoicemail(db: Db, v: Omit<VoicemailRow, 'readAt'>): Promise<void> {
  await db`
    insert into did_voicemails (id, did_id, account_id, call_id, from_number, to_number, duration_ms, bytes, file, created_at)
    values (${v.id}, ${v.didId}, ${v.accountId}, ${v.callId}, ${v.fromNumber}, ${v.toNumber}, ${v.durationMs},
            ${v.bytes}, ${v.file}, ${v.createdAt})`;
}

const VM_COLUMNS = (db: Db) =>
  db`id, did_id, account_id, call_id, from_number, to_number, duration_ms, bytes, file, read_at, created_at`;

/** A number's messages, newest first; `cursor` is the id of the last one seen. */
export async function listVoicemails(
  db: Db,
  didId: string,
  accountId: string,
  q: { cursor?: string | undefined; limit: number },
): Promise<VoicemailRow[]> {
  return db<VoicemailRow[]>`
    select ${VM_COLUMNS(db)} from did_voicemails
    where did_id = ${didId} and account_id = ${accountId} and deleted_at is null
      ${q.cursor ? db`and (created_at, id) < (select created_at, id from did_voicemails where id = ${q.cursor})` : db``}
    order by created_at desc, id desc limit ${q.limit}`;
}

export async function voicemail(
  db: Db,
  didId: string,
  id: string,
  accountId: string,
): Promise<VoicemailRow | undefined> {
  const [r] = await db<VoicemailRow[]>`
    select ${VM_COLUMNS(db)} from did_voicemails
    where id = ${id} and did_id = ${didId} and account_id = ${accountId} and deleted_at is null`;
  return r;
}

/** Hides a message (the first step of its deletion); its file, or undefined when it was not there to hide. */
export async function markDeleted(
  db: Db,
  didId: string,
  id: string,
  accountId: string,
  at: Date,
): Promise<string | undefined> {
  const [r] = await db<{ file: string }[]>`
    update did_voicemails set deleted_at = ${at}
    where id = ${id} and did_id = ${didId} and account_id = ${accountId} and deleted_at is null
    returning file`;
  return r?.file;
}

/** Messages marked deleted whose recording and row are still to go (a deletion a stop interrupted). */
export async function markedDeleted(db: Db, limit: number): Promise<{ id: string; file: string }[]> {
  return db<{ id: string; file: string }[]>`
    select id, file from did_voicemails where deleted_at is not null order by deleted_at limit ${limit}`;
}

export async function removeVoicemail(db: Db, id: string): Promise<void> {
  await db`delete from did_voicemails where id = ${id} and deleted_at is not null`;
}

export async function markRead(db: Db, id: string, at: Date): Promise<void> {
  await db`update did_voicemails set read_at = coalesce(read_at, ${at}) where id = ${id}`;
}
