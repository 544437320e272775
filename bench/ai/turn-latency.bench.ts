/**
 * AI voice agent turn latency: what the exchange adds between the end of a caller's speech and the
 * first packet of the agent's answer, beyond the providers' own time.
 *
 * One real daemon (fresh database, dropped after), a sipp callee for the signalling whose SDP points
 * at a phone in a worker thread of this process (bench/ai/phone.ts: its own clock, so the daemon's
 * pauses do not bend what it sees), local OpenAI-compatible speech-to-text and streaming chat
 * servers that report their own time. One call held by an agent; each turn the phone speaks a
 * recorded sentence, then sends quiet frames; the agent's reply differs each turn, so espeak-ng
 * renders every one (no prompt cache). Per turn:
 *   heard  = first voiced packet at the phone − the phone's last voiced frame sent
 *   added  = heard − `[ai] end_of_speech_ms` (the configured pause that ends a turn)
 *            − the STT server's time − the chat server's time to its first words
 * Prints p50/p99 of `added` (goal p99 < 50 ms) and of `heard`, then `added` split into stages
 * (the daemon's timings come over its diagnostics channels, `svc-exchange.ai-agents.turn` and
 * `svc-exchange.media.speech-audio`), the slowest turns stage by stage with the GC pauses inside
 * them, event-loop delay, and `uptime`: the machine is shared, so a figure under load is read with
 * the load beside it. The first turn (the daemon's first reply since it started: lazy module loads,
 * cold code) is shown apart and kept out of the percentiles; p99 over 200 turns is the third slowest.
 *
 * Usage: node --import tsx bench/ai/turn-latency.bench.ts [turns=200]
 */
import { execFileSync } from 'node:child_process';
import { subscribe } from 'node:diagnostics_channel';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance, PerformanceObserver } from 'node:perf_hooks';
import { createWorld } from '../../test/modules/sip-trunks/world.js';
import { callee } from '../../test/modules/api-calls/peers.js';
import { freePort, sipp } from '../../test/telephony/sip/sipp.js';
import type { RtpPeer } from '../../test/telephony/media/helpers/rtp-peer.js';
import { aiSection, startStreamingChat, startSttServer } from '../../test/modules/ai-agents/provider-servers.js';
import { speechAudio } from '../../test/modules/ai-agents/speech-pcap.js';
import { sdpAt } from '../../test/modules/ai-agents/phone-sdp.js';
import { runCleanups } from '../lib/cleanups.js';
import { decodeG711 } from '../../src/telephony/media/g711.js';
import { startWorker } from '../../src/telephony/media/start-worker.js';
import { turnTimingChannel, type TurnTiming } from '../../src/modules/ai-agents/conversation.js';
import { speechAudioChannel, type SpeechAudioEvent } from '../../src/telephony/media/engine-call.js';
import type { FromPhone, PhoneData } from './phone.js';

const [turns = 200] = process.argv.slice(2).map(Number);
const END_OF_SPEECH_MS = 300;
// The reply is over after this much quiet (espeak-ng's pause at a comma is near 300 ms: a shorter
// wait took a reply's last words for the next turn's answer).
const REPLY_GAP_MS = 700;
const CALLER = 'When do you open?';
const cleanups: Array<() => unknown> = [];
const t = {
  teardown: (fn: () => unknown) => {
    cleanups.push(fn);
  },
  equal: (a: unknown, b: unknown) => a === b,
};
const uptime = () => execFileSync('uptime', { encoding: 'utf8' }).trim();
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((s.length * p) / 100))] ?? NaN;
};
const f = (xs: number[]) =>
  `p50=${pct(xs, 50).toFixed(1)} p99=${pct(xs, 99).toFixed(1)} max=${Math.max(...xs).toFixed(1)}`;

