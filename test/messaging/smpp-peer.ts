// Test helper: an ESME built on the `smpp` library, with promise wrappers.
import { once } from 'node:events';
import smpp from 'smpp';
import type { PDU, Session } from 'smpp';
import { useRawMessageCodec } from '../../src/messaging/smpp-lib.js';

export interface Peer {
  session: Session;
  request(command: string, fields?: Record<string, unknown>): Promise<PDU>;
  nextPdu(command: string): Promise<PDU>;
  closed: Promise<void>;
  close(): void;
}

export async function connectPeer(port: number, tls = false): Promise<Peer> {
  useRawMessageCodec();
  const session = smpp.connect({ host: '127.0.0.1', port, tls, rejectUnauthorized: false });
  session.on('error', () => {});
  const closed = once(session, 'close').then(() => undefined);
  await once(session, tls ? 'secureConnect' : 'connect');
  const waiting = new Map<string, Array<(p: PDU) => void>>();
  const backlog = new Map<string, PDU[]>();
  session.on('pdu', (pdu: PDU) => {
    if (pdu.isResponse()) return;
    const w = waiting.get(pdu.command);
    const next = w?.shift();
    if (next) next(pdu);
    else backlog.set(pdu.command, [...(backlog.get(pdu.command) ?? []), pdu]);
  });
  return {
    session,
    closed,
    request(command, fields = {}) {
      return new Promise((resolve) => session.send(new smpp.PDU(command, fields), resolve));
    },
    nextPdu(command) {
      const b = backlog.get(command);
      const first = b?.shift();
      if (first) return Promise.resolve(first);
      return new Promise((resolve) => waiting.set(command, [...(waiting.get(command) ?? []), resolve]));
    },
    close() {
      session.socket.destroy();
    },
  };
}
