import t from 'tap';
import { Decimal } from 'decimal.js';
import { parseWav } from '../../../src/telephony/media/pcm.js';
import { checkInvariants } from '../../ledger/helpers.js';
import { available } from '../api-calls/peers.js';
import { speechPcap } from '../ai-agents/speech-pcap.js';
import * as trunk from '../sip-trunks/world.js';
import { rentedNumber, sellerCall } from './rented.js';

// Money (numbers' platform fee 10 %, inbound minutes billed 60/60): inbound rate 0.012000/min, so a
// voicemail call of 1–60 s costs the renter 0.012000; the seller earns 0.010800.

interface EventRow {
  event: string;
  data: Record<string, unknown>;
}

t.test(
  'voicemail on a rented number: greeting, beep, recording, events, download, billed as the inbound call',
  { skip: available ? false : 'sipp, its pcaps or espeak-ng not installed' },
  async (t) => {
    const base = 44000 + (process.pid % 300) * 20;
    const w = await trunk.createWorld(t, { rtp: { port_min: base, port_max: base + 19, bind_address: '127.0.0.1' } });
    const did = await rentedNumber(w, t, { first: 5556001, inboundRate: '0.012000' });
    const { digits } = did;

    const bad = await w.api('PUT', `/dids/${did.id}/voicemail`, w.operator.token, {
      mode: 'always',
      greetingUrl: 'http://example.com/greeting.mp3',
    });
    t.equal(bad.status, 400, 'a greeting URL must be https');
    t.match(bad.body.error.details, [{ path: 'greetingUrl' }]);
    const set = await w.api('PUT', `/dids/${did.id}/voicemail`, w.operator.token, {
      mode: 'always',
      greetingText: 'Leave a message.',
      maxSeconds: 30,
      silenceSeconds: 2,
    });
    t.equal(set.status, 200, set.text);
    t.match(set.body.data, { mode: 'always', greetingText: 'Leave a message.', maxSeconds: 30, silenceSeconds: 2 });

    const seller0 = new Decimal((await w.d.modules.services.ledger.balanceOf(w.seller.accountId)).payable);
    const owner0 = new Decimal((await w.d.modules.services.ledger.balanceOf(w.operator.accountId)).balance);
    const kept = new Promise<string>((resolve) =>
      w.d.modules.services.numberVoice.answering.events.once('voicemail', resolve),
    );
    // The caller speaks from soon after the answer for longer than the greeting and the beep take
    // (synthesis included, however slow), then stays silent until our BYE: speech reaches the recording.
    const speech = speechPcap(
      t,
      'Hello, this is Alice. Please call me back about the invoice for March, the one for the new office, ' +
        'before Friday if you can. I will be at my desk all afternoon, so any time after two is fine.',
      4000,
    );
    const run = await sellerCall(
      t,
      w,
      digits,
      trunk.uacScenario('uac-tail-speak-bye-in.xml', { PAUSE_MS: '500', PCAP: speech.path }, false),
    );
    await trunk.expectExit(t, run, 'the caller was answered, left a message and got our BYE');
    const voicemailId = await kept;

    const call = await trunk.eventually(async () => {
      const [c] = await w.d.sql<{ id: string; status: string; cost: string; billableSeconds: number }[]>`
        select id, status, cost::text, billable_seconds from calls
        where account_id = ${w.operator.accountId} and ended_at is not null`;
      return c;
    });
    t.match(call, { status: 'completed', cost: '0.012000', billableSeconds: 60 });
    const cdrs = await w.d.sql<{ direction: string; routeId: string; buyerCost: string; sellerCredit: string }[]>`
      select direction, route_id, buyer_cost::text, seller_credit::text from cdrs where call_group_id = ${call.id}`;
    t.match(cdrs, [{ direction: 'inbound', routeId: did.id, buyerCost: '0.012000', sellerCredit: '0.010800' }]);
    const owner1 = new Decimal((await w.d.modules.services.ledger.balanceOf(w.operator.accountId)).balance);
    t.equal(owner0.minus(owner1).toFixed(6), '0.012000', 'the renter paid one inbound minute');
    const seller1 = new Decimal((await w.d.modules.services.ledger.balanceOf(w.seller.accountId)).payable);
    t.equal(seller1.minus(seller0).toFixed(6), '0.010800', 'the seller earned it less 10 %');

    const events = await w.d.sql<EventRow[]>`
      select event, data from events where account_id = ${w.operator.accountId}
        and event in ('number.call.received', 'number.voicemail.received') order by created_at`;
    const received = events.find((e) => e.event === 'number.call.received');
    t.match(received?.data, {
      didId: did.id,
      callId: call.id,
      number: digits,
      handledBy: 'voicemail',
      status: 'completed',
      cost: '0.012000',
    });
    const vmEvent = events.find((e) => e.event === 'number.voicemail.received');
    t.match(vmEvent?.data, {
      didId: did.id,
      voicemailId,
      callId: call.id,
      from: '15550001111',
      downloadPath: `/api/v1/dids/${did.id}/voicemails/${voicemailId}/audio`,
    });

    const list = await w.api('GET', `/dids/${did.id}/voicemails`, w.operator.token);
    t.equal(list.status, 200, list.text);
    t.equal(list.body.data.length, 1);
    const vm = list.body.data[0];
    t.match(vm, { id: voicemailId, callId: call.id, from: '15550001111', readAt: null });
    t.ok(vm.durationSeconds >= 2, 'the message holds the caller speaking', { durationSeconds: vm.durationSeconds });
    t.ok(vm.durationSeconds <= 30, 'within the maximum length');

    const audio = await w.d.app.inject({
      method: 'GET',
      url: `/api/v1/dids/${did.id}/voicemails/${voicemailId}/audio`,
      headers: { authorization: `Bearer ${w.operator.token}` },
    });
    t.equal(audio.statusCode, 200);
    t.equal(audio.headers['content-type'], 'audio/wav');
    t.equal(audio.rawPayload.length, vm.bytes);
    const wav = parseWav(audio.rawPayload);
    t.equal(wav.sampleRate, 8000);
    t.equal(wav.channels, 1);
    const loud = wav.samples.filter((v) => Math.abs(v) > 2000).length;
    t.ok(loud > 800, 'the recording carries the caller’s voice', { loudSamples: loud });
    const reread = await w.api('GET', `/dids/${did.id}/voicemails`, w.operator.token);
    t.ok(reread.body.data[0].readAt, 'downloading marks it read');

    const stranger = await w.signUp();
    const theirs = await w.api('GET', `/dids/${did.id}/voicemails`, stranger.token);
    t.equal(theirs.status, 404, 'another account sees nothing');

    await checkInvariants(t, w.d.sql);
  },
);