async function main() {
  console.log(`# ${uptime()}`);
  const stt = await startSttServer(t, [CALLER]);
  // A different answer each turn, so each is rendered by espeak-ng as a new reply would be; the last ends the call.
  const chat = await startStreamingChat(
    t,
    Array.from({ length: turns }, (_, i) => ({
      content: `We open at ${(i % 12) + 1}, turn ${i + 1}.`,
      ...(i === turns - 1 ? { toolCalls: [{ name: 'end_call', arguments: {} }] } : {}),
    })),
  );
  const w = await createWorld(t, {
    rtp: { port_min: 31000, port_max: 31099, bind_address: '127.0.0.1' },
    ai: aiSection(stt, chat, { end_of_speech_ms: END_OF_SPEECH_MS, agent_fee_per_minute: '0' }),
  });
  const dir = mkdtempSync(join(tmpdir(), 'svc-turns-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const speech = speechAudio(CALLER, 0, dir);
  // The end of speech is the last frame loud enough to count as speech (`[ai] speech_level`, 600 by
  // default), as the daemon judges it: espeak-ng's trailing quiet is not speech.
  let voicedEnd = 0;
  for (let at = 0; at < speech.length; at += 160) {
    const pcm = decodeG711('PCMU', speech.subarray(at, at + 160));
    if (pcm.reduce((n, x) => n + Math.abs(x), 0) / pcm.length >= 600) voicedEnd = Math.min(speech.length, at + 160);
  }

  const phone = startWorker(new URL('./phone.ts', import.meta.url), {
    speech,
    voicedEnd,
    replyGapMs: REPLY_GAP_MS,
  } satisfies PhoneData);
  cleanups.push(() => phone.terminate());
  const fromPhone = (type: FromPhone['type']) =>
    new Promise<FromPhone>((resolve) => {
      const on = (m: FromPhone) => {
        if (m.type !== type) return;
        phone.off('message', on);
        resolve(m);
      };
      phone.on('message', on);
    });
  const ready = (await fromPhone('ready')) as Extract<FromPhone, { type: 'ready' }>;
  const target = fromPhone('target');
  const answerSdp = `v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio ${ready.port} RTP/AVP 0 101\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:101 telephone-event/8000\r\na=fmtp:101 0-16\r\n`;
  const sip = await sipp(
    t,
    sdpAt(callee('447400000001', '', true), { answerSdp: () => answerSdp } as unknown as RtpPeer),
    ['-mp', String(await freePort())],
    { timeout: `${turns * 10 + 60}s`, calls: 100 },
  );
  const route = await w.route({ port: sip.port, prefix: '4474', rate: '0.010000', increment: '1/1' });
  const agent = await w.api('POST', '/ai-agents', w.operator.token, {
    name: 'Bench',
    systemPrompt: 'You answer questions about opening hours.',
    tools: ['end'],
    maxCallSeconds: 3600,
  });
  if (agent.status !== 201) throw new Error(agent.text);

  const call = w.api('POST', '/comms/calls', w.operator.token, {
    to: '+447400000001',
    from: '+15550003333',
    routeId: route.routeId,
    maxDuration: 3600,
    aiAgentId: agent.body.data.id,
  });
  await target;
  // The daemon runs in this process: its turn and speech timings come over diagnostics channels.
  const timings: TurnTiming[] = [];
  const speeches: SpeechAudioEvent[] = [];
  subscribe(turnTimingChannel.name, (m) => timings.push(m as TurnTiming));
  subscribe(speechAudioChannel.name, (m) => speeches.push(m as SpeechAudioEvent));
  const loopDelay = monitorEventLoopDelay({ resolution: 1 });
  const gcPauses: { at: number; ms: number }[] = [];
  const gc = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcPauses.push({ at: e.startTime, ms: e.duration });
  });
  gc.observe({ entryTypes: ['gc'] });
  cleanups.push(() => gc.disconnect());
  // The phone's times are absolute; the daemon's are this thread's performance.now().
  const local = (abs: number) => abs - performance.timeOrigin;
  const phoneEnds: number[] = [];
  const heardAts: number[] = [];
  let stragglers = 0;
  for (let i = 0; i < turns; i++) {
    if (i === 1) loopDelay.enable();
    const over = fromPhone('turn');
    phone.postMessage({ type: 'speak' });
    const m = (await over) as Extract<FromPhone, { type: 'turn' }>;
    phoneEnds.push(local(m.speechEndAt));
    heardAts.push(local(m.heardAt));
    stragglers += m.stragglers;
  }
  loopDelay.disable();
  await call;

  const heard = heardAts.map((at, i) => at - phoneEnds[i]!);
  const providers = heard.map((_, i) => stt.seen[i]!.ms + (chat.seen[i]?.firstTextMs ?? 0));
  const added = heard.map((h, i) => h - END_OF_SPEECH_MS - providers[i]!);
  // Where `added` goes, stage by stage (the stages sum to it).
  const names = [
    'phone -> agent (last voiced frame)',
    `end of speech beyond ${END_OF_SPEECH_MS} ms of quiet`,
    'end of turn -> STT request',
    'STT request beyond the server',
    'STT answer -> chat request',
    'chat request -> first words, beyond the server',
    'first words -> first sentence to speech',
    'sentence -> first espeak-ng audio',
    'first audio -> handed to the RTP worker',
    'RTP worker -> first packet at the phone',
  ];
  const rows = heard.map((_, i): number[] | null => {
    const tt = timings[i];
    if (!tt || tt.firstTextAt === null || tt.firstSentenceAt === null) return null;
    const sp = speeches.find((e) => e.renderedAt >= tt.firstSentenceAt!);
    if (!sp) return null;
    return [
      tt.speechEndedAt - phoneEnds[i]!,
      tt.endpointedAt - tt.speechEndedAt - END_OF_SPEECH_MS,
      tt.sttSentAt - tt.endpointedAt,
      tt.sttDoneAt - tt.sttSentAt - stt.seen[i]!.ms,
      tt.chatSentAt - tt.sttDoneAt,
      tt.firstTextAt - tt.chatSentAt - chat.seen[i]!.firstTextMs!,
      tt.firstSentenceAt - tt.firstTextAt,
      sp.renderedAt - tt.firstSentenceAt,
      sp.queuedAt - sp.renderedAt,
      heardAts[i]! - sp.queuedAt,
    ];
  });
  const gcIn = (i: number) =>
    gcPauses.filter((g) => g.at >= phoneEnds[i]! && g.at <= heardAts[i]!).reduce((n, g) => n + g.ms, 0);
  const row = (i: number) =>
    `${added[i]!.toFixed(1)} = ${rows[i]?.map((ms) => ms.toFixed(1)).join(' + ') ?? '?'} | GC ${gcIn(i).toFixed(1)}`;

  const measured = heard.map((_, i) => i).slice(1);
  const of = (xs: number[]) => measured.map((i) => xs[i]!);
  console.log(
    `turns: ${measured.length} measured after the first (end_of_speech_ms=${END_OF_SPEECH_MS}, espeak-ng renders every reply)`,
  );
  console.log(`end of speech -> first agent packet (ms): ${f(of(heard))}`);
  console.log(`providers' own time (ms): ${f(of(providers))}`);
  console.log(`added by the exchange (ms): ${f(of(added))} goal: p99 < 50`);
  console.log(`stages of added (ms):`);
  names.forEach((name, s) => {
    const xs = measured.flatMap((i) => (rows[i] ? [rows[i][s]!] : []));
    console.log(`  ${name}: ${f(xs)}`);
  });
  console.log(`slowest turns, added = the stages above in order | GC pauses inside the turn (ms):`);
  for (const i of [...measured].sort((a, b) => added[b]! - added[a]!).slice(0, 5))
    console.log(`  turn ${i + 1}: ${row(i)}`);
  console.log(`first turn (the daemon's first reply since it started): ${row(0)}`);
  const gcMs = gcPauses.map((g) => g.ms);
  console.log(
    `event-loop delay (ms): p50=${(loopDelay.percentile(50) / 1e6).toFixed(1)} p99=${(loopDelay.percentile(99) / 1e6).toFixed(1)} max=${(loopDelay.max / 1e6).toFixed(1)}; GC pauses: ${gcMs.length}, p99 ${pct(gcMs, 99).toFixed(1)} max ${Math.max(0, ...gcMs).toFixed(1)} ms`,
  );
  console.log(`voiced packets while the phone spoke (a reply's tail after ${REPLY_GAP_MS} ms of quiet): ${stragglers}`);
  console.log(`# ${uptime()}`);
}

main()
  .catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => runCleanups(cleanups));
