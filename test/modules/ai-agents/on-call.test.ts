import { Decimal } from 'decimal.js';
import t from 'tap';
import { createWorld, eventually } from '../sip-trunks/world.js';
import { answering, available, exitOk, expectedCost } from '../api-calls/peers.js';
import { aiSection, startSpeechServer, startStreamingChat, startSttServer } from './provider-servers.js';
import { speechPcap } from './speech-pcap.js';

/**
 * An AI voice agent holding a real call: POST /comms/calls naming the agent, the daemon's SIP stack
 * dialling sipp, sipp answering and, after the agent's opening line, playing a recording of a
 * caller's speech (PCMU RTP from a pcap); the daemon finds the end of the speech, sends it to a
 * local speech-to-text server, streams the next turn from a local chat completions server, speaks
 * it with espeak-ng and hangs up on the model's end_call; the call, the agent fee and the
 * transcript settle together.
 */
t.test(
  'an agent answers a caller on a live call: STT, streamed model turn, speech, end_call, fee and transcript',
  { skip: available ? false : 'sipp, its pcaps or espeak-ng not installed' },
  async (t) => {
    const stt = await startSttServer(t, ['I would like a table for two tonight.']);
    const chat = await startStreamingChat(t, [
      {
        content: 'Certainly, a table for two tonight is booked. Goodbye!',
        toolCalls: [
          { name: 'capture', arguments: { fields: { party: '2', when: 'tonight' } } },
          { name: 'end_call', arguments: { reason: 'booked' } },
        ],
      },
    ]);
    const speech = await startSpeechServer(t, [
      'Hello, this is the restaurant.',
      'Certainly, a table for two tonight is booked.',
      'Goodbye!',
    ]);
    const base = 43000 + (process.pid % 300) * 20;
    const w = await createWorld(t, {
      rtp: { port_min: base, port_max: base + 19, bind_address: '127.0.0.1' },
      dialer: { tick_ms: 50, call_poll_ms: 150 },
      ai: aiSection(stt, chat, { tts_url: speech.url, tts_api_key: 'sk-local' }),
    });
    const { d, operator } = w;
    const caller = speechPcap(t, 'Hello, I would like a table for two tonight, please.', 1000);
    // The agent's opening line plays first; the caller speaks after it, then listens until our BYE.
    const peer = await answering(
      t,
      '447400000001',
      [
        '  <pause milliseconds="2500"/>',
        `  <nop><action><exec play_pcap_audio="${caller.path}"/></action></nop>`,
        `  <pause milliseconds="${caller.ms + 500}"/>`,
      ].join('\n'),
    );
    const { routeId } = await w.route({ port: peer.port, prefix: '4474', rate: '0.012000', increment: '1/1' });

    const created = await w.api('POST', '/ai-agents', operator.token, {
      name: 'Bookings',
      systemPrompt: 'You take table bookings for a restaurant.',
      firstMessage: 'Hello, this is the restaurant.',
      tools: ['end', 'capture'],
      maxCallSeconds: 60,
      voiceId: 'openai:nova',
    });
    t.equal(created.status, 201, created.text);
    const agentId = created.body.data.id as string;
    const before = await d.modules.services.ledger.balanceOf(operator.accountId);

    const res = await w.api('POST', '/comms/calls', operator.token, {
      to: '+447400000001',
      from: '+15550003333',
      routeId,
      maxDuration: 120,
      aiAgentId: agentId,
    });
    t.equal(res.status, 200, res.text);
    const call = res.body.data;
    t.equal(call.status, 'completed');
    await exitOk(t, peer, 'sipp answered, played the caller and received our BYE');

    t.equal(stt.seen.length, 1, 'one utterance was transcribed');
    t.equal(stt.seen[0]!.model, 'whisper-1');
    t.ok(
      stt.seen[0]!.seconds > 1 && stt.seen[0]!.seconds < caller.ms / 1000,
      'the WAV held the speech, not the quiet after it',
      {
        seconds: stt.seen[0]!.seconds,
      },
    );
    t.equal(chat.seen.length, 1);
    const turn = chat.seen[0]!;
    t.equal(turn.stream, true, 'the turn is streamed');
    t.same(
      turn.messages.map((m) => m.role),
      ['system', 'assistant', 'user'],
    );
    t.match(turn.messages[0]!.content, /table bookings/);
    t.equal(turn.messages[1]!.content, 'Hello, this is the restaurant.');
    t.equal(turn.messages[2]!.content, 'I would like a table for two tonight.');
    t.same((turn.tools ?? []).map((x) => x.function.name).sort(), ['capture', 'end_call']);

    const rec = await eventually(async () => {
      const r = await w.api('GET', `/comms/calls/${call.callId}`, operator.token);
      return r.status === 200 && r.body.data.endedAt ? r.body.data : null;
    });
    const agent = rec.aiAgent;
    t.equal(agent.agentId, agentId);
    t.equal(agent.outcome, 'ended_by_agent');
    t.same(
      agent.transcript.map((x: { role: string; text: string }) => [x.role, x.text]),
      [
        ['agent', 'Hello, this is the restaurant.'],
        ['caller', 'I would like a table for two tonight.'],
        ['agent', 'Certainly, a table for two tonight is booked. Goodbye!'],
      ],
    );
    t.same(agent.captured, { party: '2', when: 'tonight' });
    t.equal(agent.turnLatencyMs.length, 1, 'one answered turn was timed');
    // The agent's voice is the speech endpoint's `nova`: each line spoken went there, sentence by sentence.
    t.same(
      speech.seen.map((s) => [s.model, s.voice, s.input]),
      [
        ['tts-1', 'nova', 'Hello, this is the restaurant.'],
        ['tts-1', 'nova', 'Certainly, a table for two tonight is booked.'],
        ['tts-1', 'nova', 'Goodbye!'],
      ],
    );
    t.ok(agent.turnLatencyMs[0] >= 0 && agent.turnLatencyMs[0] < 5000, 'end of speech to the agent speaking', {
      latencyMs: agent.turnLatencyMs[0],
    });

    // Money: the call at the route price, plus the agent fee per started minute, nothing held.
    const minutes = Math.ceil(rec.durationSeconds / 60);
    const fee = new Decimal('0.05').times(minutes).toFixed(6);
    t.equal(agent.fee, fee);
    t.equal(rec.cost, expectedCost(rec.billableSeconds, '0.012000'));
    const after = await d.modules.services.ledger.balanceOf(operator.accountId);
    t.equal(
      new Decimal(before.balance).minus(after.balance).toFixed(6),
      new Decimal(rec.cost).plus(fee).toFixed(6),
      'the balance moved by the call and the agent fee',
    );
    t.equal(after.held, before.held, 'no hold left');
    const [sum] = await d.sql<{ s: string }[]>`select coalesce(sum(amount), 0)::text as s from entries`;
    t.equal(Number(sum!.s), 0, 'the ledger balances');

    // Refusals before anything is dialled: an agent with actions, an agent not on the account.
    const both = await w.api('POST', '/comms/calls', operator.token, {
      to: '+447400000002',
      from: '+15550003333',
      aiAgentId: agentId,
      actions: [{ say: 'hi' }],
    });
    t.equal(both.status, 400);
    t.equal(both.body.error.code, 'VALIDATION_ERROR');
    t.equal(both.body.error.details[0].path, 'actions');
    const unknown = await w.api('POST', '/comms/calls', operator.token, {
      to: '+447400000002',
      from: '+15550003333',
      aiAgentId: '0190d4a8-0000-7000-8000-000000000001',
    });
    t.equal(unknown.status, 400);
    t.equal(unknown.body.error.details[0].path, 'aiAgentId');

    // A voice campaign hands its answered calls to the agent.
    const peer2 = await answering(
      t,
      '447500000001',
      [
        '  <pause milliseconds="2500"/>',
        `  <nop><action><exec play_pcap_audio="${caller.path}"/></action></nop>`,
        `  <pause milliseconds="${caller.ms + 500}"/>`,
      ].join('\n'),
    );
    const route2 = await w.route({ port: peer2.port, prefix: '4475', rate: '0.012000', increment: '1/1' });
    const clis = await w.api('POST', '/dialer/cli-sets', operator.token, { name: 'agent', clis: ['+15550004444'] });
    const campaign = {
      name: 'Bookings callback',
      routeId: route2.routeId,
      kind: 'voice',
      maxCallDuration: 60,
      cliSetId: clis.body.data.id,
      aiAgentId: agentId,
    };
    const mixed = await w.api('POST', '/dialer/campaigns', operator.token, { ...campaign, actions: [{ say: 'hi' }] });
    t.equal(mixed.status, 400, 'actions and an agent together are refused');
    t.equal(mixed.body.error.details[0].path, 'aiAgentId');
    const made = await w.api('POST', '/dialer/campaigns', operator.token, campaign);
    t.equal(made.status, 201, made.text);
    t.equal(made.body.data.aiAgentId, agentId);
    const cid = made.body.data.id as string;
    await w.api('POST', `/dialer/campaigns/${cid}/numbers`, operator.token, { numbers: ['+447500000001'] });
    const started = await w.api('POST', `/dialer/campaigns/${cid}/control`, operator.token, { action: 'start' });
    t.equal(started.status, 200, started.text);
    const done = await eventually(async () => {
      const r = await w.api('GET', `/dialer/campaigns/${cid}`, operator.token);
      return r.body.data.status === 'completed' ? r.body.data : null;
    }, 60_000);
    t.match(done, { numbersDialed: 1, numbersAnswered: 1, numbersFailed: 0 });
    await exitOk(t, peer2, 'the campaign call was answered, spoke and was hung up by the agent');
    const [held] = await d.sql<{ outcome: string; transcript: { role: string }[]; callId: string }[]>`
      select a.outcome, a.transcript, a.call_id from ai_agent_calls a
      join dialer_attempts x on x.call_id = a.call_id where x.campaign_id = ${cid}`;
    t.equal(held?.outcome, 'ended_by_agent', 'the agent held the campaign call');
    t.same(
      held?.transcript.map((x) => x.role),
      ['agent', 'caller', 'agent'],
    );
  },
);
