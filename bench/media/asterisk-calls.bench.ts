/**
 * Concurrent media calls on one Asterisk host through the ARI engine, beside the native engine's
 * figure of media-sessions.bench.ts: each call is placed by the engine (Asterisk → the exchange's
 * leg listener → the exchange's SIP dialer → a supplier answering in this process) and plays a
 * `say` prompt over and over. The supplier's RTP sink reports the share of 20 ms frames that
 * arrived more than 5 ms after their slot (slot = the stream's first packet + its RTP timestamp).
 *
 *   ASTERISK_BIN=/opt/asterisk/sbin/asterisk node --import=tsx bench/media/asterisk-calls.bench.ts [calls=100] [seconds=10]
 */
import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { join } from 'node:path';
import { pino } from 'pino';
import { createVoicePlane } from '../../src/telephony/calls/voice-plane.js';
import type { EngineCall } from '../../src/telephony/engine.js';
import { createUasDialog } from '../../src/telephony/sip/dialog.js';
import { createLoopMarker, createSipStack, createSipTransport } from '../../src/telephony/sip/index.js';
import { asteriskBin, NO_ASTERISK, startAsterisk } from '../../test/helpers/asterisk.js';
import { asteriskSettings } from '../../test/modules/api-calls/engines.js';
import { freePort } from '../../test/telephony/sip/sipp.js';

const calls = Number(process.argv[2] ?? 100);
const seconds = Number(process.argv[3] ?? 10);
const log = pino({ level: 'warn' });

if (!asteriskBin) {
  console.log(`asterisk engine: skipped (${NO_ASTERISK})`);
  process.exit(0);
}

// The supplier's RTP sink: one socket, streams told apart by SSRC.
const sink = createSocket('udp4');
sink.bind(0, '127.0.0.1');
await once(sink, 'listening');
const streams = new Map<number, { t0: number; ts0: number; frames: number; late: number; worst: number }>();
let measuring = false;
sink.on('message', (m) => {
  if (!measuring || m.length < 12) return;
  const at = performance.now();
  const ssrc = m.readUInt32BE(8);
  const ts = m.readUInt32BE(4);
  const s = streams.get(ssrc);
  if (!s) {
    streams.set(ssrc, { t0: at, ts0: ts, frames: 1, late: 0, worst: 0 });
    return;
  }
  s.frames++;
  const lateness = at - (s.t0 + ((ts - s.ts0) >>> 0) / 8);
  // A stream that starts a new prompt re-bases when Asterisk restarts its clock at a new playback.
  if (lateness < -20) {
    s.t0 = at;
    s.ts0 = ts;
    return;
  }
  if (lateness > 5) s.late++;
  s.worst = Math.max(s.worst, lateness);
});
const sinkPort = sink.address().port;

// A supplier that answers every INVITE at once, its RTP going to the sink.
const supplierTransport = await createSipTransport({ host: '127.0.0.1', port: 0, log });
const supplier = createSipStack({ transport: supplierTransport, log });
supplier.onRequest((req, tx, source) => {
  if (req.method !== 'INVITE') return tx.reply(200, 'OK', { toTag: supplier.newTag() });
  const tag = supplier.newTag();
  const contact = `sip:127.0.0.1:${supplierTransport.port}`;
  const d = createUasDialog(req, tag, 'udp', contact, source);
  supplier.registerDialog(d, (r, t) => t.reply(200, 'OK'));
  const sdp = `v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio ${sinkPort} RTP/AVP 0 101\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:101 telephone-event/8000\r\n`;
  tx.reply(200, 'OK', {
    toTag: tag,
    headers: [
      { name: 'Contact', value: `<${contact}>` },
      { name: 'Content-Type', value: 'application/sdp' },
    ],
    body: Buffer.from(sdp),
  });
});

const sipPort = await freePort();
const ast = await startAsterisk({
  exchangeSip: { host: '127.0.0.1', port: sipPort },
  rtpStart: 30000,
  rtpPorts: calls * 2 + 20,
});
const exchangeTransport = await createSipTransport({ host: '127.0.0.1', port: 0, log });
const exchange = createSipStack({ transport: exchangeTransport, log });
const plane = createVoicePlane({
  stack: exchange,
  log,
  loopMarker: createLoopMarker('bench'),
  media: { workers: 1, portMin: 39000, portMax: 39019, bindAddress: '127.0.0.1', ttsCacheDir: null },
  onLegEnded: () => undefined,
  asterisk: { ...asteriskSettings(sipPort, join(ast.dir, 'prompts'), [ast]), health_interval_ms: 2000 },
});

const prompt = 'Welcome. Please enter your account number followed by the hash key.';
const placed: EngineCall[] = [];
const answered: Promise<unknown>[] = [];
for (let i = 0; i < calls; i++) {
  const call = plane.engine.originate({
    callId: `bench-${i}`,
    to: `+4420700${String(i).padStart(5, '0')}`,
    from: '+15550001111',
    endpoint: { host: '127.0.0.1', port: supplierTransport.port, transport: 'udp' },
    maxDurationSec: 3600,
  });
  placed.push(call);
  answered.push(
    new Promise<void>((resolve) => {
      call.on('answered', () => {
        resolve();
        void call.runActions(Array.from({ length: 20 }, () => ({ say: prompt }))).catch(() => undefined);
      });
      call.on('ended', () => resolve());
    }),
  );
  // Calls arrive over two seconds rather than all in one tick.
  await new Promise((r) => setTimeout(r, 2000 / calls));
}
await Promise.all(answered);
const up = placed.filter((c) => c.state === 'answered').length;
await new Promise((r) => setTimeout(r, 1000));
measuring = true;
const t0 = performance.now();
await new Promise((r) => setTimeout(r, seconds * 1000));
measuring = false;
const elapsed = (performance.now() - t0) / 1000;
let frames = 0;
let late = 0;
let worst = 0;
for (const s of streams.values()) {
  frames += s.frames;
  late += s.late;
  worst = Math.max(worst, s.worst);
}
await Promise.all(placed.map((c) => c.hangup()));
// The channels' ARI hangups are sent beside the calls' ends; let them land before Asterisk stops.
await new Promise((r) => setTimeout(r, 500));
await plane.close();
await exchange.close();
await supplier.close();
await ast.stop();
sink.close();
console.log(
  `asterisk engine (Asterisk ${asteriskBin}): calls answered on one host: ${up} of ${calls}; window ${elapsed.toFixed(1)} s`,
);
console.log(
  `frames received by the supplier: ${frames} (${(frames / elapsed).toFixed(0)}/s, expected ${up * 50}/s) from ${streams.size} streams`,
);
console.log(
  `late frames (> 5 ms after slot, at the receiver): ${late} = ${((100 * late) / Math.max(1, frames)).toFixed(3)}%; worst lateness ${worst.toFixed(1)} ms`,
);
