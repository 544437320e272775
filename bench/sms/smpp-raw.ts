// The anchor of the SMS benches: the `smpp` library on both ends of a loopback connection.
import { fork } from 'node:child_process';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import smpp from 'smpp';
import type { PDU, Session } from 'smpp';
import { encodeGsm7 } from '../../src/messaging/gsm7.js';

/** A local SMSC: the smpp library answering every bind and submit_sm at once; counts submits. */
export async function startSmsc() {
  let id = 0;
  // As an SMSC tuned for throughput does: responses leave at once, not after the ESME's delayed ACK.
  const server = smpp.createServer({ noDelay: true }, (s: Session) => {
    s.on('error', () => {});
    s.on('pdu', (pdu: PDU) => {
      if (pdu.isResponse()) return;
      if (pdu.command === 'submit_sm') s.send(pdu.response({ message_id: String(++id) }));
      else if (pdu.command === 'unbind') s.send(pdu.response(), () => s.socket.end());
      else s.send(pdu.response());
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, port: (server.address() as AddressInfo).port, submits: () => id };
}

/**
 * The same SMSC in a child process (smsc-process.ts): its CPU is its own, not the caller's.
 * `submits()` asks it for its count; `stop()` ends it.
 */
export async function startSmscProcess() {
  const child = fork(new URL('./smsc-process.ts', import.meta.url).pathname, [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const [ready] = (await once(child, 'message')) as [{ port: number }];
  const submits = async (): Promise<number> => {
    child.send('submits');
    const [m] = (await once(child, 'message')) as [{ submits: number }];
    return m.submits;
  };
  const stop = async () => {
    if (child.exitCode !== null) return;
    const exited = once(child, 'exit');
    child.disconnect();
    await exited;
  };
  return { port: ready.port, pid: child.pid!, submits, stop };
}

/** An ESME sending `count` submit_sm with `windowSize` outstanding; returns messages per second. */
export async function driveSmpp(port: number, count: number, windowSize: number): Promise<number> {
  const s = smpp.connect({ host: '127.0.0.1', port });
  s.socket.setNoDelay(true);
  s.on('error', () => {});
  await once(s, 'connect');
  await new Promise<PDU>((r) => s.send(new smpp.PDU('bind_transmitter', { system_id: 'bench', password: 'bench' }), r));
  const body = encodeGsm7('Benchmark message text');
  const started = process.hrtime.bigint();
  await new Promise<void>((resolve, reject) => {
    let sent = 0;
    let done = 0;
    const next = () => {
      while (sent < count && sent - done < windowSize) {
        sent++;
        s.send(
          new smpp.PDU('submit_sm', {
            destination_addr: '447700900123',
            source_addr: 'Bench',
            data_coding: 0,
            short_message: body,
          }),
          (resp: PDU) => {
            if (resp.command_status !== 0) return reject(new Error(`status ${resp.command_status}`));
            done++;
            if (done === count) resolve();
            else next();
          },
        );
      }
    };
    next();
  });
  const secs = Number(process.hrtime.bigint() - started) / 1e9;
  s.socket.destroy();
  return count / secs;
}
