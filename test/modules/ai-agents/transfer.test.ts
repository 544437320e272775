import { Decimal } from 'decimal.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import t from 'tap';
import { createTts } from '../../../src/telephony/media/tts.js';
import { createWorld, eventually } from '../sip-trunks/world.js';
import { available, callee, exitOk, expectedCost } from '../api-calls/peers.js';
import { withOptions } from '../../helpers/sipp-peers.js';
import { fill, sippMediaPort, sipp } from '../../telephony/sip/sipp.js';
import { createRtpPeer } from '../../telephony/media/helpers/rtp-peer.js';
import { audioCrossed, frames, heard, talk } from './phone-audio.js';
import { aiSection, startStreamingChat, startSttServer } from './provider-servers.js';
import { speechAudio } from './speech-pcap.js';
import { sdpAt } from './phone-sdp.js';
import { ENGINES, engineConfig } from '../api-calls/engines.js';

/**
 * An AI voice agent's transfer on a live call: the agent hears the caller ask for sales, says so,
 * and calls `transfer_call`; the daemon places a second call to the target over the account's
 * routes, joins the two once the target answers and leaves. Both phones' audio ends at UDP sockets
 * of this test (sipp carries the signalling and points its SDP at them), so the test sees the
 * caller's frames reach the target and the target's frames reach the caller. The target hangs up;
 * the daemon then hangs the caller up, and each call settles at its own route's price. On the
 * Asterisk engine both calls' audio is tapped from Asterisk to the daemon's RTP sessions (an
 * externalMedia channel bridged with each call's channel), so the same frames must cross Asterisk
 * twice each way and still arrive whole.
 */

/** Quiet but not silent PCMU bytes: below the agent's speech level, and unlike the 0xff the daemon sends idle. */
const CALLER_MARK = 0xfe;
const TARGET_MARK = 0x7e;

