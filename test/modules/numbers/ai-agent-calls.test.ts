import t from 'tap';
import { Decimal } from 'decimal.js';
import { checkInvariants } from '../../ledger/helpers.js';
import { startStreamingChat, startSttServer } from '../ai-agents/provider-servers.js';
import { speechPcap } from '../ai-agents/speech-pcap.js';
import { available } from '../api-calls/peers.js';
import * as trunk from '../sip-trunks/world.js';
import { rentedNumber, sellerCall } from './rented.js';

// Money (numbers' platform fee 10 %, inbound minutes billed 60/60): inbound rate 0.012000/min plus
// the agent fee 0.050000/min = 0.062000 for a call of 1–60 s; the seller earns 0.010800 (its rate
// less 10 %), the platform keeps 0.001200 of the rate and the whole agent fee.

t.test(
  'an inbound call on a number with an AI voice agent attached is answered and held by the agent',
  { skip: available ? false : 'sipp, its pcaps or espeak-ng not installed' },
  async (t) => {
    const stt = await startSttServer(t, ['I would like to book a table for two.']);
    const chat = await startStreamingChat(t, [
      {
        content: 'Certainly, a table for two is booked. Goodbye!',
        toolCalls: [
          { name: 'capture', arguments: { fields: { party: '2' } } },
          { name: 'end_call', arguments: { reason: 'booked' } },
        ],
      },
    ]);
    const base = 45000 + (process.pid % 300) * 20;
    const w = await trunk.createWorld(t, {
      rtp: { port_min: base, port_max: base + 19, bind_address: '127.0.0.1' },
      ai: {
        chat_url: chat.url,
        chat_api_key: 'sk-local',
        stt_url: stt.url,
        stt_api_key: 'sk-local',
        agent_fee_per_minute: '0.050000',
        end_of_speech_ms: 500,
      },
    });
    const { ledger } = w.d.modules.services;
    const did = await rentedNumber(w, t, { first: 5557001, inboundRate: '0.012000' });
    const { digits } = did;

    const created = await w.api('POST', '/ai-agents', w.operator.token, {
      name: 'Front desk',
      systemPrompt: 'You take table bookings for a restaurant.',
      firstMessage: 'Hello, this is the restaurant.',
      tools: ['end', 'capture'],
      maxCallSeconds: 60,
    });
    t.equal(created.status, 201, created.text);
    const agentId = created.body.data.id as string;
    const attached = await w.api('PUT', `/dids/${did.id}/ai-agent`, w.operator.token, { aiAgentId: agentId });
    t.equal(attached.status, 200, attached.text);

    const owner0 = new Decimal((await ledger.balanceOf(w.operator.accountId)).balance);
    const seller0 = new Decimal((await ledger.balanceOf(w.seller.accountId)).payable);
    const agentDone = new Promise<string>((resolve) =>
      w.d.modules.services.numberVoice.answering.events.once('agent-ended', resolve),
    );
    // The caller lets the agent's opening line play, speaks, then listens until the agent's BYE.
    const speech = speechPcap(t, 'Hello, I would like to book a table for two, please.', 6000);
    const run = await sellerCall(
      t,
      w,
      digits,
      trunk.uacScenario('uac-tail-speak-bye-in.xml', { PAUSE_MS: '2500', PCAP: speech.path }, false),
    );
    await trunk.expectExit(t, run, 'the caller talked to the agent and got its BYE');
    const callId = await agentDone;

    t.equal(stt.seen.length, 1, 'the caller’s utterance was transcribed');
    t.equal(chat.seen.length, 1, 'one model turn');
    t.equal(chat.seen[0]!.messages[2]!.content, 'I would like to book a table for two.');

    const call = await trunk.eventually(async () => {
      const [c] = await w.d.sql<{ id: string; status: string; cost: string; billableSeconds: number }[]>`
        select id, status, cost::text, billable_seconds from calls
        where account_id = ${w.operator.accountId} and ended_at is not null`;
      return c;
    });
    t.equal(call.id, callId, 'the conversation belongs to the inbound call');
    t.match(call, { status: 'completed', cost: '0.062000', billableSeconds: 60 });
    const [cdr] = await w.d.sql<{ direction: string; routeId: string; buyerCost: string; sellerCredit: string }[]>`
      select direction, route_id, buyer_cost::text, seller_credit::text from cdrs where call_group_id = ${call.id}`;
    t.match(cdr, { direction: 'inbound', routeId: did.id, buyerCost: '0.062000', sellerCredit: '0.010800' });
    t.equal(
      owner0.minus(new Decimal((await ledger.balanceOf(w.operator.accountId)).balance)).toFixed(6),
      '0.062000',
      'the renter paid the inbound minute and the agent fee',
    );
    t.equal(
      new Decimal((await ledger.balanceOf(w.seller.accountId)).payable).minus(seller0).toFixed(6),
      '0.010800',
      'the seller earned its rate less 10 %, nothing of the agent fee',
    );

    const [conv] = await w.d.sql<
      { agentId: string; outcome: string; captured: Record<string, string>; fee: string; transcript: unknown[] }[]
    >`select agent_id, outcome, captured, fee::text, transcript from ai_agent_calls where call_id = ${call.id}`;
    t.match(conv, { agentId, outcome: 'ended_by_agent', captured: { party: '2' }, fee: '0.050000' });
    t.equal(conv?.transcript.length, 3, 'greeting, caller, reply');
    const [ev] = await w.d.sql<{ data: Record<string, unknown> }[]>`
      select data from events where account_id = ${w.operator.accountId} and event = 'number.call.received'`;
    t.match(ev?.data, { didId: did.id, callId: call.id, handledBy: 'ai_agent', cost: '0.062000' });

    await checkInvariants(t, w.d.sql);
  },
);
