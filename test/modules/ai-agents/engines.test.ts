import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import t from 'tap';
import { createTts } from '../../../src/telephony/media/tts.js';
import { createWorld, eventually } from '../sip-trunks/world.js';
import { available, callee, exitOk, expectedCost } from '../api-calls/peers.js';
import { ENGINES, engineConfig } from '../api-calls/engines.js';
import { sippMediaPort, sipp } from '../../telephony/sip/sipp.js';
import { createRtpPeer } from '../../telephony/media/helpers/rtp-peer.js';
import { audioCrossed, heard, talk } from './phone-audio.js';
import { sdpAt } from './phone-sdp.js';
import { aiSection, startStreamingChat, startSttServer } from './provider-servers.js';
import { speechAudio } from './speech-pcap.js';

/**
 * An AI voice agent on each call engine, the phone's audio at a UDP socket of this test (sipp keeps
 * the signalling). On the Asterisk engine the caller's channel is bridged with an externalMedia
 * channel whose RTP ends at one of the daemon's RTP sessions: the agent hears the caller there and
 * speaks there, one continuous stream.
 *
 * The caller talks over the agent's long opening line (barge-in: the rest of the line is never
 * heard), asks for a table, and hears the reply rendered in the agent's voice, frame for frame; the
 * model's end_call hangs up. A second agent with maxCallSeconds 3 is cut off at three seconds.
 */

const QUIET = 0xfe;
const OPENING =
  'Thank you for calling the Harbour restaurant. We are open every day from noon until eleven at night, and we take bookings for groups of any size.';
const REPLY_FIRST = 'A table for two is booked for tonight.';

