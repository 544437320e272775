import { spawnSync } from 'node:child_process';
import dgram from 'node:dgram';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { generate } from 'selfsigned';
import t, { type Test } from 'tap';
import { createSafeDownloader } from '../../../src/telephony/media/downloader.js';
import { createMp3Decoder } from '../../../src/telephony/media/mp3.js';
import { createTts } from '../../../src/telephony/media/tts.js';
import { sipp } from '../../telephony/sip/sipp.js';
import { available, callee, exitOk, MANY } from './peers.js';
import { ENGINES, type EngineName } from './engines.js';
import { createServiceWorld } from './service-world.js';

/**
 * What our media plane puts on the wire for `say` and `play`: sipp answers the call but its SDP
 * names a UDP socket of this test, which keeps every RTP packet. The prompt must arrive as valid
 * RTP (version 2, PCMU, one SSRC, sequence +1 and timestamp +160 per 20 ms packet of 160 bytes)
 * carrying exactly the G.711 bytes the TTS (or the MP3 decoder) makes of it, frame-aligned.
 */

const HOST = 'audio.example.test';
const haveLame = existsSync('/usr/bin/lame');
const log = pino({ level: 'silent' });

interface Rtp {
  version: number;
  marker: boolean;
  payloadType: number;
  sequence: number;
  timestamp: number;
  ssrc: number;
  payload: Buffer;
}

async function capture(t: Test): Promise<{ port: number; packets: Rtp[] }> {
  const socket = dgram.createSocket('udp4');
  const packets: Rtp[] = [];
  socket.on('message', (m) => {
    packets.push({
      version: m[0]! >> 6,
      marker: (m[1]! & 0x80) !== 0,
      payloadType: m[1]! & 0x7f,
      sequence: m.readUInt16BE(2),
      timestamp: m.readUInt32BE(4),
      ssrc: m.readUInt32BE(8),
      payload: m.subarray(12 + (m[0]! & 0x0f) * 4),
    });
  });
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  t.teardown(() => socket.close());
  return { port: socket.address().port, packets };
}

/** Callee whose SDP sends our RTP to the capture socket instead of sipp's media port. */
const capturingCallee = (user: string, rtpPort: number): string =>
  callee(user)
    .replace('m=audio [media_port]', `m=audio ${rtpPort}`)
    .replace('c=IN IP[media_ip_type] [media_ip]', 'c=IN IP4 127.0.0.1');

/**
 * Checks the stream is one valid PCMU RTP stream and that `expected` is in it, frame-aligned. The
 * native plane pads the last frame to 20 ms and marks the first packet; Asterisk (format_pcm) sends
 * a short last frame and a steady stream with no marker, so for it packets may be shorter and the
 * timestamp advances by each packet's samples.
 */
function checkStream(t: Test, packets: Rtp[], expected: Uint8Array, what: string, engine: EngineName): void {
  const native = engine === 'native';
  t.ok(packets.length > 0, `${what}: RTP arrived`);
  t.ok(
    packets.every((p) => p.version === 2),
    'RTP version 2',
  );
  t.same([...new Set(packets.map((p) => p.payloadType))], [0], 'PCMU (payload type 0) only: no key was sent');
  t.equal(new Set(packets.map((p) => p.ssrc)).size, 1, 'one SSRC');
  if (native) t.ok(packets[0]!.marker, 'marker on the first packet');
  t.ok(
    packets.every((p) => (native ? p.payload.length === 160 : p.payload.length > 0 && p.payload.length <= 160)),
    native ? '160 samples (20 ms) a packet' : 'at most 160 samples (20 ms) a packet',
  );
  let seqGaps = 0;
  let tsGaps = 0;
  for (let i = 1; i < packets.length; i++) {
    if (packets[i]!.sequence !== ((packets[i - 1]!.sequence + 1) & 0xffff)) seqGaps++;
    // +160 a packet; after a worker stall of over 200 ms (a starved machine) the clock skips the
    // lost frames and the timestamp jumps by whole frames to stay on real time (rtp-worker.ts).
    const step = (packets[i]!.timestamp - packets[i - 1]!.timestamp) >>> 0;
    // Asterisk stamps its short last frame by its own clock: its timestamps only have to move forward.
    if (native ? step < 160 || step % 160 !== 0 || step >= 8000 : step === 0 || step >= 8000) tsGaps++;
  }
  t.equal(seqGaps, 0, 'sequence numbers continue by one');
  t.equal(tsGaps, 0, native ? 'timestamps advance by whole 20 ms frames' : 'timestamps move forward, without jumps');
  const stream = Buffer.concat(packets.map((p) => p.payload));
  const at = stream.indexOf(Buffer.from(expected));
  t.ok(at >= 0, `${what}: the ${expected.length} G.711 bytes are in the ${stream.length} bytes sent`);
  t.equal(at % 160, 0, 'the prompt starts on a packet boundary');
  const frames = Math.ceil(expected.length / 160);
  if (native) {
    const pad = stream.subarray(at + expected.length, at + frames * 160);
    t.ok(
      pad.every((b) => b === 0xff),
      `its last packet is padded with PCMU silence (${pad.length} bytes)`,
    );
    t.ok(
      stream.subarray(0, at).every((b) => b === 0xff),
      'silence before it (comfort in silence, not a gap)',
    );
  }
  t.ok(packets.length >= frames, `${packets.length} packets carry the ${frames} frames of the prompt`);
}

