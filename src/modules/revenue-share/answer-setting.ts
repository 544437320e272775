/**
 * What the caller of a revenue share number hears (docs/revenue-share.md "What the caller hears"):
 * the holder's `answer` setting, its checks on PATCH and the forward target as the SIP plane dials it.
 * Stored as given (after the checks) in `revshare_numbers.answer` (migration 293).
 */
import { isIP } from 'node:net';
import { validationError, type ErrorDetail } from '../../http/errors.js';
import { isE164 } from '../../platform/e164.js';
import { TargetRefusedError } from '../../platform/outbound-guard.js';
import { checkPlayUrl, isPublicAddress } from '../../telephony/media/downloader.js';
import { MediaError } from '../../telephony/media/errors.js';
import { isTtsLanguage, type TtsLanguage } from '../../telephony/media/tts.js';
import type { SipTransportName } from '../../telephony/sip/transport.js';
import { parseSipTarget } from '../numbers/manage.js';

export type Announcement = { url: string } | { text: string; language: TtsLanguage };

export type NumberAnswer =
  | { mode: 'silence' }
  | { mode: 'announcement'; announcement: Announcement }
  /** `announcement`: what plays instead when the holder's balance cannot pay the forward (null: the default text). */
  | { mode: 'forward'; target: string; announcement: Announcement | null };

export const SILENCE: NumberAnswer = { mode: 'silence' };

/** Spoken when a forward falls back and the holder set no announcement of its own. */
export const DEFAULT_ANNOUNCEMENT: Announcement = {
  text: 'The number you have called cannot be connected at the moment. Please stay on the line.',
  language: 'en',
};

export const MAX_TEXT = 1000;

/** Where a forward's B leg goes: digits over the holder's routes, or a SIP address (through the outbound guard). */
export type ForwardTarget =
  | { kind: 'number'; digits: string }
  | { kind: 'sip'; user: string | null; host: string; port: number; transport: SipTransportName };

const USER = /^[A-Za-z0-9+*#._!~-]{1,64}$/;

/** A stored or submitted target as the SIP plane dials it; null when malformed. */
export function parseForwardTarget(v: string): ForwardTarget | null {
  const s = v.trim();
  if (/^\+?\d+$/.test(s)) return isE164(s) ? { kind: 'number', digits: s.replace(/^\+/, '') } : null;
  const m = /^sip:(?:([^@]+)@)?(.+)$/i.exec(s);
  if (!m) return null;
  if (m[1] !== undefined && !USER.test(m[1])) return null;
  const hp = parseSipTarget(m[2]!);
  return hp ? { kind: 'sip', user: m[1] ?? null, ...hp } : null;
}

/** The checks a forward's SIP host passes when set (the address itself is checked again at each call). */
export interface HostCheck {
  checkHost(host: string, port: number): void;
}

export interface AnswerInput {
  mode: NumberAnswer['mode'];
  announcement?:
    | { url?: string | null | undefined; text?: string | null | undefined; language?: string | null | undefined }
    | null
    | undefined;
  target?: string | null | undefined;
}

function announcementOf(a: AnswerInput['announcement'], errs: ErrorDetail[]): Announcement | null {
  if (!a) return null;
  const url = a.url ?? null;
  const text = a.text ?? null;
  if ((url === null) === (text === null)) {
    errs.push({ path: 'answer/announcement', message: 'give exactly one of url (an https audio file) or text' });
    return null;
  }
  if (url !== null) {
    try {
      const u = checkPlayUrl(url);
      const host = u.hostname.replace(/^\[|\]$/g, '');
      // A literal address is refused now; a name is resolved and checked by the downloader at each fetch.
      if (isIP(host) !== 0 && !isPublicAddress(host))
        errs.push({ path: 'answer/announcement/url', message: 'must reach a public address' });
    } catch (err) {
      if (!(err instanceof MediaError)) throw err;
      errs.push({ path: 'answer/announcement/url', message: err.message });
    }
    if (a.language != null) errs.push({ path: 'answer/announcement/language', message: 'applies to text only' });
    return { url };
  }
  const language = a.language ?? 'en';
  if (!isTtsLanguage(language)) {
    errs.push({ path: 'answer/announcement/language', message: 'is not a language the TTS reads' });
    return null;
  }
  if (text!.trim() === '' || text!.length > MAX_TEXT)
    errs.push({ path: 'answer/announcement/text', message: `must be 1–${MAX_TEXT} characters` });
  return { text: text!, language };
}

/** Checks a PATCH's `answer`; throws VALIDATION_ERROR naming each bad field. */
export function checkAnswer(input: AnswerInput, guard: HostCheck): NumberAnswer {
  const errs: ErrorDetail[] = [];
  const announcement = announcementOf(input.announcement, errs);
  let answer: NumberAnswer = SILENCE;
  if (input.mode === 'silence') {
    if (input.announcement) errs.push({ path: 'answer/announcement', message: 'must be empty with mode silence' });
    if (input.target) errs.push({ path: 'answer/target', message: 'applies to mode forward only' });
  } else if (input.mode === 'announcement') {
    if (input.target) errs.push({ path: 'answer/target', message: 'applies to mode forward only' });
    if (!input.announcement) errs.push({ path: 'answer/announcement', message: 'is required with mode announcement' });
    if (announcement) answer = { mode: 'announcement', announcement };
  } else {
    const raw = input.target ?? '';
    const target = raw === '' ? null : parseForwardTarget(raw);
    if (target === null) {
      errs.push({
        path: 'answer/target',
        message: 'must be an E.164 number or a SIP URI (sip:[user@]host[:port][;transport=udp|tcp|tls])',
      });
    } else if (target.kind === 'sip') {
      try {
        guard.checkHost(target.host, target.port);
      } catch (err) {
        if (!(err instanceof TargetRefusedError)) throw err;
        errs.push({ path: 'answer/target', message: err.message });
      }
    }
    if (target) {
      const stored = target.kind === 'number' ? `+${target.digits}` : raw.trim();
      answer = { mode: 'forward', target: stored, announcement };
    }
  }
  if (errs.length) throw validationError(errs);
  return answer;
}

/** The setting as reads show it: every field present, null where it does not apply. */
export function presentAnswer(a: NumberAnswer) {
  const ann = a.mode === 'silence' ? null : a.announcement;
  return {
    mode: a.mode,
    target: a.mode === 'forward' ? a.target : null,
    announcement: ann
      ? 'url' in ann
        ? { url: ann.url, text: null, language: null }
        : { url: null, text: ann.text, language: ann.language }
      : null,
  };
}
