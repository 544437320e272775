/**
 * The exchange answering calls on rented numbers itself (issue 22 voicemail; issue 25's hand-off to
 * an AI voice agent). The trunk B2BUA dials this daemon's own SIP address as one more candidate of
 * the number's call (`localEndpoint`), so the hold, failover, settlement, CDRs and
 * `number.call.received` are those of every inbound call; here that leg is answered with the media
 * plane and given to voicemail or to the agent. Only the exchange's own INVITEs (they carry its
 * loop marker, an HMAC of the server secret) are answered; anything else naming such a user is refused.
 */
import { EventEmitter } from 'node:events';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Decimal } from 'decimal.js';
import type { Logger } from 'pino';
import type { Sql } from '../../../db/connection.js';
import type { Clock } from '../../../platform/clock.js';
import { newId } from '../../../platform/ids.js';
import type { SipPlane } from '../../../platform/sip-plane.js';
import type { PromptRenderer } from '../../../telephony/media/actions.js';
import { answerWithMedia, type AnsweredCall } from '../../../telephony/media/answered-call.js';
import { TELEPHONY_RATE, wavOf } from '../../../telephony/media/pcm.js';
import type { MediaPool } from '../../../telephony/media/pool.js';
import { isTtsLanguage } from '../../../telephony/media/tts.js';
import { mask } from '../../../telephony/sip/b2bua/types.js';
import { callIdOf, fromOf, requestUriOf, tagOf, toOf, type SipRequest } from '../../../telephony/sip/message.js';
import type { ServerTransaction } from '../../../telephony/sip/transaction.js';
import type { SipPeer } from '../../../telephony/sip/transport.js';
import { emit } from '../../../webhooks/emit.js';
import type { AgentCallPlan, AgentCalls } from '../../api-calls/agent.js';
import type { EngineCall } from '../../../telephony/engine.js';
import type { LocalAnswerEndpoint, NumberAnswerKind } from '../../sip-trunks/number-calls.js';
import type { GreetingCache } from './greeting-cache.js';
import * as repo from './repo.js';
import { recordVoicemail, type VoicemailScript } from './voicemail.js';

const USER = /^n(vm|ai)\.([0-9a-f-]{36})\.([0-9a-f-]{36})$/;
const KIND_CODE: Record<NumberAnswerKind, string> = { voicemail: 'vm', ai_agent: 'ai' };

export const DEFAULT_GREETING = 'The person you are calling is not available. Please leave a message after the tone.';

export interface NumberAnsweringDeps {
  sip: SipPlane;
  media: () => MediaPool;
  renderer: () => PromptRenderer;
  /** The outbound guard's downloader (https, public addresses, 2 MB): greeting URLs. */
  download: (url: string) => Promise<Uint8Array>;
  sql: Sql;
  clock: Clock;
  log: Logger;
  /** Recordings go under `<stateDir>/voicemail/`. */
  stateDir: string;
  /** Mean sample level above which audio is speech (`[ai] speech_level`). */
  speechLevel: number;
  /** Decoded uploaded and URL greetings, shared with the voicemail settings that invalidate them. */
  greetings: GreetingCache;
  /** AI voice agents; absent, calls handed to an agent are refused. */
  agents?: AgentCalls | undefined;
  /**
   * Places an agent's transfer as the renter's own outbound call (the API-call plane), joined to the
   * caller once answered; resolves with its call id, or null when it could not be placed.
   */
  transfer?: ((o: AgentTransfer) => Promise<string | null>) | undefined;
  /** The agent handed the caller over at `at` (the trunk call's agent fee stops there). */
  agentLeft?: ((callGroupId: string, at: Date) => void) | undefined;
}

export interface AgentTransfer {
  accountId: string;
  call: EngineCall;
  from: string;
  to: string;
  maxDuration: number;
  bridged(): void;
}

/** The caller ID a transfer leg presents: the caller's own number when it is E.164, else the number called. */
export function transferCli(callerUser: string, didNumber: string | null): string | null {
  const digits = callerUser.replace(/^\+/, '');
  if (/^[1-9][0-9]{6,14}$/.test(digits)) return `+${digits}`;
  const own = (didNumber ?? '').replace(/^\+/, '');
  return /^[1-9][0-9]{6,14}$/.test(own) ? `+${own}` : null;
}