// The engines' cases share nothing (each its own daemon, database and peers; RTP binds skip a port
// in use): side by side, the file takes about one engine's time instead of the sum.
t.jobs = ENGINES.length;
for (const engine of ENGINES) {
  t.test(
    `RTP the ${engine.name} engine sends for say and play`,
    { skip: available ? engine.skip : 'sipp or espeak-ng not installed' },
    async (t) => {
      const dir = mkdtempSync(join(tmpdir(), 'svc-capture-'));
      t.teardown(() => rmSync(dir, { recursive: true, force: true }));
      const pems = await generate([{ name: 'commonName', value: HOST }], {
        keyType: 'ec',
        curve: 'P-256',
        extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: HOST }] }],
      });
      const files = new Map<string, Buffer>();
      const hits: string[] = [];
      const server = createServer({ key: pems.private, cert: pems.cert }, (req, res) => {
        hits.push(req.url ?? '');
        const body = files.get(req.url ?? '');
        if (body) res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': String(body.length) }).end(body);
        else res.writeHead(404).end();
      });
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
      t.teardown(
        () =>
          new Promise<void>((r) => {
            server.closeAllConnections();
            server.close(() => r());
          }),
      );
      const httpsPort = (server.address() as { port: number }).port;
      // The public-address rule stays in force for every other caller; this plane alone resolves the
      // test host to the loopback server and trusts its certificate.
      const sw = await createServiceWorld(
        t,
        45000 + (process.pid % 200) * 20,
        {
          downloader: createSafeDownloader({
            allowPrivateAddresses: true,
            ca: pems.cert,
            resolve: async () => [{ address: '127.0.0.1', family: 4 }],
          }),
        },
        engine.name,
      );
      const { w, service, caller } = sw;

      t.test('say: the TTS output, whole, as valid G.711 RTP', async (t) => {
        const text = 'Your order has shipped.';
        const expected = await createTts({ log, cacheDir: null }).synthesize({ text, language: 'en', codec: 'PCMU' });
        const cap = await capture(t);
        const peer = await sipp(t, capturingCallee('449100000001', cap.port), [], { timeout: '20s', calls: MANY });
        await w.route({ port: peer.port, prefix: '4491', rate: '0.010000', increment: '1/1' });
        const before = await sw.balance();
        const r = await service.place(caller, {
          to: '+449100000001',
          from: '+15550001111',
          actions: [{ say: text }, { hangup: true }],
        });
        await exitOk(t, peer, 'sipp answered and got our BYE');
        t.equal(r.data['status'], 'completed');
        checkStream(t, cap.packets, expected, 'say', engine.name);
        const rec = await sw.ended(r.data['callId'] as string);
        await sw.settled(t, before, rec);
      });

      t.test(
        'play: an MP3 fetched over HTTPS before dialling, decoded, as valid G.711 RTP',
        { skip: haveLame ? false : 'lame not installed' },
        async (t) => {
          // One second of a 440 Hz tone at 8 kHz, 16-bit mono, encoded by Debian's lame at test time.
          const pcm = Buffer.alloc(16000);
          for (let i = 0; i < 8000; i++)
            pcm.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 8000)), i * 2);
          writeFileSync(join(dir, 'tone.raw'), pcm);
          const lame = spawnSync('lame', [
            '-r',
            '-s',
            '8',
            '--bitwidth',
            '16',
            '--signed',
            '--little-endian',
            '-m',
            'm',
            '--silent',
            join(dir, 'tone.raw'),
            join(dir, 'tone.mp3'),
          ]);
          t.equal(
            lame.status,
            0,
            'lame encoded the tone',
            lame.status === 0 ? {} : { diagnostic: true, stderr: lame.stderr.toString() },
          );
          const mp3 = readFileSync(join(dir, 'tone.mp3'));
          files.set('/tone.mp3', mp3);
          const decoder = createMp3Decoder({ log });
          t.teardown(() => decoder.close());
          const expected = await decoder.decode(new Uint8Array(mp3), 'PCMU');
          t.ok(expected.length >= 7000, `about a second of audio (${expected.length} samples)`);

          const cap = await capture(t);
          const peer = await sipp(t, capturingCallee('449200000001', cap.port), [], { timeout: '20s', calls: MANY });
          await w.route({ port: peer.port, prefix: '4492', rate: '0.010000', increment: '1/1' });
          const before = await sw.balance();
          const r = await service.place(caller, {
            to: '+449200000001',
            from: '+15550001111',
            actions: [{ play: `https://${HOST}:${httpsPort}/tone.mp3` }],
          });
          await exitOk(t, peer, 'sipp answered and got our BYE');
          t.equal(r.data['status'], 'completed');
          checkStream(t, cap.packets, expected, 'play', engine.name);
          const rec = await sw.ended(r.data['callId'] as string);
          t.same(rec['actions'], [{ play: `https://${HOST}:${httpsPort}/tone.mp3` }], 'the record keeps the URL');
          t.same(hits, ['/tone.mp3'], 'fetched once');
          await sw.settled(t, before, rec);
        },
      );

      t.test('the downloader a plane builds by default refuses the same loopback server', async (t) => {
        const plain = createSafeDownloader();
        await t.rejects(plain.download(`https://127.0.0.1:${httpsPort}/tone.mp3`), { code: 'MEDIA_DOWNLOAD_REFUSED' });
      });
    },
  );
}
