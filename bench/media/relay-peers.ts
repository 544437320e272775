/**
 * The two ends of `calls` relayed calls for bench/media/relay.bench.ts, in their own process so
 * that their sending does not count as the relay's CPU: each end sends a 172-byte RTP packet
 * every 20 ms and counts what comes back through the relay.
 */
import { createSocket, type Socket } from 'node:dgram';

const calls = Number(process.argv[2] ?? 200);
const send = (msg: unknown) => process.send?.(msg);
const sockets: Socket[] = [];
let received = 0;
let sent = 0;

for (let i = 0; i < 2 * calls; i++) {
  const s = createSocket('udp4');
  s.on('message', () => received++);
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', () => r()));
  sockets.push(s);
}
send({ type: 'ports', ports: sockets.map((s) => s.address().port) });

const packet = Buffer.alloc(172, 0xff);
packet[0] = 0x80;
let targets: number[] = [];
let timer: NodeJS.Timeout | null = null;
process.on('message', (m: { type: string; targets?: number[] }) => {
  if (m.type === 'start' && m.targets) {
    targets = m.targets;
    const epoch = performance.now();
    let tick = 0;
    // One burst per 20 ms frame, on an absolute schedule so a late wake-up does not slow the rate.
    const frame = () => {
      for (let i = 0; i < sockets.length; i++) sockets[i]!.send(packet, targets[i]!, '127.0.0.1');
      sent += sockets.length;
      tick++;
      timer = setTimeout(frame, Math.max(0, epoch + tick * 20 - performance.now()));
    };
    frame();
  }
  if (m.type === 'count') send({ type: 'count', sent, received });
  if (m.type === 'stop') {
    if (timer) clearTimeout(timer);
    // Packets in flight come back after the last send.
    setTimeout(() => {
      send({ type: 'count', sent, received });
      for (const s of sockets) s.close();
      process.exit(0);
    }, 200);
  }
});
