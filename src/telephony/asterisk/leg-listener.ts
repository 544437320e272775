import type { Logger } from 'pino';
import { createUasDialog, dialogRequest, type Dialog } from '../sip/dialog.js';
import { createSipStack, type SipStack } from '../sip/stack.js';
import type { ServerTransaction } from '../sip/transaction.js';
import { createSipTransport, type SipPeer } from '../sip/transport.js';
import { requestUriOf, type SipRequest } from '../sip/message.js';

/**
 * The exchange's Asterisk-facing SIP listener. Every leg Asterisk places for the exchange arrives
 * here as an INVITE to `sip:<token>@<listener>`, where the token is one the engine handed Asterisk in
 * the dial string; the engine then carries the leg on to the supplier through the exchange's own SIP
 * plane (the same dialer, failover and billing as the native engine), passing SDP through unchanged
 * so RTP flows directly between Asterisk and the supplier. A listener of its own keeps these legs
 * apart from the trunk B2BUA on 5060, which would otherwise treat Asterisk as a reseller.
 */

/** The exchange's side (UAS) of one leg Asterisk placed. */
export interface AsteriskLeg {
  readonly offerSdp: string;
  ringing(): void;
  /** 2xx with the supplier's SDP answer; Asterisk's ACK then brings the channel up. */
  answer(answerSdp: string): void;
  /** A final non-2xx before answer. */
  refuse(status: number, reason: string): void;
  /** BYE towards Asterisk after answer (the supplier hung up). */
  bye(): void;
  /** Asterisk gave up first: CANCEL before answer, BYE after. */
  onEnd(listener: () => void): void;
}

export interface LegListener {
  readonly address: SipPeer;
  /** The dial-string URI Asterisk sends the leg for `token` to. */
  uri(token: string): string;
  /** Routes the INVITE for `token` to `handler`, once; returns the call that forgets the token. */
  expect(token: string, handler: (leg: AsteriskLeg) => void): () => void;
  close(): Promise<void>;
}

export const TOKEN = /^svcx[0-9a-f]{24}$/;

export async function createLegListener(opts: {
  bind: string;
  port: number;
  /** The address Asterisk reaches the listener at (default `bind`). */
  advertise?: string;
  log: Logger;
}): Promise<LegListener> {
  const log = opts.log.child({ plane: 'asterisk-legs' });
  const transport = await createSipTransport({
    host: opts.bind,
    port: opts.port,
    log,
    ...(opts.advertise ? { advertisedHost: opts.advertise } : {}),
  });
  const stack: SipStack = createSipStack({ transport, log });
  const host = opts.advertise || transport.host;
  const waiting = new Map<string, (leg: AsteriskLeg) => void>();

  function uas(req: SipRequest, tx: ServerTransaction, source: SipPeer): AsteriskLeg {
    const toTag = stack.newTag();
    const contact = `<sip:${host}:${transport.port}>`;
    let dialog: Dialog | null = null;
    let unregister: (() => void) | undefined;
    let over = false;
    const endListeners: Array<() => void> = [];
    const ended = (): void => {
      if (over) return;
      over = true;
      unregister?.();
      for (const l of endListeners.splice(0)) l();
    };
    tx.onCancel = ended;
    return {
      offerSdp: req.body.toString('utf8'),
      ringing() {
        if (!over && !dialog) tx.reply(180, 'Ringing', { toTag, headers: [{ name: 'Contact', value: contact }] });
      },
      answer(answerSdp) {
        if (over || dialog) return;
        dialog = createUasDialog(req, toTag, source.transport, `sip:${host}:${transport.port}`, source);
        unregister = stack.registerDialog(dialog, (inReq, inTx) => {
          if (inReq.method === 'BYE') {
            inTx.reply(200, 'OK');
            ended();
            return;
          }
          // Asterisk refreshes nothing we must follow: media stays as negotiated.
          inTx.reply(inReq.method === 'INVITE' ? 488 : 200, inReq.method === 'INVITE' ? 'Not Acceptable Here' : 'OK');
        });
        tx.reply(200, 'OK', {
          toTag,
          headers: [
            { name: 'Contact', value: contact },
            { name: 'Content-Type', value: 'application/sdp' },
          ],
          body: Buffer.from(answerSdp, 'utf8'),
        });
      },
      refuse(status, reason) {
        if (over || dialog) return;
        over = true;
        tx.reply(status, reason, { toTag });
      },
      bye() {
        const d = dialog;
        if (over || !d) return;
        over = true;
        unregister?.();
        const { req: bye, dest } = dialogRequest(d, 'BYE');
        stack.sendRequest(bye, dest, { onResponse: () => undefined, onTimeout: () => undefined });
      },
      onEnd(listener) {
        if (over) listener();
        else endListeners.push(listener);
      },
    };
  }

  stack.onRequest((req, tx, source) => {
    if (req.method !== 'INVITE') {
      tx.reply(req.method === 'OPTIONS' ? 200 : 481, req.method === 'OPTIONS' ? 'OK' : 'Call Does Not Exist', {
        toTag: stack.newTag(),
      });
      return;
    }
    let token: string;
    try {
      token = requestUriOf(req).user ?? '';
    } catch {
      token = '';
    }
    const handler = TOKEN.test(token) ? waiting.get(token) : undefined;
    if (!handler) {
      log.warn({ source: source.host }, 'INVITE for no leg the engine placed');
      tx.reply(404, 'Not Found', { toTag: stack.newTag() });
      return;
    }
    waiting.delete(token);
    handler(uas(req, tx, source));
  });

  return {
    address: { transport: 'udp', host, port: transport.port },
    uri: (token) => `sip:${token}@${host.includes(':') ? `[${host}]` : host}:${transport.port}`,
    expect(token, handler) {
      waiting.set(token, handler);
      return () => {
        if (waiting.get(token) === handler) waiting.delete(token);
      };
    },
    close: () => stack.close(),
  };
}
