/**
 * The SIP side of calls the platform places itself (POST /comms/calls): one outgoing INVITE leg
 * per `dial`, carrying the media plane's SDP offer to a route endpoint. Implements the native
 * engine's `SignallingDialer` seam; the failover across routes is the caller's (one dial per route).
 */
import type { Logger } from 'pino';
import type { DialEvents, DialRequest, SignallingDialer, SignallingLeg } from '../media/native-engine.js';
import { answerChallenge } from '../sip/digest.js';
import { createUacDialog, dialogRequest, type Dialog } from '../sip/dialog.js';
import { callIdOf, cseqOf, getHeader, type HeaderField, type SipRequest, type SipResponse } from '../sip/message.js';
import type { LoopMarker } from '../sip/loop-marker.js';
import type { SipStack } from '../sip/stack.js';
import type { ClientTransaction, ServerTransaction } from '../sip/transaction.js';
import type { SipPeer } from '../sip/transport.js';

/** How one leg ended, with what the failover rule needs to know (spec "Voice and SMS", failover rule). */
export interface LegOutcome {
  callId: string;
  /** Final status before answer; null after answer or when none came back. */
  sipStatus: number | null;
  reason: string;
  /** Nothing at all came back from the endpoint (no provisional, no final). */
  noResponse: boolean;
  /** A 180 or 183 arrived: the call is never moved to another route after this. */
  ringing: boolean;
  answered: boolean;
}

export interface SipDialerOptions {
  log: Logger;
  /**
   * The trunk B2BUA's loop marker, on every INVITE: a supplier that sends an API call back to the
   * exchange gets 482 instead of a second, billed leg.
   */
  loopMarker: LoopMarker;
  /** No provisional response within this: the leg is abandoned as "no response" (default 4000). */
  setupTimeoutMs?: number;
  /** Ringing without answer this long: the leg is cancelled as no answer (default 60000). */
  noAnswerMs?: number;
  /** Told of every leg's end (also ends started by `hangup`). */
  onLegEnded?: (outcome: LegOutcome) => void;
}

export interface SipDialer extends SignallingDialer {
  /** Legs still up. */
  activeLegs(): number;
}

const ALLOW = 'INVITE, ACK, CANCEL, BYE, OPTIONS';

interface Leg {
  req: DialRequest;
  events: DialEvents;
  dest: SipPeer;
  invite: SipRequest;
  ct: ClientTransaction;
  authTried: boolean;
  provisional: boolean;
  ringing: boolean;
  answered: boolean;
  dialog: Dialog | null;
  /** Takes the answered dialog out of the stack's registry. */
  unregister?: () => void;
  /** We started the end (hangup); `events.ended` is not called then. */
  local: boolean;
  done: boolean;
  timers: unknown[];
  onHungUp: Array<() => void>;
}

/** Numbers travel without '+', as SIP trunks expect (spec "Authentication", SIP trunk paragraph). */
const bare = (n: string): string => n.replace(/^\+/, '');

