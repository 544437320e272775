import { Decimal } from 'decimal.js';
import t from 'tap';
import { createWorld, eventually } from '../sip-trunks/world.js';
import { available, callee, exitOk, expectedCost } from '../api-calls/peers.js';
import { MANY } from '../../helpers/sipp-peers.js';
import { sippMediaPort, sipp } from '../../telephony/sip/sipp.js';

/**
 * Verify by voice through the whole daemon: a live key, POST /verify/start over HTTPS, the daemon's
 * SIP stack dialling a sipp supplier that answers, the media plane reading the code in German, the
 * call settled as any API call (no verification fee), and the verification checked afterwards.
 */
t.test(
  'a voice verification places a real call, billed as the call',
  { skip: available ? false : 'sipp or espeak-ng not installed' },
  async (t) => {
    const base = 44000 + (process.pid % 300) * 20;
    const w = await createWorld(t, { rtp: { port_min: base, port_max: base + 19, bind_address: '127.0.0.1' } });
    const { d, operator } = w;
    // The code read twice in German is some 13 s of audio: the callee lives longer than the shared
    // answering peer's 20 s, which a loaded machine's slower start-up and call set-up overran.
    const peer = await sipp(t, callee('447300000009'), ['-mp', String(await sippMediaPort())], {
      timeout: '90s',
      calls: MANY,
    });
    const { routeId } = await w.route({ port: peer.port, prefix: '4473', rate: '0.012000', increment: '1/1' });
    const { secret } = await d.modules.services.keys.create(operator.accountId, {
      mode: 'live',
      scopes: ['verify:write'],
    });
    const before = await d.modules.services.ledger.balanceOf(operator.accountId);

    const res = await d.https('POST', '/verify/start', {
      token: secret,
      headers: { 'x-idempotency-key': `verify-voice-${process.pid}` },
      body: { to: '+447300000009', channel: 'voice', language: 'de', brand: 'Acme', codeLength: 4 },
    });
    t.equal(res.status, 200, res.text);
    const v = res.json.data;
    t.match(v, { channel: 'voice', status: 'pending', maxAttempts: 5, codeLength: 4 });
    t.ok(v.callId, 'the call that reads the code');
    t.notOk('testCode' in v);

    const call = await eventually(async () => {
      const r = await d.https('GET', `/comms/calls/${v.callId}`, { token: operator.token });
      return r.status === 200 && r.json.data.endedAt ? r.json.data : null;
    }, 60_000);
    t.equal(call.status, 'completed');
    t.equal(call.routeId, routeId);
    t.ok(call.billableSeconds >= 3, `the code was read twice (${call.billableSeconds} s)`);
    t.equal(call.cost, expectedCost(call.billableSeconds, '0.012000'), 'billed per second at rate plus fee');
    await exitOk(t, peer, 'sipp answered and received our BYE');
    const after = await d.modules.services.ledger.balanceOf(operator.accountId);
    t.equal(
      new Decimal(before.balance).minus(after.balance).toFixed(6),
      call.cost,
      'the balance moved by exactly the call: no verification fee',
    );
    t.equal(after.held, before.held, 'no hold left');

    const got = await d.https('GET', `/verify/${v.verificationId}`, { token: secret });
    t.match(got.json.data, { status: 'pending', callId: v.callId, language: 'de', attempts: 0 });
    const [row] = await d.sql<
      { codeHash: string }[]
    >`select code_hash from verifications where id = ${v.verificationId}`;
    t.match(row!.codeHash, /^[0-9a-f]{64}$/, 'a hash, not the code');
    const check = await d.https('POST', '/verify/check', {
      token: secret,
      body: { verificationId: v.verificationId, code: '00000' },
    });
    t.same(check.json.data, { status: 'denied', attemptsRemaining: 4 }, 'a wrong code (of the wrong length) is denied');
    const [sum] = await d.sql<{ s: string }[]>`select coalesce(sum(amount), 0)::text as s from entries`;
    t.equal(Number(sum!.s), 0, 'the ledger balances');
  },
);
