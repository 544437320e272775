import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Decimal } from 'decimal.js';
import { checkInvariants } from '../../ledger/helpers.js';
import { available } from '../api-calls/peers.js';
import { speechPcap } from '../ai-agents/speech-pcap.js';
import { fixture, sipp } from '../../telephony/sip/sipp.js';
import * as trunk from '../sip-trunks/world.js';
import { lameMp3 } from './mp3-fixture.js';
import { rentedNumber, sellerCall } from './rented.js';

// Money (numbers' platform fee 10 %, inbound minutes billed 60/60): inbound rate 0.012000/min, so a
// voicemail call of 1–60 s costs the renter 0.012000 and the seller earns 0.010800. A target or a
// forward route that rang and was cancelled costs nothing (0.000000 on its CDR).

interface CdrRow {
  direction: string;
  routeId: string;
  status: string;
  buyerCost: string | null;
  sellerCredit: string | null;
  toNumber: string;
}

const cdrsOf = (w: trunk.World, callId: string) =>
  w.d.sql<CdrRow[]>`
    select direction, route_id, status, buyer_cost::text, seller_credit::text, to_number
    from cdrs where call_group_id = ${callId} order by created_at, id`;
const endedCall = (w: trunk.World, seen: readonly string[]) =>
  trunk.eventually(async () => {
    const [c] = await w.d.sql<{ id: string; status: string; cost: string; billableSeconds: number }[]>`
      select id, status, cost::text, billable_seconds from calls
      where account_id = ${w.operator.accountId} and ended_at is not null and id <> all(${seen as string[]}::uuid[])
      order by id desc limit 1`;
    return c;
  }, 20_000);
const balance = async (w: trunk.World, id: string) =>
  new Decimal((await w.d.modules.services.ledger.balanceOf(id)).balance);
const payable = async (w: trunk.World, id: string) =>
  new Decimal((await w.d.modules.services.ledger.balanceOf(id)).payable);

/** A short MP3 (one second of silence) made by Debian's `lame`: the greeting upload's real input. */
const silenceMp3 = () => lameMp3({ seconds: 1, hz: 0, title: 'greeting' });

