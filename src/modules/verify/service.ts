/**
 * Verify (spec "Verify", "Limits"): one-time codes sent as an SMS over the buyer's routes or read
 * aloud by a voice call, checked at most five times, single-use once approved. The SMS or call is
 * billed by the module that carries it, as any other; there is no verification fee.
 */
import { createHmac, randomInt, timingSafeEqual } from 'node:crypto';
import type { Logger } from 'pino';
import type { Db, Sql } from '../../db/connection.js';
import { AppError, conflict, notFound, rateLimited, ruleError, validationError } from '../../http/errors.js';
import type { Clock } from '../../platform/clock.js';
import { isE164 } from '../../platform/e164.js';
import { newId } from '../../platform/ids.js';
import { emit } from '../../webhooks/emit.js';
import type { ApiCallsService } from '../api-calls/service.js';
import type { SmsService } from '../sms/service.js';
import { isVoiceLanguage, smsText, type VerifyLanguage } from './messages.js';
import {
  createVerifyRepo,
  type Channel,
  type NewVerification,
  type VerificationRow,
  type VerificationStatus,
} from './repo.js';

export const MAX_ATTEMPTS = 5;
const HOUR_MS = 3_600_000;

export interface VerifyLimits {
  /** Codes per number per hour (spec: 5). */
  perNumberPerHour: number;
  /** Seconds between two codes to one number (spec: 30). */
  spacingSeconds: number;
}

export interface Requester {
  accountId: string;
  parentId: string | null;
  mode: 'live' | 'test';
}

export interface StartInput {
  to: string;
  channel: Channel;
  language?: VerifyLanguage | undefined;
  brand?: string | undefined;
  expirySeconds?: number | undefined;
  codeLength?: number | undefined;
}

export interface VerifyDeps {
  sql: Sql;
  clock: Clock;
  log: Logger;
  sms: Pick<SmsService, 'send'>;
  calls: Pick<ApiCallsService, 'voiceOtp'>;
  /** Sender of verification SMS (`[verify] sms_sender`). */
  smsSender: string;
  /** The key of the codes' HMAC (`[verify] code_secret`, else a generated server secret). */
  codeSecret: string | Uint8Array;
  limits: VerifyLimits;
}

function newCode(length: number): string {
  let code = '';
  for (let i = 0; i < length; i++) code += String(randomInt(0, 10));
  return code;
}

/** What a pending row is now: past its expiry it is expired, whether or not a check recorded it. */
const effectiveStatus = (r: VerificationRow, now: Date): VerificationStatus =>
  r.status === 'pending' && r.expiresAt.getTime() <= now.getTime() ? 'expired' : r.status;

/** The caller's verification to change: a test key may change only the simulated ones it started. */
function mine(who: Requester, r: VerificationRow | null): VerificationRow {
  if (!r) throw notFound('Verification');
  if (who.mode === 'test' && !r.simulated)
    throw new AppError('TEST_KEY_NOT_ALLOWED', 'A test key can check or cancel only simulated verifications');
  return r;
}