// The engines' cases share nothing (each its own daemon, database and peers; RTP binds skip a port
// in use): side by side, the file takes about one engine's time instead of the sum.
t.jobs = ENGINES.length;
for (const engine of ENGINES)
  t.test(
    `transfer_call bridges the caller to the target over the routes, billed as a call, and the agent leaves (${engine.name})`,
    { skip: available ? engine.skip : 'sipp, its pcaps or espeak-ng not installed' },
    async (t) => {
      const stt = await startSttServer(t, ['Put me through to sales, please.']);
      const chat = await startStreamingChat(t, [
        {
          content: 'Connecting you to sales now.',
          toolCalls: [{ name: 'transfer_call', arguments: { number: '+447600000001' } }],
        },
      ]);
      const base = 44000 + (process.pid % 300) * 20;
      const w = await createWorld(t, {
        rtp: { port_min: base, port_max: base + 19, bind_address: '127.0.0.1' },
        ai: aiSection(stt, chat),
        ...(await engineConfig(t, engine.name)),
      });
      const { d, operator } = w;
      const dir = mkdtempSync(join(tmpdir(), 'svc-transfer-'));
      t.teardown(() => rmSync(dir, { recursive: true, force: true }));

      const callerRtp = await createRtpPeer();
      const targetRtp = await createRtpPeer();
      t.teardown(() => callerRtp.close());
      t.teardown(() => targetRtp.close());
      const stopCaller = talk(callerRtp, speechAudio('Put me through to sales, please.', 1000, dir), CALLER_MARK);
      const stopTarget = talk(targetRtp, new Uint8Array(0), TARGET_MARK);
      t.teardown(stopCaller);
      t.teardown(stopTarget);

      // The caller waits for our BYE; the target talks for three seconds once joined, then hangs up.
      const callerSip = await sipp(
        t,
        sdpAt(callee('447400000001', '', true), callerRtp),
        ['-mp', String(await sippMediaPort())],
        {
          timeout: '60s',
          calls: 100,
        },
      );
      const targetScenario = withOptions('uas-answer-bye.xml', true, (s) =>
        sdpAt(
          fill(s, { EXPECT_USER: '447600000001' })
            .replace(/\s*<ereg regexp="From: &quot;Alice[^\n]*/, '')
            .replace('variables="ruri,caller,sdp"', 'variables="ruri,sdp"')
            .replace('<pause milliseconds="50"/>', '<pause milliseconds="3000"/>'),
          targetRtp,
        ),
      );
      const targetSip = await sipp(t, targetScenario, ['-mp', String(await sippMediaPort())], {
        timeout: '60s',
        calls: 100,
      });
      const first = await w.route({ port: callerSip.port, prefix: '4474', rate: '0.012000', increment: '1/1' });
      await w.route({ port: targetSip.port, prefix: '4476', rate: '0.020000', increment: '1/1' });

      const before = await d.modules.services.ledger.balanceOf(operator.accountId);
      const created = await w.api('POST', '/ai-agents', operator.token, {
        name: 'Front desk',
        systemPrompt: 'You route callers to the right team.',
        tools: ['transfer'],
        maxCallSeconds: 60,
        voiceId: 'espeak:en-us+f3',
      });
      t.equal(created.status, 201, created.text);
      const agentId = created.body.data.id as string;
      // The caller's call may last 90 s; the transfer leg gets what is left of it.
      const res = await w.api('POST', '/comms/calls', operator.token, {
        aiAgentId: agentId,
        to: '+447400000001',
        from: '+15550003333',
        routeId: first.routeId,
        maxDuration: 90,
      });
      t.equal(res.status, 200, res.text);
      t.equal(res.body.data.status, 'completed');
      // Nothing below holds unless the call's audio crossed the engine both ways: say that plainly,
      // rather than wait out the target's sipp for a transfer that cannot come.
      if (!audioCrossed(t, callerRtp, stt.seen.length, res.body.data)) return;
      await exitOk(t, targetSip, 'the target answered, talked and hung up');
      await exitOk(t, callerSip, 'the caller was hung up after the target left');

      // Media: each side's frames reached the other through the daemon.
      t.ok(frames(targetRtp, CALLER_MARK) >= 25, "the caller's audio reached the target", {
        frames: frames(targetRtp, CALLER_MARK),
      });
      t.ok(frames(callerRtp, TARGET_MARK) >= 25, "the target's audio reached the caller", {
        frames: frames(callerRtp, TARGET_MARK),
      });
      t.equal(frames(callerRtp, CALLER_MARK), 0, 'the caller does not hear itself');

      const rec = await eventually(async () => {
        const r = await w.api('GET', `/comms/calls/${res.body.data.callId}`, operator.token);
        return r.status === 200 && r.body.data.endedAt ? r.body.data : null;
      });
      const agent = rec.aiAgent;
      t.equal(agent.outcome, 'transferred');
      t.equal(agent.transferTo, '+447600000001');
      t.same(
        agent.transcript.map((x: { role: string; text: string }) => [x.role, x.text]),
        [
          ['caller', 'Put me through to sales, please.'],
          ['agent', 'Connecting you to sales now.'],
        ],
      );
      t.equal(chat.seen.length, 1, 'the agent took no turn after the transfer');

      // The agent spoke in its voice (espeak-ng's en-us with the f3 variant), not the language's default.
      const tts = createTts({ log: pino({ level: 'silent' }), cacheDir: null });
      const line = 'Connecting you to sales now.';
      const chosen = await tts.synthesize({ text: line, language: 'en', voice: 'en-us+f3', codec: 'PCMU' });
      const plain = await tts.synthesize({ text: line, language: 'en', codec: 'PCMU' });
      t.ok(heard(callerRtp, chosen), "the caller heard the reply in the agent's voice");
      t.notOk(heard(callerRtp, plain), 'not in the default voice');
      t.equal(stt.seen.length, 1, 'nothing the caller said to the target was transcribed');

      const leg = await eventually(async () => {
        const r = await w.api('GET', `/comms/calls/${agent.transferCallId}`, operator.token);
        return r.status === 200 && r.body.data.endedAt ? r.body.data : null;
      });
      t.match(leg, { status: 'completed', to: '+447600000001', from: '+15550003333' });
      t.ok(leg.durationSeconds >= 3, 'the target talked for its three seconds', { seconds: leg.durationSeconds });
      t.notOk(leg.aiAgent, 'the agent is not on the transfer leg');

      // Money: both calls at their routes' prices; the agent fee for the agent's part only.
      t.equal(rec.cost, expectedCost(rec.billableSeconds, '0.012000'));
      t.equal(leg.cost, expectedCost(leg.billableSeconds, '0.020000'));
      t.equal(agent.fee, '0.050000', 'one started minute of the agent');
      const after = await d.modules.services.ledger.balanceOf(operator.accountId);
      t.equal(
        new Decimal(before.balance).minus(after.balance).toFixed(6),
        new Decimal(rec.cost).plus(leg.cost).plus(agent.fee).toFixed(6),
        'the balance moved by the two calls and the agent fee',
      );
      t.equal(after.held, before.held, 'no hold left');
      const [sum] = await d.sql<{ s: string }[]>`select coalesce(sum(amount), 0)::text as s from entries`;
      t.equal(Number(sum!.s), 0, 'the ledger balances');
    },
  );
