import t from 'tap';
import { Decimal } from 'decimal.js';
import { checkInvariants } from '../../ledger/helpers.js';
import { withOptions } from '../../helpers/sipp-peers.js';
import { fill, sippMediaPort, sipp } from '../../telephony/sip/sipp.js';
import { startStreamingChat, startSttServer } from '../ai-agents/provider-servers.js';
import { speechPcap } from '../ai-agents/speech-pcap.js';
import { available, expectedCost, refusing } from '../api-calls/peers.js';
import * as trunk from '../sip-trunks/world.js';
import { rentedNumber, sellerCall } from './rented.js';

/**
 * An AI voice agent on a rented number's inbound call asks `transfer_call`: the exchange places the
 * transfer leg as the renter's own outbound call over the renter's routes (failover from a refusing
 * route to the next, hold, CDR, settlement), joins it to the caller once answered, and the agent
 * leaves. The target talks for 65 seconds and hangs up; the exchange then hangs the caller up. A second
 * call asks for a number no route of the renter covers: nothing is dialled and the caller is hung up.
 *
 * Money of the caller's call (inbound rate 0.012000/min, seller's part 0.010800, agent fee 0.050000/min,
 * billed per started minute): the agent's part is under a minute, the whole call between one and two
 * minutes, so 2 × 0.012000 + 1 × 0.050000 = 0.074000 (the seller earns 0.021600). With the fee kept
 * after the transfer it would be 2 × 0.062000 = 0.124000.
 */