export function createVerifyService(deps: VerifyDeps) {
  const { sql, clock, log } = deps;
  const repo = createVerifyRepo(sql);
  /**
   * What is stored of a code: HMAC-SHA-256 under a server secret, over the verification's id and
   * the code. A code has at most 10^10 values (10^6 by default), so an unkeyed hash of a stolen row
   * is undone by trying them all in a moment; without the key nothing can be tried offline, and
   * online the five checks and the expiry stop guessing. A slow password hash would add nothing
   * against a space this small but CPU on every start and check.
   */
  const hashCode = (id: string, code: string) => createHmac('sha256', deps.codeSecret).update(`${id}:${code}`).digest();

  const view = (r: VerificationRow, now = clock.now()) => ({
    id: r.id,
    to: `+${r.toNumber}`,
    channel: r.channel,
    status: effectiveStatus(r, now),
    language: r.language,
    brand: r.brand,
    codeLength: r.codeLength,
    attempts: r.attempts,
    maxAttempts: r.maxAttempts,
    attemptsRemaining: Math.max(0, r.maxAttempts - r.attempts),
    expiresAt: r.expiresAt.toISOString(),
    messageId: r.messageId,
    callId: r.callId,
    failureReason: r.failure,
    simulated: r.simulated,
    createdAt: r.createdAt.toISOString(),
    updatedAt: r.updatedAt.toISOString(),
    approvedAt: r.approvedAt?.toISOString() ?? null,
  });

  /**
   * The spacing and hourly limits of one number, taken with the new row in one statement
   * (repo.reserve) in `tx`; a refusal (429 with Retry-After) has written nothing.
   */
  async function limitsRefuse(tx: Db, row: NewVerification): Promise<AppError | null> {
    const { spacingSeconds, perNumberPerHour } = deps.limits;
    if (await repo.reserve(row, { spacingSeconds, perHour: perNumberPerHour }, tx)) return null;
    const now = row.createdAt.getTime();
    const times = await repo.sendTimes(row.accountId, row.toNumber, tx);
    const last = times[0];
    const spacedUntil = last ? last.getTime() + spacingSeconds * 1000 : 0;
    const inHour = times.filter((d) => d.getTime() > now - HOUR_MS);
    const roomAt = inHour.length >= perNumberPerHour ? inHour[perNumberPerHour - 1]!.getTime() + HOUR_MS : 0;
    return rateLimited(Math.max(1, Math.ceil((Math.max(spacedUntil, roomAt) - now) / 1000)));
  }

  /**
   * Takes the number's slot, writes the verification and sends the code; returns what carried it,
   * or throws after marking the verification failed. An SMS takes the slot and writes the row in
   * the transaction that records the message and takes its hold (one commit for both, batched with
   * other sends); a voice call after they are committed.
   */
  async function deliver(
    who: Requester,
    row: NewVerification,
    v: { language: VerifyLanguage; code: string },
  ): Promise<{ messageId: string } | { callId: string }> {
    let refused: string | null = null;
    let limited: AppError | null = null;
    try {
      if (row.channel === 'sms') {
        const sent = await deps.sms.send(
          { accountId: who.accountId, parentId: who.parentId, mode: who.mode, source: 'api' },
          {
            to: `+${row.toNumber}`,
            from: deps.smsSender,
            message: smsText(v.language, v.code, row.brand),
            ...(row.messageId ? { messageId: row.messageId } : {}),
          },
          { record: async (tx) => (limited = await limitsRefuse(tx, row)) },
        );
        if (sent.status === 'failed') {
          refused = sent.errorCode ?? 'UNDELIVERABLE';
          throw ruleError(
            `The verification code could not be sent: every route refused the message (${refused}); nothing was charged`,
          );
        }
        return { messageId: sent.messageId };
      }
      limited = await limitsRefuse(sql, row);
      if (limited) throw limited;
      const call = await deps.calls.voiceOtp(
        { accountId: who.accountId, parentId: who.parentId, mode: who.mode },
        // Arabic was refused before anything was written.
        {
          to: `+${row.toNumber}`,
          code: v.code,
          language: isVoiceLanguage(v.language) ? v.language : 'en',
          brand: row.brand ?? undefined,
        },
      );
      return { callId: call.callId };
    } catch (err) {
      // Refused by the number's limits: nothing was written.
      if (err === limited) throw err;
      const reason =
        refused ?? (err instanceof AppError ? `${err.code}: ${err.message}`.slice(0, 300) : 'INTERNAL_ERROR');
      // A code that never went out does not count against the number. A refused message is on
      // record (GET /comms/sms/{id}); one that was never made is not. (An SMS refused before its
      // hold was taken wrote no verification either: both statements then change nothing.)
      await Promise.all([
        repo.markFailed(row.id, reason, refused !== null, clock.now()),
        repo.releaseSlot(row.accountId, row.toNumber, row.createdAt),
      ]).catch((e: unknown) => log.warn({ err: e, verificationId: row.id }, 'failed verification not recorded'));
      throw err;
    }
  }

  return {
    /** Forgets numbers whose last code is more than an hour old (slots are prepended, so `sent_at[1]` is the newest). */
    pruneSends: () => repo.pruneSends(new Date(clock.now().getTime() - HOUR_MS)),

    /** POST /verify/start. */
    async start(who: Requester, input: StartInput) {
      const to = input.to.trim().replace(/[\s-]/g, '');
      const language = input.language ?? 'en';
      const problems = [];
      if (!isE164(to)) problems.push({ path: 'to', message: 'must be an E.164 number' });
      if (input.channel === 'voice' && !isVoiceLanguage(language))
        problems.push({
          path: 'language',
          message: 'voice codes are read in en, es, fr, de, pt or hi; ar is SMS only',
        });
      if (problems.length) throw validationError(problems);
      const codeLength = input.codeLength ?? 6;
      const code = newCode(codeLength);
      const id = newId();
      const messageId = input.channel === 'sms' ? newId() : null;
      const now = clock.now();
      const brand = input.brand?.trim() || null;
      const digits = to.replace(/^\+/, '');
      const expiresAt = new Date(now.getTime() + (input.expirySeconds ?? 600) * 1000);
      const carried = await deliver(
        who,
        {
          id,
          accountId: who.accountId,
          toNumber: digits,
          channel: input.channel,
          language,
          brand,
          codeLength,
          codeHash: hashCode(id, code).toString('hex'),
          status: 'pending',
          maxAttempts: MAX_ATTEMPTS,
          expiresAt,
          simulated: who.mode === 'test',
          messageId,
          createdAt: now,
        },
        { language, code },
      );
      // No event of its own: the SMS (sms.sent) or the call (call.*) that carried the code has them.
      if ('callId' in carried) await repo.calledBy(id, carried.callId, clock.now());
      return {
        verificationId: id,
        to: `+${digits}`,
        channel: input.channel,
        status: 'pending' as const,
        expiresAt: expiresAt.toISOString(),
        maxAttempts: MAX_ATTEMPTS,
        codeLength,
        ...carried,
        // Only a test key sees the code: nothing was sent, so the integration could not read it otherwise.
        ...(who.mode === 'test' ? { simulated: true as const, testCode: code } : {}),
      };
    },

    /** POST /verify/check: one attempt against the code; an approved code cannot be used again. */
    async check(who: Requester, input: { verificationId: string; code: string }) {
      return sql.begin(async (tx) => {
        const r = mine(who, await repo.forUpdate(tx, input.verificationId, who.accountId));
        const now = clock.now();
        const status = effectiveStatus(r, now);
        if (status === 'approved') throw conflict('This verification was already approved: a code is used once');
        if (status === 'canceled' || status === 'failed') throw conflict(`This verification is ${status}`);
        if (status === 'max_attempts') return { status, attemptsRemaining: 0 };
        if (status === 'expired') {
          if (r.status !== 'expired') await repo.update(tx, r.id, { status, attempts: r.attempts, at: now });
          return { status, attemptsRemaining: Math.max(0, r.maxAttempts - r.attempts) };
        }
        const attempts = r.attempts + 1;
        const given = hashCode(r.id, input.code);
        const right = input.code.length === r.codeLength && timingSafeEqual(given, Buffer.from(r.codeHash, 'hex'));
        const base = { verificationId: r.id, to: `+${r.toNumber}`, channel: r.channel, attempts };
        if (right) {
          await repo.update(tx, r.id, { status: 'approved', attempts, at: now, approvedAt: now });
          await emit(tx, { accountId: who.accountId, event: 'verify.approved', data: base, at: now });
          return { status: 'approved' as const, attemptsRemaining: r.maxAttempts - attempts };
        }
        if (attempts >= r.maxAttempts) {
          await repo.update(tx, r.id, { status: 'max_attempts', attempts, at: now });
          await emit(tx, { accountId: who.accountId, event: 'verify.max_attempts', data: base, at: now });
          return { status: 'max_attempts' as const, attemptsRemaining: 0 };
        }
        await repo.update(tx, r.id, { status: 'pending', attempts, at: now });
        return { status: 'denied' as const, attemptsRemaining: r.maxAttempts - attempts };
      });
    },

    /** POST /verify/{id}/cancel: a pending code stops working at once. */
    async cancel(who: Requester, id: string) {
      return sql.begin(async (tx) => {
        const r = mine(who, await repo.forUpdate(tx, id, who.accountId));
        const now = clock.now();
        const status = effectiveStatus(r, now);
        if (status !== 'pending') throw conflict(`Only a pending verification can be canceled; this one is ${status}`);
        await repo.update(tx, r.id, { status: 'canceled', attempts: r.attempts, at: now, failure: 'canceled' });
        await emit(tx, {
          accountId: who.accountId,
          event: 'verify.canceled',
          data: { verificationId: r.id, to: `+${r.toNumber}`, channel: r.channel },
          at: now,
        });
        return view({ ...r, status: 'canceled', failure: 'canceled', updatedAt: now }, now);
      });
    },

    async get(who: { accountId: string }, id: string) {
      const r = await repo.get(id, who.accountId);
      if (!r) throw notFound('Verification');
      return view(r);
    },

    async list(
      who: { accountId: string },
      q: {
        cursor?: string | undefined;
        status?: VerificationStatus | undefined;
        to?: string | undefined;
        limit: number;
      },
    ) {
      const now = clock.now();
      const to = q.to?.replace(/[\s\-+]/g, '');
      const rows = await repo.list(who.accountId, { ...q, to, limit: q.limit + 1, now });
      return rows.map((r) => view(r, now));
    },
  };
}

export type VerifyService = ReturnType<typeof createVerifyService>;