export function createSipDialer(stack: SipStack, opts: SipDialerOptions): SipDialer {
  const setupTimeoutMs = opts.setupTimeoutMs ?? 4000;
  const noAnswerMs = opts.noAnswerMs ?? 60_000;
  const legs = new Set<Leg>();

  function buildInvite(r: DialRequest, fromTag: string, callId: string, cseq: number): SipRequest {
    const ep = r.endpoint;
    const host = ep.host.includes(':') ? `[${ep.host}]` : ep.host;
    const user = `${ep.techPrefix ?? ''}${bare(r.to)}`;
    const tcp = ep.transport === 'tcp';
    const target = `sip:${user}@${host}:${ep.port}${tcp ? ';transport=tcp' : ''}`;
    const headers: HeaderField[] = [
      { name: 'From', value: `<sip:${bare(r.from)}@${stack.transport.host}>;tag=${fromTag}` },
      { name: 'To', value: `<sip:${user}@${host}:${ep.port}>` },
      { name: 'Call-ID', value: callId },
      { name: 'CSeq', value: `${cseq} INVITE` },
      { name: 'Max-Forwards', value: '70' },
      { name: 'Contact', value: `<${stack.contactUri('api', tcp ? 'tcp' : 'udp')}>` },
      { name: 'Allow', value: ALLOW },
      { ...opts.loopMarker.header },
      { name: 'Content-Type', value: 'application/sdp' },
    ];
    return {
      kind: 'request',
      method: 'INVITE',
      uri: target,
      version: 'SIP/2.0',
      headers,
      body: Buffer.from(r.offerSdp),
    };
  }

  const later = (leg: Leg, ms: number, fn: () => void): unknown => {
    const h = stack.timers.set(fn, ms);
    leg.timers.push(h);
    return h;
  };

  function close(leg: Leg, outcome: { sipStatus: number | null; reason: string; noResponse?: boolean }): void {
    if (leg.done) return;
    leg.done = true;
    legs.delete(leg);
    for (const h of leg.timers) stack.timers.clear(h);
    leg.unregister?.();
    opts.onLegEnded?.({
      callId: leg.req.callId,
      sipStatus: outcome.sipStatus,
      reason: outcome.reason,
      noResponse: outcome.noResponse === true,
      ringing: leg.ringing,
      answered: leg.answered,
    });
    if (!leg.local) leg.events.ended({ sipStatus: outcome.sipStatus, reason: outcome.reason });
    for (const f of leg.onHungUp.splice(0)) f();
  }

  function sendBye(leg: Leg, d: Dialog): void {
    const { req, dest } = dialogRequest(d, 'BYE');
    stack.sendRequest(req, dest, {
      onResponse: (res) => {
        if (res.status >= 200) close(leg, { sipStatus: null, reason: 'hung up by the platform' });
      },
      onTimeout: () => close(leg, { sipStatus: null, reason: 'hung up by the platform (BYE unanswered)' }),
    });
  }

  function send(leg: Leg, invite: SipRequest): void {
    leg.invite = invite;
    leg.ct = stack.sendRequest(invite, leg.dest, {
      onResponse: (res, tx) => onResponse(leg, invite, res, tx),
      onTimeout: () => {
        if (leg.invite !== invite || leg.done) return;
        close(leg, { sipStatus: null, reason: 'no response', noResponse: !leg.provisional });
      },
    });
  }

  function onResponse(leg: Leg, invite: SipRequest, res: SipResponse, tx: ClientTransaction): void {
    if (res.status >= 200 && res.status < 300) return onAnswer(leg, invite, res, tx);
    if (leg.invite !== invite || leg.done) return;
    if (res.status < 200) {
      leg.provisional = true;
      if (res.status === 100 || leg.ringing) return;
      if (res.status === 180 || res.status === 183) {
        leg.ringing = true;
        later(leg, noAnswerMs, () => {
          if (leg.answered || leg.done) return;
          leg.ct.cancel();
          close(leg, { sipStatus: 408, reason: 'no answer' });
        });
        if (!leg.local) leg.events.ringing();
      }
      return;
    }
    const challenge =
      res.status === 401
        ? getHeader(res, 'www-authenticate')
        : res.status === 407
          ? getHeader(res, 'proxy-authenticate')
          : undefined;
    const ep = leg.req.endpoint;
    if (challenge !== undefined && !leg.authTried && !leg.local && ep.username && ep.password !== undefined) {
      leg.authTried = true;
      const next = buildInvite(leg.req, fromTagOf(invite) ?? stack.newTag(), callIdOf(invite), cseqOf(invite).seq + 1);
      next.headers.push({
        name: res.status === 401 ? 'Authorization' : 'Proxy-Authorization',
        value: answerChallenge({
          challenge,
          method: 'INVITE',
          uri: next.uri,
          username: ep.username,
          password: ep.password,
        }),
      });
      send(leg, next);
      return;
    }
    close(leg, { sipStatus: res.status, reason: res.reason || `SIP ${res.status}` });
  }

  function onAnswer(leg: Leg, invite: SipRequest, res: SipResponse, tx: ClientTransaction): void {
    const contact = stack.contactUri('api', leg.dest.transport);
    const d = createUacDialog(invite, res, leg.dest.transport, contact);
    const ack = dialogRequest(d, 'ACK', { cseq: cseqOf(invite).seq });
    // Through the transaction: the stack re-ACKs this 2xx's retransmissions and hangs up other forks'.
    void stack.sendAck(ack.req, ack.dest, tx).catch((err: unknown) => opts.log.warn({ err }, 'ack failed'));
    if (leg.dialog) return; // an earlier INVITE of this leg was answered too: that dialog is the call
    if (leg.invite !== invite || leg.done || leg.local) {
      // Answered after we gave up on it: take the call down at once.
      leg.dialog = d;
      sendBye(leg, d);
      return;
    }
    leg.dialog = d;
    leg.answered = true;
    leg.unregister = stack.registerDialog(d, (req, tx) => onInDialog(leg, req, tx));
    leg.events.answered(res.body.toString('utf8'));
  }

  const fromTagOf = (req: SipRequest): string | undefined => {
    const from = getHeader(req, 'from') ?? '';
    return /;\s*tag=([^;>\s]+)/i.exec(from)?.[1];
  };

  /** In-dialog requests of an answered leg (the stack routes them here by dialog). */
  function onInDialog(leg: Leg, req: SipRequest, tx: ServerTransaction): void {
    if (req.method === 'BYE') {
      tx.reply(200, 'OK');
      close(leg, { sipStatus: null, reason: 'the called party hung up' });
      return;
    }
    // Session refreshes and the like: the media stays as negotiated.
    if (req.method === 'INVITE') tx.reply(488, 'Not Acceptable Here');
    else tx.reply(200, 'OK');
  }

  return {
    activeLegs: () => legs.size,
    dial(r: DialRequest, events: DialEvents): SignallingLeg {
      const ep = r.endpoint;
      const dest: SipPeer = { transport: ep.transport === 'tcp' ? 'tcp' : 'udp', host: ep.host, port: ep.port };
      const leg: Leg = {
        req: r,
        events,
        dest,
        invite: undefined as unknown as SipRequest,
        ct: undefined as unknown as ClientTransaction,
        authTried: false,
        provisional: false,
        ringing: false,
        answered: false,
        dialog: null,
        local: false,
        done: false,
        timers: [],
        onHungUp: [],
      };
      legs.add(leg);
      send(leg, buildInvite(r, stack.newTag(), stack.newCallId(), 1));
      later(leg, setupTimeoutMs, () => {
        if (leg.provisional || leg.done) return;
        leg.ct.cancel();
        close(leg, { sipStatus: null, reason: 'no response', noResponse: true });
      });
      return {
        hangup(): Promise<void> {
          if (leg.done) return Promise.resolve();
          leg.local = true;
          const over = new Promise<void>((resolve) => leg.onHungUp.push(resolve));
          if (leg.dialog) sendBye(leg, leg.dialog);
          else {
            // CANCEL goes once a provisional has arrived; the final (487) then closes the leg.
            leg.ct.cancel();
            later(leg, 64 * stack.timerValues.t1, () => close(leg, { sipStatus: null, reason: 'cancelled' }));
          }
          return over;
        },
      };
    },
  };
}