export function createNumberAnswering(deps: NumberAnsweringDeps) {
  const { sip, sql, clock, log, greetings } = deps;
  const { stack } = sip;
  const live = new Set<AnsweredCall>();
  const pending = new Set<Promise<unknown>>();
  /** `voicemail` (voicemail id) and `agent-ended` (call group id) for observers such as tests. */
  const events = new EventEmitter();

  const localEndpoint: LocalAnswerEndpoint = (kind, callGroupId, didId) => {
    if (!sip.listening) return null;
    const bound = stack.transport.host;
    const host = bound === '0.0.0.0' || bound === '::' ? '127.0.0.1' : bound;
    return {
      host,
      port: stack.transport.port,
      transport: 'udp',
      user: `n${KIND_CODE[kind]}.${callGroupId}.${didId}`,
      priority: 1,
      weight: 1,
    };
  };

  /** Keeps the recording and its row, and tells the renter, in one transaction after the file is written. */
  async function keepMessage(
    d: repo.AnsweringRow,
    callGroupId: string,
    from: string,
    msg: { pcm: Int16Array; durationMs: number },
  ) {
    const id = newId();
    const file = join('voicemail', d.id, `${id}.wav`);
    const wav = wavOf(msg.pcm, TELEPHONY_RATE);
    const path = join(deps.stateDir, file);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, wav);
    const at = clock.now();
    const number = d.number ?? '';
    await sql.begin(async (tx) => {
      await repo.insertVoicemail(tx, {
        id,
        didId: d.id,
        accountId: d.accountId,
        callId: callGroupId,
        fromNumber: from,
        toNumber: number,
        durationMs: msg.durationMs,
        bytes: wav.length,
        file,
        createdAt: at,
      });
      await emit(tx, {
        accountId: d.accountId,
        event: 'number.voicemail.received',
        at,
        data: {
          didId: d.id,
          voicemailId: id,
          callId: callGroupId,
          number,
          from,
          durationSeconds: Math.round(msg.durationMs / 100) / 10,
          contentType: 'audio/wav',
          // Served by GET /dids/{id}/voicemails/{voicemailId}/audio with the renter's credentials.
          downloadPath: `/api/v1/dids/${d.id}/voicemails/${id}/audio`,
          receivedAt: at.toISOString(),
        },
      });
    });
    log.info({ didId: d.id, voicemailId: id, durationMs: msg.durationMs }, 'voicemail kept');
    events.emit('voicemail', id);
  }

  /**
   * The greeting, ready to play before the call is answered: an uploaded or URL MP3 comes decoded
   * (both G.711 laws) from the greeting cache, read and decoded only when the number's greeting is
   * not kept, while the caller still hears ringing. Decoding after the answer left the caller in
   * silence for seconds on a cold or busy decoder, speaking before the beep, so the message held none
   * of it (or nothing at all when the caller hung up first). An uploaded greeting that cannot be
   * read falls back to the URL; an MP3 that cannot be fetched or decoded gives the spoken greeting.
   */
  async function readyGreeting(d: repo.AnsweringRow): Promise<VoicemailScript['greeting']> {
    const file = d.greetingFile;
    if (file) {
      try {
        return { audio: await greetings.get(d.id, `file:${file}`, () => readFile(join(deps.stateDir, file))) };
      } catch (err) {
        log.warn({ err, didId: d.id }, 'uploaded voicemail greeting could not be read or decoded');
      }
    }
    const url = d.greetingUrl;
    if (url) {
      try {
        return { audio: await greetings.get(d.id, `url:${url}`, () => deps.download(url)) };
      } catch (err) {
        // The caller still hears a greeting: the spoken one.
        log.warn({ err, didId: d.id }, 'voicemail greeting could not be fetched or decoded; the spoken greeting plays');
      }
    }
    return { text: d.greetingText ?? DEFAULT_GREETING };
  }

  async function voicemail(
    a: AnsweredCall,
    d: repo.AnsweringRow,
    callGroupId: string,
    from: string,
    greeting: VoicemailScript['greeting'],
  ) {
    const msg = await recordVoicemail(a, {
      greeting,
      maxSeconds: d.maxSeconds,
      silenceSeconds: d.silenceSeconds,
      speechLevel: deps.speechLevel,
    });
    // Our BYE ends the trunk call (billed to here) unless the caller already hung up.
    await a.call.hangup();
    if (msg && msg.pcm.length > 0) await keepMessage(d, callGroupId, from, msg);
  }

  async function agentCall(
    a: AnsweredCall,
    d: repo.AnsweringRow,
    plan: AgentCallPlan,
    callGroupId: string,
    callerUser: string,
  ) {
    // The caller's call, transferred or not, lasts at most the agent's maxCallSeconds.
    const limit = setTimeout(() => void a.call.hangup(), plan.maxCallSeconds * 1000);
    limit.unref();
    let conversation: { transferTo: string | null } | null = null;
    try {
      conversation = await plan.converse(a.call);
    } catch (err) {
      log.warn({ err, callGroupId }, 'AI agent conversation failed');
    }
    let transfer: { callId: string | null; bridged: boolean } | null = null;
    let agentLeftAt: Date | null = null;
    const target = conversation?.transferTo ?? null;
    if (target && a.call.state === 'answered' && deps.transfer) {
      agentLeftAt = clock.now();
      deps.agentLeft?.(callGroupId, agentLeftAt);
      const t = { callId: null as string | null, bridged: false };
      transfer = t;
      const from = transferCli(callerUser, d.number);
      const left = plan.maxCallSeconds - Math.ceil((agentLeftAt.getTime() - a.answeredAt.getTime()) / 1000);
      t.callId = from
        ? await deps.transfer({
            accountId: d.accountId,
            call: a.call,
            from,
            to: target,
            maxDuration: left,
            bridged: () => {
              t.bridged = true;
            },
          })
        : null;
      // Placed: the transfer leg hangs the caller up when it ends (and the caller ends it).
      if (t.callId) await a.call.ended;
    }
    const end = await a.call.hangup();
    clearTimeout(limit);
    const seconds = Math.max(0, Math.ceil((end.endedAt.getTime() - a.answeredAt.getTime()) / 1000));
    // The agent's part ends when it hands the caller over.
    const agentSeconds = agentLeftAt
      ? Math.min(seconds, Math.max(0, Math.ceil((agentLeftAt.getTime() - a.answeredAt.getTime()) / 1000)))
      : seconds;
    // The fee itself is billed with the call (it rides on the inbound price); this is its record.
    const fee = new Decimal(plan.feePerMinute).times(Math.ceil(agentSeconds / 60)).toFixed(6);
    await sql.begin((tx) =>
      plan.store(tx, {
        callId: callGroupId,
        accountId: d.accountId,
        conversation,
        durationSeconds: agentSeconds,
        fee,
        transfer,
        startedAt: a.answeredAt,
        endedAt: end.endedAt,
      }),
    );
    events.emit('agent-ended', callGroupId);
  }

  async function onInvite(m: RegExpExecArray, req: SipRequest, tx: ServerTransaction, source: SipPeer): Promise<void> {
    const toTag = stack.newTag();
    const [, code, callGroupId, didId] = m as unknown as [string, 'vm' | 'ai', string, string];
    const d = await repo.answeringRow(sql, didId);
    if (!d) {
      tx.reply(404, 'Not Found', { toTag });
      return;
    }
    let plan: AgentCallPlan | null = null;
    if (code === 'ai') {
      try {
        if (!deps.agents || !d.aiAgentId) throw new Error('no agent attached');
        plan = await deps.agents.prepare(d.accountId, d.aiAgentId);
      } catch (err) {
        log.warn({ err, didId }, 'the number’s AI agent cannot take the call');
        tx.reply(480, 'Temporarily Unavailable', { toTag });
        return;
      }
    }
    const language = isTtsLanguage(d.language) ? d.language : 'en';
    const greeting = plan ? null : await readyGreeting(d);
    const answered = await answerWithMedia({
      stack,
      pool: deps.media(),
      renderer: deps.renderer(),
      log: log.child({ callGroupId, number: mask(d.number ?? '') }),
      req,
      tx,
      source,
      toTag,
      callId: callGroupId,
      language,
      now: () => clock.now(),
    });
    if (!answered) return;
    live.add(answered);
    const from = (fromOf(req).uri.user ?? '').replace(/^\+/, '');
    const work = plan
      ? agentCall(answered, d, plan, callGroupId, from)
      : voicemail(answered, d, callGroupId, from, greeting!);
    const p = work
      .catch((err: unknown) => {
        log.error({ err, callGroupId }, 'number answering failed');
        return answered.call.hangup();
      })
      .finally(() => {
        live.delete(answered);
        pending.delete(p);
      });
    pending.add(p);
  }

  stack.onRequest((req, tx, source, next) => {
    if (req.method !== 'INVITE' || tagOf(toOf(req)) !== undefined) return next();
    let user: string | undefined;
    try {
      user = requestUriOf(req).user;
    } catch {
      return next();
    }
    const m = user ? USER.exec(user) : null;
    if (!m) return next();
    if (!sip.loopMarker.carriedBy(req)) {
      log.warn({ source: source.host, callId: callIdOf(req) }, 'number answering INVITE not from the exchange');
      tx.reply(403, 'Forbidden', { toTag: stack.newTag() });
      return;
    }
    onInvite(m, req, tx, source).catch((err: unknown) => {
      log.error({ err }, 'number answering INVITE failed');
      if (tx.state === 'proceeding') tx.reply(500, 'Server Internal Error', { toTag: stack.newTag() });
    });
  });

  return {
    localEndpoint,
    events,
    liveCalls: () => live.size,
    /** Ends every answered call (shutdown) and waits for their messages and records. */
    async hangupAll() {
      await Promise.all([...live].map((a) => a.call.hangup()));
      await Promise.all([...pending]);
    },
  };
}

export type NumberAnswering = ReturnType<typeof createNumberAnswering>;
