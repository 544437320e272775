import t from 'tap';
import dgram from 'node:dgram';
import { freePort, optionsUas, sipp } from './sipp.js';

/** One OPTIONS sent once (no retransmission): answered only if sipp already held its port. */
async function optionsOnce(port: number): Promise<string | null> {
  const sock = dgram.createSocket('udp4');
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
  const local = sock.address().port;
  const msg = [
    `OPTIONS sip:probe@127.0.0.1:${port} SIP/2.0`,
    `Via: SIP/2.0/UDP 127.0.0.1:${local};branch=z9hG4bK${Math.random().toString(16).slice(2)};rport`,
    'Max-Forwards: 70',
    `From: <sip:helper@127.0.0.1>;tag=${Math.random().toString(16).slice(2)}`,
    `To: <sip:probe@127.0.0.1:${port}>`,
    `Call-ID: ${Math.random().toString(16).slice(2)}@helper`,
    'CSeq: 1 OPTIONS',
    'Content-Length: 0',
    '',
    '',
  ].join('\r\n');
  const answer = new Promise<string | null>((resolve) => {
    const timer = setTimeout(() => resolve(null), 3000);
    sock.once('message', (m) => {
      clearTimeout(timer);
      resolve(m.toString().split('\r\n')[0] ?? null);
    });
  });
  sock.send(msg, port, '127.0.0.1');
  const first = await answer;
  sock.close();
  return first;
}

t.test('sipp() resolves only once sipp holds its port', async (t) => {
  const runs = await Promise.all([1, 2, 3].map(() => sipp(t, optionsUas(200), [])));
  for (const run of runs)
    t.equal(await optionsOnce(run.port), 'SIP/2.0 200 OK', `sipp on ${run.port} answered the first datagram`);
  for (const run of runs) t.equal(await run.exited, 0);
});

t.test('a port taken before sipp binds it: sipp is started again on another port', async (t) => {
  const squatter = dgram.createSocket('udp4');
  const taken = await freePort();
  await new Promise<void>((r) => squatter.bind(taken, '127.0.0.1', () => r()));
  t.teardown(() => squatter.close());
  const run = await sipp(t, optionsUas(200), [], { port: taken });
  t.not(run.port, taken, 'moved off the taken port');
  t.equal(await optionsOnce(run.port), 'SIP/2.0 200 OK');
  t.equal(await run.exited, 0);
});
