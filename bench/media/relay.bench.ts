/**
 * Media relays (routes in proxy media mode): `calls` relayed calls in one RTP worker, each end
 * sending 50 packets/s (G.711, 20 ms), so the worker forwards 100 packets/s per call. The two ends
 * run in a child process; this process's CPU is the relay's (its worker thread; the main thread
 * only waits). Prints packets relayed per second, CPU per packet and per 100 calls, and loss.
 *
 *   node --import=tsx bench/media/relay.bench.ts [calls=300] [seconds=10] [portBase=24000]
 */
import { fork } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { createMediaPool, type RtpRelay } from '../../src/telephony/media/pool.js';

const calls = Number(process.argv[2] ?? 300);
const seconds = Number(process.argv[3] ?? 10);
const portBase = Number(process.argv[4] ?? 24000);
const uptime = () => execFileSync('uptime', { encoding: 'utf8' }).trim();

const pool = createMediaPool({
  workers: 1,
  portMin: portBase,
  portMax: portBase + calls * 5 + 100,
  bindAddress: '127.0.0.1',
  log: pino({ level: 'warn' }),
});
const peers = fork(fileURLToPath(new URL('./relay-peers.ts', import.meta.url)), [String(calls)], {
  execArgv: ['--import', 'tsx'],
});
type Msg = { type: string; ports?: number[]; sent?: number; received?: number };
const next = async (type: string): Promise<Msg> => {
  for (;;) {
    const [m] = (await once(peers, 'message')) as [Msg];
    if (m.type === type) return m;
  }
};
try {
  const { ports = [] } = await next('ports');
  const relays: RtpRelay[] = [];
  const targets: number[] = [];
  for (let i = 0; i < calls; i++) {
    const r = await pool.openRelay({ timeoutMs: 60_000 });
    relays.push(r);
    r.setRemote('caller', '127.0.0.1', ports[2 * i]!);
    r.setRemote('callee', '127.0.0.1', ports[2 * i + 1]!);
    targets.push(r.callerPort, r.calleePort);
  }
  peers.send({ type: 'start', targets });
  // A second to latch every side and settle, then the measured window.
  await new Promise((r) => setTimeout(r, 1000));
  await pool.stats({ reset: true });
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const cpu = process.cpuUsage(cpu0);
  const elapsed = (performance.now() - t0) / 1000;
  const [stats] = await pool.stats();
  peers.send({ type: 'stop' });
  const after = await next('count');
  const relayed = stats?.packetsRelayed ?? 0;
  const cpuUs = cpu.user + cpu.system;
  // Over the whole run: every packet sent had time to come back before the final count.
  const sent = after.sent ?? 0;
  const got = after.received ?? 0;
  console.log(
    `media relay: ${calls} calls, ${(relayed / elapsed).toFixed(0)} packets/s relayed (${(100 * calls).toLocaleString('en')} offered) · ${uptime()}`,
  );
  console.log(
    `media relay cpu: ${(cpuUs / Math.max(1, relayed)).toFixed(2)} µs per packet, ${(cpuUs / 1e4 / elapsed / (calls / 100)).toFixed(1)}% of a core per 100 calls`,
  );
  console.log(
    `media relay loss: ${((100 * Math.max(0, sent - got)) / Math.max(1, sent)).toFixed(3)}% (${sent} sent, ${got} received at the far ends)`,
  );
  await Promise.all(relays.map((r) => r.close()));
} finally {
  peers.kill();
  await pool.close();
}
