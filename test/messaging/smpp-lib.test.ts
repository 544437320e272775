import { once } from 'node:events';
import type { AddressInfo, Socket } from 'node:net';
import t from 'tap';
import type { Test } from 'tap';
import { generate } from 'selfsigned';
import { connectSmpp, createSmppListener, type Session } from '../../src/messaging/smpp-lib.js';

/**
 * Whether Nagle's algorithm is off on a socket. Node has no getter for TCP_NODELAY; the socket
 * keeps what it set in its own `kSetNoDelay` field, which is read here. A TLS socket accepted by
 * a server keeps it on the TCP socket beneath (`_parent`), where the server's option applies it.
 */
function noDelay(socket: Socket): boolean {
  const own = (s: object) => {
    const key = Object.getOwnPropertySymbols(s).find((k) => k.description === 'kSetNoDelay');
    if (key === undefined) throw new Error('this Node keeps no kSetNoDelay on its sockets: update the test');
    return (s as Record<symbol, unknown>)[key] === true;
  };
  const parent = (socket as Socket & { _parent?: Socket | null })._parent;
  return own(socket) || (parent ? own(parent) : false);
}

async function pair(t: Test, tls: { key: string; cert: string } | null) {
  const accepted: Session[] = [];
  const server = createSmppListener(tls ?? {}, (s) => {
    s.on('error', () => {});
    accepted.push(s);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const client = connectSmpp({
    host: '127.0.0.1',
    port: (server.address() as AddressInfo).port,
    tls: tls !== null,
    rejectUnauthorized: false,
  });
  client.on('error', () => {});
  t.teardown(() => {
    client.socket.destroy();
    for (const s of accepted) s.socket.destroy();
    server.close();
  });
  await once(client, tls ? 'secureConnect' : 'connect');
  while (accepted.length === 0) await once(server, tls ? 'secureConnection' : 'connection');
  return { client: client.socket, server: accepted[0]!.socket };
}

// SMPP is request/response with a window of small PDUs: with Nagle on, a PDU written while an
// earlier one is unacknowledged waits for that ACK (bench/sms/smpp-throughput: the same path
// carried markedly fewer messages a second with it on).
t.test('SMPP sockets turn Nagle off, client and server side', async (t) => {
  const { client, server } = await pair(t, null);
  t.equal(noDelay(client), true, 'a bind we open (supplier bind, bind check)');
  t.equal(noDelay(server), true, "a customer's bind to our SMPP server");
});

t.test('SMPP over TLS sockets turn Nagle off too', async (t) => {
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], { keyType: 'ec' });
  const { client, server } = await pair(t, { key: pems.private, cert: pems.cert });
  t.equal(noDelay(client), true, 'a TLS bind we open');
  t.equal(noDelay(server), true, "a customer's TLS bind");
});
