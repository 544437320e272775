/**
 * AI voice agent turn latency: what the exchange adds between the end of a caller's speech and the
 * first packet of the agent's answer, beyond the providers' own time.
 *
 * One real daemon (fresh database, dropped after), a sipp callee for the signalling whose SDP points
 * at this process's UDP socket (the phone), local OpenAI-compatible speech-to-text and streaming chat
 * servers that report their own time. One call held by an agent; each turn the phone speaks a
 * recorded sentence, then sends quiet frames; the agent's reply differs each turn, so espeak-ng
 * renders every one (no prompt cache). Per turn:
 *   heard  = first non-silent packet at the phone − the phone's last speech frame sent
 *   added  = heard − `[ai] end_of_speech_ms` (the configured pause that ends a turn)
 *            − the STT server's time − the chat server's time to its first words
 * Prints p50/p99 of `added` (goal p99 < 50 ms), of `heard`, and `uptime`: the machine is shared, so a
 * figure under load is read with the load beside it.
 *
 * Usage: node --import tsx bench/ai/turn-latency.bench.ts [turns=30]
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createWorld } from '../../test/modules/sip-trunks/world.js';
import { callee } from '../../test/modules/api-calls/peers.js';
import { freePort, sipp } from '../../test/telephony/sip/sipp.js';
import { createRtpPeer } from '../../test/telephony/media/helpers/rtp-peer.js';
import { aiSection, startStreamingChat, startSttServer } from '../../test/modules/ai-agents/provider-servers.js';
import { speechAudio } from '../../test/modules/ai-agents/speech-pcap.js';
import { sdpAt } from '../../test/modules/ai-agents/phone-sdp.js';
import { runCleanups } from '../lib/cleanups.js';
import { decodeG711 } from '../../src/telephony/media/g711.js';

const [turns = 30] = process.argv.slice(2).map(Number);
const END_OF_SPEECH_MS = 300;
const REPLY_GAP_MS = 700;
const cleanups: Array<() => unknown> = [];
const t = {
  teardown: (fn: () => unknown) => {
    cleanups.push(fn);
  },
  equal: (a: unknown, b: unknown) => a === b,
};
const uptime = () => execFileSync('uptime', { encoding: 'utf8' }).trim();
const SILENT = new Set([0xff, 0x7f]);
const silent = (payload: Uint8Array) => payload.every((b) => SILENT.has(b));
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((s.length * p) / 100))] ?? NaN;
};

async function main() {
  console.log(`# ${uptime()}`);
  const stt = await startSttServer(t, ['What time do you open tomorrow?']);
  // A different answer each turn, so each is rendered by espeak-ng as a new reply would be; the last ends the call.
  const chat = await startStreamingChat(
    t,
    Array.from({ length: turns }, (_, i) => ({
      content: `We open at ${(i % 12) + 1} o'clock, turn ${i + 1}.`,
      ...(i === turns - 1 ? { toolCalls: [{ name: 'end_call', arguments: {} }] } : {}),
    })),
  );
  const w = await createWorld(t, {
    rtp: { port_min: 31000, port_max: 31099, bind_address: '127.0.0.1' },
    ai: aiSection(stt, chat, { end_of_speech_ms: END_OF_SPEECH_MS, agent_fee_per_minute: '0' }),
  });
  const dir = mkdtempSync(join(tmpdir(), 'svc-turns-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const speech = speechAudio('What time do you open tomorrow?', 0, dir);
  // The end of speech is the last frame loud enough to count as speech (`[ai] speech_level`, 600 by
  // default), as the daemon judges it: espeak-ng's trailing quiet is not speech.
  let voicedEnd = 0;
  for (let at = 0; at < speech.length; at += 160) {
    const pcm = decodeG711('PCMU', speech.subarray(at, at + 160));
    if (pcm.reduce((n, x) => n + Math.abs(x), 0) / pcm.length >= 600) voicedEnd = Math.min(speech.length, at + 160);
  }

  const phone = await createRtpPeer();
  cleanups.push(() => phone.close());
  const sip = await sipp(t, sdpAt(callee('447400000001', '', true), phone), ['-mp', String(await freePort())], {
    timeout: `${turns * 10 + 60}s`,
    calls: 100,
  });
  const route = await w.route({ port: sip.port, prefix: '4474', rate: '0.010000', increment: '1/1' });
  const agent = await w.api('POST', '/ai-agents', w.operator.token, {
    name: 'Bench',
    systemPrompt: 'You answer questions about opening hours.',
    tools: ['end'],
    maxCallSeconds: 3600,
  });
  if (agent.status !== 201) throw new Error(agent.text);

  // The phone: 20 ms frames, speech when a turn starts, quiet otherwise; it learns where to send from the daemon's first packet.
  const target = new Promise<number>((resolve) => phone.socket.once('message', (_m, from) => resolve(from.port)));
  let queue: Uint8Array = new Uint8Array(0);
  let lastSpeechSentAt = 0;
  let seq = 0;
  const quiet = new Uint8Array(160).fill(0xff);
  void target.then((port) => {
    const timer = setInterval(() => {
      const frame = queue.length ? queue.subarray(0, 160) : quiet;
      if (queue.length) {
        queue = queue.subarray(160);
        if (speech.length - queue.length === voicedEnd) lastSpeechSentAt = performance.now();
      }
      phone.send(port, {
        payloadType: 0,
        marker: false,
        sequence: seq & 0xffff,
        timestamp: seq * 160,
        ssrc: 0x99,
        payload: frame,
      });
      seq++;
    }, 20);
    cleanups.push(() => clearInterval(timer));
  });

  // Resolves with the arrival time of the first packet matching `want` from the packet index `from` on.
  const arrival = (from: number, want: (p: Uint8Array) => boolean) =>
    new Promise<{ at: number; index: number }>((resolve) => {
      const check = () => {
        for (let i = from; i < phone.packets.length; i++) {
          if (want(phone.packets[i]!.payload)) {
            phone.socket.off('message', onMessage);
            resolve({ at: performance.now(), index: i });
            return true;
          }
        }
        from = phone.packets.length;
        return false;
      };
      // The peer's own listener stores the packet first; this one runs after it.
      const onMessage = () => void check();
      if (!check()) phone.socket.on('message', onMessage);
    });

  const call = w.api('POST', '/comms/calls', w.operator.token, {
    to: '+447400000001',
    from: '+15550003333',
    routeId: route.routeId,
    maxDuration: 3600,
    aiAgentId: agent.body.data.id,
  });
  await target;
  const heard: number[] = [];
  const added: number[] = [];
  // Voiced packets that come while the phone speaks are the end of the previous reply, after a gap
  // of more than REPLY_GAP_MS inside it (a stall in rendering or sending): counted, never taken for a reply.
  let stragglers = 0;
  for (let i = 0; i < turns; i++) {
    const from = phone.packets.length;
    queue = speech;
    const first = await arrival(from, (p) => {
      if (silent(p)) return false;
      if (stt.seen.length > i) return true;
      stragglers++;
      return false;
    });
    heard.push(first.at - lastSpeechSentAt);
    const providers = stt.seen[i]!.ms + (chat.seen[i]?.firstTextMs ?? 0);
    added.push(first.at - lastSpeechSentAt - END_OF_SPEECH_MS - providers);
    // The reply is over after REPLY_GAP_MS of quiet packets (espeak-ng's pause at a comma is near 300 ms:
    // a shorter wait took a reply's last words for the next turn's answer).
    let quietFrom = first.index;
    for (;;) {
      const loud = await arrival(quietFrom, (p) => !silent(p));
      const next = await Promise.race([
        arrival(loud.index + 1, (p) => !silent(p)),
        new Promise<null>((r) => setTimeout(() => r(null), REPLY_GAP_MS)),
      ]);
      if (next === null) break;
      quietFrom = next.index;
    }
  }
  const done = await call;
  const rec = await w.api('GET', `/comms/calls/${done.body.data.callId}`, w.operator.token);
  const own: number[] = rec.body.data.aiAgent?.turnLatencyMs ?? [];
  const f = (xs: number[]) =>
    `p50=${pct(xs, 50).toFixed(1)} p99=${pct(xs, 99).toFixed(1)} max=${Math.max(...xs).toFixed(1)}`;
  console.log(`turns: ${heard.length} (end_of_speech_ms=${END_OF_SPEECH_MS}, espeak-ng renders every reply)`);
  console.log(`end of speech -> first agent packet (ms): ${f(heard)}`);
  console.log(`providers' own time (ms): ${f(stt.seen.map((s, i) => s.ms + (chat.seen[i]?.firstTextMs ?? 0)))}`);
  console.log(`added by the exchange (ms): ${f(added)} goal: p99 < 50`);
  console.log(`voiced packets of a reply after a gap of over ${REPLY_GAP_MS} ms in it: ${stragglers}`);
  if (own.length) console.log(`daemon's own turnLatencyMs (to the reply handed to the engine): ${f(own)}`);
  console.log(`# ${uptime()}`);
}

main()
  .catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => runCleanups(cleanups));