t.test(
  'ring-no-answer: a target that rings out is cancelled and voicemail takes the call (sip and forward numbers)',
  { skip: available && existsSync('/usr/bin/lame') ? false : 'sipp, its pcaps, espeak-ng or lame not installed' },
  async (t) => {
    const base = 44000 + (process.pid % 300) * 20;
    const w = await trunk.createWorld(t, { rtp: { port_min: base, port_max: base + 19, bind_address: '127.0.0.1' } });
    const did = await rentedNumber(w, t, { first: 5557001, inboundRate: '0.012000' });
    const seen: string[] = [];
    const speech = speechPcap(t, 'Hello, this is Alice. Please call me back about the invoice for March.', 4000);
    const leaveMessage = async (tt: trunk.Tt, what: string) => {
      const kept = new Promise<string>((resolve) =>
        w.d.modules.services.numberVoice.answering.events.once('voicemail', resolve),
      );
      const run = await sellerCall(
        tt,
        w,
        did.digits,
        trunk.uacScenario('uac-tail-speak-bye-in.xml', { PAUSE_MS: '500', PCAP: speech.path }, false),
      );
      await trunk.expectExit(tt, run, what);
      const voicemailId = await kept;
      const call = await endedCall(w, seen);
      seen.push(call.id);
      return { voicemailId, call };
    };

    const range = await w.api('PUT', `/dids/${did.id}/routing`, w.operator.token, {
      pointMode: 'sip',
      pointsTo: '127.0.0.1:5099',
      ringTimeoutSeconds: 2,
    });
    t.equal(range.status, 400, 'a ring timeout under 5 s is refused');
    t.match(range.body.error, { code: 'VALIDATION_ERROR' });

    const vm = await w.api('PUT', `/dids/${did.id}/voicemail`, w.operator.token, {
      mode: 'fallback',
      greetingText: 'Leave a message.',
      maxSeconds: 30,
      silenceSeconds: 2,
    });
    t.equal(vm.status, 200, vm.text);

    await t.test(
      'a sip target that rings and never answers: CANCEL after the ring timeout, then voicemail',
      async (t) => {
        const ringing = await sipp(t, fixture('uas-ring-cancel.xml'), []);
        const point = await w.api('PUT', `/dids/${did.id}/routing`, w.operator.token, {
          pointMode: 'sip',
          pointsTo: `127.0.0.1:${ringing.port}`,
          ringTimeoutSeconds: 5,
        });
        t.equal(point.status, 200, point.text);
        t.equal(point.body.data.ringTimeoutSeconds, 5);
        const shown = await w.api('GET', `/dids/${did.id}`, w.operator.token);
        t.equal(shown.body.data.ringTimeoutSeconds, 5, 'kept on the number');

        const owner0 = await balance(w, w.operator.accountId);
        const seller0 = await payable(w, w.seller.accountId);
        const { voicemailId, call } = await leaveMessage(
          t,
          'the caller heard ringing, then voicemail, and left a message',
        );
        await trunk.expectExit(t, ringing, 'the ringing target got a CANCEL');

        t.match(call, { status: 'completed', cost: '0.012000', billableSeconds: 60 });
        const cdrs = await cdrsOf(w, call.id);
        t.equal(cdrs.length, 2, 'one CDR per leg: the target that rang out, then voicemail');
        t.match(cdrs[0], { direction: 'inbound', routeId: did.id, status: 'no-answer', buyerCost: '0.000000' });
        t.match(cdrs[1], {
          direction: 'inbound',
          routeId: did.id,
          status: 'completed',
          buyerCost: '0.012000',
          sellerCredit: '0.010800',
        });
        const owner1 = await balance(w, w.operator.accountId);
        t.equal(owner0.minus(owner1).toFixed(6), '0.012000', 'the renter paid one inbound minute');
        const seller1 = await payable(w, w.seller.accountId);
        t.equal(seller1.minus(seller0).toFixed(6), '0.010800', 'the seller earned it less 10 %');
        const [ev] = await w.d.sql<{ data: Record<string, unknown> }[]>`
        select data from events where account_id = ${w.operator.accountId} and event = 'number.call.received'
          and data->>'callId' = ${call.id}`;
        t.match(ev?.data, { handledBy: 'voicemail', status: 'completed', cost: '0.012000' });

        // Deleting: the row and the recording go together; a second delete finds nothing.
        const [row] = await w.d.sql<{ file: string }[]>`select file from did_voicemails where id = ${voicemailId}`;
        const path = join(w.d.config.paths.state, row!.file);
        t.ok(existsSync(path), 'the recording is on disk');
        const stranger = await w.signUp();
        const theirs = await w.api('DELETE', `/dids/${did.id}/voicemails/${voicemailId}`, stranger.token);
        t.equal(theirs.status, 404, 'another account cannot delete it');
        const del = await w.api('DELETE', `/dids/${did.id}/voicemails/${voicemailId}`, w.operator.token);
        t.equal(del.status, 200, del.text);
        t.same(del.body.data, { id: voicemailId, deleted: true });
        t.notOk(existsSync(path), 'the recording is removed');
        const [gone] = await w.d.sql`select id from did_voicemails where id = ${voicemailId}`;
        t.notOk(gone, 'the row is removed');
        const again = await w.api('DELETE', `/dids/${did.id}/voicemails/${voicemailId}`, w.operator.token);
        t.equal(again.status, 404);
        const list = await w.api('GET', `/dids/${did.id}/voicemails`, w.operator.token);
        t.same(list.body.data, [], 'nothing listed');
      },
    );

    await t.test('a deletion a stop interrupted (row hidden, file kept) is finished at start', async (t) => {
      const ringing = await sipp(t, fixture('uas-ring-cancel.xml'), []);
      await w.api('PUT', `/dids/${did.id}/routing`, w.operator.token, {
        pointMode: 'sip',
        pointsTo: `127.0.0.1:${ringing.port}`,
      });
      const { voicemailId } = await leaveMessage(t, 'a second message');
      await trunk.expectExit(t, ringing, 'the ringing target got a CANCEL');
      const [row] = await w.d.sql<{ file: string }[]>`
        update did_voicemails set deleted_at = now() where id = ${voicemailId} returning file`;
      const path = join(w.d.config.paths.state, row!.file);
      t.ok(existsSync(path));
      const list = await w.api('GET', `/dids/${did.id}/voicemails`, w.operator.token);
      t.same(list.body.data, [], 'a message being deleted is not listed');
      const audio = await w.api('GET', `/dids/${did.id}/voicemails/${voicemailId}/audio`, w.operator.token);
      t.equal(audio.status, 404, 'nor served');
      t.equal(await w.d.modules.services.numberVoice.voicemail.finishDeletions(), 1);
      t.notOk(existsSync(path), 'the recording is removed');
      const [gone] = await w.d.sql`select id from did_voicemails where id = ${voicemailId}`;
      t.notOk(gone, 'then the row');
    });

    await t.test(
      'greeting upload: MP3 checked from its bytes, size-limited, stored under the state directory',
      async (t) => {
        const put = (body: Buffer, type = 'audio/mpeg') =>
          w.d.app.inject({
            method: 'PUT',
            url: `/api/v1/dids/${did.id}/voicemail/greeting`,
            headers: { authorization: `Bearer ${w.operator.token}`, 'content-type': type },
            payload: body,
          });
        const wav = Buffer.concat([Buffer.from('RIFF\x24\x00\x00\x00WAVEfmt ', 'latin1'), Buffer.alloc(64)]);
        const notMp3 = await put(wav);
        t.equal(notMp3.statusCode, 400, 'a WAV sent as audio/mpeg is refused');
        t.match(notMp3.json().error, { code: 'VALIDATION_ERROR', details: [{ path: 'body' }] });
        const id3Only = await put(
          Buffer.concat([Buffer.from('ID3\x04\x00\x00\x00\x00\x00\x00', 'latin1'), Buffer.alloc(32)]),
        );
        t.equal(id3Only.statusCode, 400, 'an ID3 tag with no audio after it is refused');
        const huge = await put(Buffer.alloc(2 * 1024 * 1024 + 1, 0xff));
        t.equal(huge.statusCode, 413, 'past 2 MB');
        t.match(huge.json().error, { code: 'PAYLOAD_TOO_LARGE', message: /too large/ });
        const mp3 = silenceMp3();
        // Over the API's usual 1 MB body limit, under the greeting's 2 MB: taken.
        const big = Buffer.concat(Array.from({ length: Math.ceil((1536 * 1024) / mp3.length) }, () => mp3));
        const bigPut = await put(big);
        t.equal(bigPut.statusCode, 200, `a ${big.length}-byte greeting is taken`);
        const ok = await put(mp3);
        t.equal(ok.statusCode, 200, ok.body);
        t.equal(ok.json().data.greetingUploaded, true);
        const [row] = await w.d.sql<{ file: string }[]>`
        select voicemail_greeting_file as file from dids where id = ${did.id}`;
        const first = join(w.d.config.paths.state, row!.file);
        t.same(readFileSync(first), mp3, 'the bytes are stored as sent');
        const replaced = await put(mp3);
        t.equal(replaced.statusCode, 200);
        t.notOk(existsSync(first), 'a replaced greeting’s file is removed');
        const stranger = await w.signUp();
        const theirs = await w.d.app.inject({
          method: 'PUT',
          url: `/api/v1/dids/${did.id}/voicemail/greeting`,
          headers: { authorization: `Bearer ${stranger.token}`, 'content-type': 'audio/mpeg' },
          payload: mp3,
        });
        t.equal(theirs.statusCode, 404, 'only the renter uploads');
      },
    );

    await t.test('a forwarded call whose route rings out goes to voicemail, billed as the inbound leg', async (t) => {
      // The uploaded greeting removed: the spoken one plays again.
      const removed = await w.api('DELETE', `/dids/${did.id}/voicemail/greeting`, w.operator.token);
      t.equal(removed.status, 200, removed.text);
      t.equal(removed.body.data.greetingUploaded, false);
      const [g] = await w.d.sql<{ file: string | null }[]>`
          select voicemail_greeting_file as file from dids where id = ${did.id}`;
      t.equal(g!.file, null);
      const ringing = await sipp(t, fixture('uas-ring-cancel.xml'), []);
      const route = await w.route({ port: ringing.port, prefix: '4411', rate: '0.013700' });
      const point = await w.api('PUT', `/dids/${did.id}/routing`, w.operator.token, {
        pointMode: 'forward',
        pointsTo: '+441100000777',
        ringTimeoutSeconds: 5,
      });
      t.equal(point.status, 200, point.text);
      const owner0 = await balance(w, w.operator.accountId);
      const seller0 = await payable(w, w.seller.accountId);
      const { voicemailId, call } = await leaveMessage(t, 'the forward rang out, then voicemail took a message');
      await trunk.expectExit(t, ringing, 'the forward route got a CANCEL');
      t.ok(voicemailId);
      t.match(call, { status: 'completed', cost: '0.012000', billableSeconds: 60 });
      const cdrs = await cdrsOf(w, call.id);
      t.equal(cdrs.length, 2, 'the forward attempt and the voicemail leg, no separate inbound leg');
      t.match(cdrs[0], {
        direction: 'outbound',
        routeId: route.routeId,
        status: 'no-answer',
        buyerCost: '0.000000',
        toNumber: '441100000777',
      });
      t.match(cdrs[1], {
        direction: 'inbound',
        routeId: did.id,
        status: 'completed',
        buyerCost: '0.012000',
        sellerCredit: '0.010800',
        toNumber: did.digits,
      });
      const owner1 = await balance(w, w.operator.accountId);
      t.equal(owner0.minus(owner1).toFixed(6), '0.012000', 'the renter paid the inbound minute only');
      const seller1 = await payable(w, w.seller.accountId);
      t.equal(seller1.minus(seller0).toFixed(6), '0.010800', 'the number’s seller earned it; the route nothing');
      const [ev] = await w.d.sql<{ data: Record<string, unknown> }[]>`
        select data from events where account_id = ${w.operator.accountId} and event = 'number.call.received'
          and data->>'callId' = ${call.id}`;
      t.match(ev?.data, { handledBy: 'voicemail', status: 'completed', cost: '0.012000' });
    });

    await t.test('usage in analytics and the CSV export, from the CDRs of the three calls', async (t) => {
      const a = await w.api('GET', `/dids/${did.id}/analytics?months=1`, w.operator.token);
      t.equal(a.status, 200, a.text);
      const usage = a.body.data.usage;
      t.match(usage, {
        calls: 3,
        answeredCalls: 3,
        callCost: '0.036000',
        sms: 0,
        smsCost: '0.000000',
        voicemails: 1,
        cost: '0.036000',
      });
      t.ok(usage.callMinutes > 0 && usage.callMinutes <= 3, 'connected minutes counted', usage);
      t.ok(usage.voicemailMinutes > 0, 'the kept message’s length counted');
      t.equal(a.body.data.series.length, 1);
      t.match(a.body.data.series[0], { calls: 3, callCost: '0.036000' });
      const o = await w.api('GET', '/dids/analytics/overview', w.operator.token);
      t.match(o.body.data.usage, { calls: 3, callCost: '0.036000', voicemails: 1 });

      const csv = await w.d.app.inject({
        method: 'GET',
        url: `/api/v1/dids/${did.id}/usage/export?months=2`,
        headers: { authorization: `Bearer ${w.operator.token}` },
      });
      t.equal(csv.statusCode, 200, csv.body);
      t.match(csv.headers['content-type'], /^text\/csv/);
      const lines = csv.body.trim().split('\n');
      t.equal(
        lines[0],
        'period,number,calls,answered_calls,call_minutes,call_cost,sms_received,sms_sent,sms_cost,voicemails,voicemail_minutes,total_cost',
      );
      t.equal(lines.length, 3, 'a header and one row per month (an empty month included)');
      const last = lines[2]!.split(',');
      t.equal(last[1], did.digits);
      t.same([last[2], last[3], last[5], last[9], last[11]], ['3', '3', '0.036000', '1', '0.036000']);
      t.same(lines[1]!.split(',').slice(2), [
        '0',
        '0',
        '0.00',
        '0.000000',
        '0',
        '0',
        '0.000000',
        '0',
        '0.00',
        '0.000000',
      ]);
      const stranger = await w.signUp();
      const theirs = await w.api('GET', `/dids/${did.id}/usage/export`, stranger.token);
      t.equal(theirs.status, 404, 'only the renter exports');
    });

    await t.test(
      'an uploaded greeting on a forwarded call whose route rings out: greeting, beep, the message kept',
      async (t) => {
        const up = await w.d.app.inject({
          method: 'PUT',
          url: `/api/v1/dids/${did.id}/voicemail/greeting`,
          headers: { authorization: `Bearer ${w.operator.token}`, 'content-type': 'audio/mpeg' },
          payload: silenceMp3(),
        });
        t.equal(up.statusCode, 200, up.body);
        const ringing = await sipp(t, fixture('uas-ring-cancel.xml'), []);
        await w.route({ port: ringing.port, prefix: '4412', rate: '0.013700' });
        const point = await w.api('PUT', `/dids/${did.id}/routing`, w.operator.token, {
          pointMode: 'forward',
          pointsTo: '+441200000778',
          ringTimeoutSeconds: 5,
        });
        t.equal(point.status, 200, point.text);
        const { voicemailId, call } = await leaveMessage(t, 'the forward rang out, then voicemail took a message');
        await trunk.expectExit(t, ringing, 'the forward route got a CANCEL');
        t.match(call, { status: 'completed', cost: '0.012000' });
        const [kept] = await w.d.sql<{ durationMs: number; callId: string }[]>`
          select duration_ms, call_id from did_voicemails where id = ${voicemailId}`;
        t.equal(kept?.callId, call.id, "the message's call is the forwarded call");
        // The caller speaks from 0.5 s after the answer for about 4.5 s; the 1 s greeting and the beep
        // play over its start. A message that heard no speech ends after the 2 s of silence: one
        // longer holds the caller's words (the greeting was decoded while the caller still heard ringing).
        t.ok(kept && kept.durationMs >= 3000, "the caller's words are in the message", {
          durationMs: kept?.durationMs,
        });
      },
    );

    await checkInvariants(t, w.d.sql);
  },
);