t.test(
  'transfer_call on a number’s call: the renter’s outbound leg over its routes with failover, bridged, billed',
  { skip: available ? false : 'sipp, its pcaps or espeak-ng not installed' },
  async (t) => {
    const stt = await startSttServer(t, ['Put me through to sales, please.', 'Put me through to sales, please.']);
    const chat = await startStreamingChat(t, [
      {
        content: 'Connecting you to sales now.',
        toolCalls: [{ name: 'transfer_call', arguments: { number: '+447600000001' } }],
      },
      {
        content: 'Connecting you now.',
        toolCalls: [{ name: 'transfer_call', arguments: { number: '+19990000001' } }],
      },
    ]);
    const base = 46000 + (process.pid % 300) * 20;
    const w = await trunk.createWorld(t, {
      // The target is silent for its 65 s: no RTP timeout before it hangs up.
      rtp: { port_min: base, port_max: base + 19, bind_address: '127.0.0.1', timeout_ms: 120_000 },
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
    const did = await rentedNumber(w, t, { first: 5557101, inboundRate: '0.012000' });

    // The renter's routes to the target: the first refuses (503), the second answers and hangs up 3 s later.
    const refuser = await refusing(t, 503, 'Service Unavailable', false, '240s');
    const target = await sipp(
      t,
      withOptions('uas-answer-bye.xml', true, (s) =>
        fill(s, { EXPECT_USER: '447600000001' })
          .replace(/\s*<ereg regexp="From: &quot;Alice[^\n]*/, '')
          .replace('variables="ruri,caller,sdp"', 'variables="ruri,sdp"')
          .replace('<pause milliseconds="50"/>', '<pause milliseconds="65000"/>'),
      ),
      ['-mp', String(await sippMediaPort())],
      { timeout: '180s', calls: 100 },
    );
    await w.route({ port: refuser.port, prefix: '4476', rate: '0.015000', increment: '1/1' });
    await w.route({ port: target.port, prefix: '4476', rate: '0.020000', increment: '1/1' });

    const created = await w.api('POST', '/ai-agents', w.operator.token, {
      name: 'Switchboard',
      systemPrompt: 'You route callers to the right team.',
      tools: ['transfer'],
      maxCallSeconds: 150,
    });
    t.equal(created.status, 201, created.text);
    const attached = await w.api('PUT', `/dids/${did.id}/ai-agent`, w.operator.token, {
      aiAgentId: created.body.data.id,
    });
    t.equal(attached.status, 200, attached.text);

    const owner0 = new Decimal((await ledger.balanceOf(w.operator.accountId)).balance);
    const agentDone = new Promise<string>((resolve) =>
      w.d.modules.services.numberVoice.answering.events.once('agent-ended', resolve),
    );
    const speech = speechPcap(t, 'Hello, put me through to sales, please.', 6000);
    const run = await sellerCall(
      t,
      w,
      did.digits,
      trunk.uacScenario('uac-tail-speak-bye-in.xml', { PAUSE_MS: '500', PCAP: speech.path }, false),
    );
    await trunk.expectExit(t, run, 'the caller was transferred, and hung up by us once the target left');
    await trunk.expectExit(t, target, 'the target answered the transfer leg, talked and hung up');
    const callId = await agentDone;

    const [conv] = await w.d.sql<
      { outcome: string; transferTo: string; transferCallId: string | null; fee: string; durationSeconds: number }[]
    >`select outcome, transfer_to, transfer_call_id, fee::text, duration_seconds from ai_agent_calls where call_id = ${callId}`;
    t.match(conv, { outcome: 'transferred', transferTo: '+447600000001', fee: '0.050000' });
    t.ok(conv?.transferCallId, 'the transfer leg is on the conversation');
    t.equal(chat.seen.length, 1, 'the agent took no turn after the transfer');

    const leg = await trunk.eventually(async () => {
      const r = await w.api('GET', `/comms/calls/${conv!.transferCallId}`, w.operator.token);
      return r.status === 200 && r.body.data.endedAt ? r.body.data : null;
    });
    t.match(leg, { status: 'completed', to: '+447600000001', from: '+15550001111' });
    t.ok(leg.durationSeconds >= 65, 'the target talked for its 65 seconds', { seconds: leg.durationSeconds });
    t.equal(leg.cost, expectedCost(leg.billableSeconds, '0.020000'), 'billed at the answering route’s price');
    t.equal(leg.attempts.length, 2, 'the refusing route first, then the next');
    t.equal(leg.attempts[0].sipResponseCode, 503);
    t.notOk(leg.aiAgent, 'the agent is not on the transfer leg');

    const inbound = await trunk.eventually(async () => {
      const [c] = await w.d.sql<{ cost: string; durationSeconds: number }[]>`
        select cost::text, duration_seconds from calls where id = ${callId} and ended_at is not null`;
      return c;
    });
    t.ok(
      inbound.durationSeconds > 60 && inbound.durationSeconds <= 120 && (conv?.durationSeconds ?? 60) < 60,
      'the agent’s part under a minute, the whole call in its second minute',
      { call: inbound.durationSeconds, agent: conv?.durationSeconds },
    );
    t.equal(inbound.cost, '0.074000', 'the agent fee for the agent’s minute only, the inbound rate for both');
    const cdrs = await w.d.sql<
      { direction: string; buyerCost: string; sellerCredit: string; billedSeconds: number; status: string }[]
    >`select direction, buyer_cost::text, seller_credit::text, billed_seconds, status from cdrs
      where call_group_id = ${callId} and status = 'completed'`;
    t.match(cdrs, [
      {
        direction: 'inbound',
        status: 'completed',
        buyerCost: '0.074000',
        sellerCredit: '0.021600',
        billedSeconds: 120,
      },
    ]);
    t.equal(cdrs.length, 1, 'one answered leg: the number’s call');
    const [fee] = await w.d.sql<{ s: string }[]>`
      select coalesce(sum(e.amount), 0)::numeric(20,6)::text as s from entries e join ledger_accounts a on a.id = e.account_id
      where a.kind = 'platform_fee' and e.call_id = ${callId}`;
    t.equal(fee?.s, '0.052400', 'the platform kept the agent’s minute and 10 % of the inbound minutes');
    t.equal(
      owner0.minus(new Decimal((await ledger.balanceOf(w.operator.accountId)).balance)).toFixed(6),
      new Decimal(inbound.cost).plus(leg.cost).toFixed(6),
      'the renter paid the number’s call and its own transfer leg',
    );
    t.equal((await ledger.balanceOf(w.operator.accountId)).held, '0.000000', 'no hold left');

    // A target no route covers: no leg, the caller is hung up, the conversation says so.
    const failedDone = new Promise<string>((resolve) =>
      w.d.modules.services.numberVoice.answering.events.once('agent-ended', resolve),
    );
    const run2 = await sellerCall(
      t,
      w,
      did.digits,
      trunk.uacScenario('uac-tail-speak-bye-in.xml', { PAUSE_MS: '500', PCAP: speech.path }, false),
    );
    await trunk.expectExit(t, run2, 'the caller was hung up when the transfer could not be placed');
    const failedId = await failedDone;
    const [failed] = await w.d.sql<{ outcome: string; transferTo: string; transferCallId: string | null }[]>`
      select outcome, transfer_to, transfer_call_id from ai_agent_calls where call_id = ${failedId}`;
    t.match(failed, { outcome: 'transfer_failed', transferTo: '+19990000001', transferCallId: null });

    await checkInvariants(t, w.d.sql);
  },
);