// The engines' cases share nothing (each its own daemon, database and peers; RTP binds skip a port
// in use): side by side, the file takes about one engine's time instead of the sum.
t.jobs = ENGINES.length;
for (const engine of ENGINES)
  t.test(
    `an agent on the ${engine.name} engine: barge-in, a turn heard whole, end_call, maxCallSeconds`,
    { skip: available ? engine.skip : 'sipp, its pcaps or espeak-ng not installed' },
    async (t) => {
      const stt = await startSttServer(t, ['I would like a table for two tonight.']);
      const chat = await startStreamingChat(t, [
        { content: `${REPLY_FIRST} Goodbye!`, toolCalls: [{ name: 'end_call', arguments: {} }] },
      ]);
      const base = 47000 + (process.pid % 300) * 20;
      const w = await createWorld(t, {
        rtp: { port_min: base, port_max: base + 19, bind_address: '127.0.0.1' },
        ai: aiSection(stt, chat),
        ...(await engineConfig(t, engine.name)),
      });
      const { operator } = w;
      const dir = mkdtempSync(join(tmpdir(), 'svc-agent-engine-'));
      t.teardown(() => rmSync(dir, { recursive: true, force: true }));

      // The caller waits 1.5 s into the opening line (from its first sound), then speaks over it.
      const phone = await createRtpPeer();
      t.teardown(() => phone.close());
      const words = speechAudio('Hello, I would like a table for two tonight, please.', 0, dir);
      const said = new Uint8Array(1500 * 8 + words.length).fill(QUIET);
      said.set(words, 1500 * 8);
      const stop = talk(phone, said, QUIET, { afterVoice: true });
      t.teardown(stop);
      const sip = await sipp(
        t,
        sdpAt(callee('447400000001', '', true), phone),
        ['-mp', String(await sippMediaPort())],
        {
          timeout: '60s',
          calls: 100,
        },
      );
      const route = await w.route({ port: sip.port, prefix: '4474', rate: '0.012000', increment: '1/1' });

      const created = await w.api('POST', '/ai-agents', operator.token, {
        name: 'Harbour',
        systemPrompt: 'You take table bookings.',
        firstMessage: OPENING,
        tools: ['end'],
        maxCallSeconds: 60,
        voiceId: 'espeak:en-gb',
      });
      t.equal(created.status, 201, created.text);
      const res = await w.api('POST', '/comms/calls', operator.token, {
        aiAgentId: created.body.data.id,
        to: '+447400000001',
        from: '+15550003333',
        routeId: route.routeId,
        maxDuration: 120,
      });
      t.equal(res.status, 200, res.text);
      t.equal(res.body.data.status, 'completed');
      // Without audio both ways nothing below can hold: stop here with a clear message.
      if (!audioCrossed(t, phone, stt.seen.length, res.body.data)) return;
      await exitOk(t, sip, 'the phone was answered and hung up by the agent');

      const rec = await eventually(async () => {
        const r = await w.api('GET', `/comms/calls/${res.body.data.callId}`, operator.token);
        return r.status === 200 && r.body.data.endedAt ? r.body.data : null;
      });
      const agent = rec.aiAgent;
      t.equal(agent.outcome, 'ended_by_agent');
      t.same(
        agent.transcript.map((x: { role: string; text: string; interrupted?: boolean }) => [
          x.role,
          x.text,
          x.interrupted ?? false,
        ]),
        [
          ['agent', OPENING, true],
          ['caller', 'I would like a table for two tonight.', false],
          ['agent', `${REPLY_FIRST} Goodbye!`, false],
        ],
      );
      t.equal(stt.seen.length, 1, 'one utterance');
      t.equal(agent.turnLatencyMs.length, 1, 'the answered turn was timed');

      // What the phone heard: the opening's start but not its end (cut by the caller), the reply whole.
      const tts = createTts({ log: pino({ level: 'silent' }), cacheDir: null });
      t.teardown(() => tts.close());
      const opening = await tts.synthesize({ text: OPENING, language: 'en', voice: 'en-gb', codec: 'PCMU' });
      const reply = await tts.synthesize({ text: REPLY_FIRST, language: 'en', voice: 'en-gb', codec: 'PCMU' });
      t.ok(heard(phone, opening), 'the phone heard the opening line start');
      t.notOk(heard(phone, opening.subarray(opening.length - 160 * 60)), 'and not its end: the caller cut it short');
      t.ok(heard(phone, reply), 'the phone heard the reply, frame for frame, in the agent’s voice');
      t.equal(rec.cost, expectedCost(rec.billableSeconds, '0.012000'));

      // maxCallSeconds: a silent caller and an agent allowed three seconds.
      const quietPhone = await createRtpPeer();
      t.teardown(() => quietPhone.close());
      t.teardown(talk(quietPhone, new Uint8Array(0), QUIET));
      const sip2 = await sipp(
        t,
        sdpAt(callee('447400000002', '', true), quietPhone),
        ['-mp', String(await sippMediaPort())],
        { timeout: '60s', calls: 100 },
      );
      const route2 = await w.route({ port: sip2.port, prefix: '4474', rate: '0.012000', increment: '1/1' });
      const short = await w.api('POST', '/ai-agents', operator.token, {
        name: 'Short',
        systemPrompt: 'You answer briefly.',
        firstMessage: 'Hello.',
        maxCallSeconds: 3,
      });
      t.equal(short.status, 201, short.text);
      const res2 = await w.api('POST', '/comms/calls', operator.token, {
        aiAgentId: short.body.data.id,
        to: '+447400000002',
        from: '+15550003333',
        routeId: route2.routeId,
        maxDuration: 120,
      });
      t.equal(res2.status, 200, res2.text);
      await exitOk(t, sip2, 'the silent phone was hung up at the agent’s limit');
      // A call whose audio never crossed would also end without a turn: the silent phone heard the greeting.
      const hello = await tts.synthesize({ text: 'Hello.', language: 'en', codec: 'PCMU' });
      t.ok(heard(quietPhone, hello), 'the silent phone heard the agent say hello');
      const rec2 = await eventually(async () => {
        const r = await w.api('GET', `/comms/calls/${res2.body.data.callId}`, operator.token);
        return r.status === 200 && r.body.data.endedAt ? r.body.data : null;
      });
      t.match(rec2, { status: 'completed', durationSeconds: 3 });
      t.equal(rec2.aiAgent.outcome, 'call_ended');
      t.equal(stt.seen.length, 1, 'nothing was heard from the silent phone');
    },
  );
