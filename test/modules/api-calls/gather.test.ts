import t from 'tap';
import { answering, available, exitOk, expectedCost, keysAfter } from './peers.js';
import { ENGINES } from './engines.js';
import { createServiceWorld } from './service-world.js';

/**
 * Gathers against sipp playing RFC 2833 keys from the pcaps Debian ships with sip-tester: without a
 * finish key, ended by the inter-key timeout, re-prompted over several tries, and no input at all.
 * Key times are chosen with at least a second to spare on both sides of the gather windows.
 */
// The engines' cases share nothing (each its own daemon, database, RTP window and peers) and mostly
// wait out gather windows: side by side, the file takes about one engine's time instead of the sum.
t.jobs = ENGINES.length;
for (const [i, engine] of ENGINES.entries()) {
  t.test(
    `gathers over RFC 2833 from a real callee (${engine.name} engine)`,
    { skip: available ? engine.skip : 'sipp, its pcaps or espeak-ng not installed' },
    async (t) => {
      const sw = await createServiceWorld(t, 44000 + (process.pid % 200) * 40 + i * 20, {}, engine.name);
      const { w, service, caller } = sw;

      t.test('no finish key: ends at the digit count, and # is an ordinary key', async (t) => {
        const peer = await answering(t, '448500000001', keysAfter(1500, ['1', 'pound', '2', '3']));
        await w.route({ port: peer.port, prefix: '4485', rate: '0.010000', increment: '1/1' });
        const before = await sw.balance();
        const r = await service.place(caller, {
          to: '+448500000001',
          from: '+15550001111',
          actions: [{ gather: { digits: 3, timeout: 10, finishOnKey: '' } }, { hangup: true }],
        });
        await exitOk(t, peer, 'sipp sent its keys and got our BYE');
        const rec = await sw.ended(r.data['callId'] as string);
        t.same(
          rec['gathered'],
          [{ index: 0, digits: '1#2', status: 'received' }],
          'the third key ends the gather; the fourth is not kept',
        );
        t.ok((rec['durationSeconds'] as number) < 8, 'ended by the count, long before the 10 s timeout');
        t.equal(rec['cost'], expectedCost(rec['billableSeconds'] as number, '0.010000'));
        await sw.settled(t, before, rec);
      });

      t.test('timeout: a gather short of its digits ends after `timeout` s without a key', async (t) => {
        const peer = await answering(t, '448600000001', keysAfter(1500, ['7', '8']));
        await w.route({ port: peer.port, prefix: '4486', rate: '0.010000', increment: '1/1' });
        const before = await sw.balance();
        const r = await service.place(caller, {
          to: '+448600000001',
          from: '+15550001111',
          async: true,
          actions: [{ gather: { digits: 5, timeout: 2, finishOnKey: '#' } }, { say: 'Thank you' }],
        });
        const id = r.data['callId'] as string;
        const rec = await sw.ended(id);
        await exitOk(t, peer, 'sipp got our BYE');
        t.same(
          rec['gathered'],
          [{ index: 0, digits: '78', status: 'received' }],
          'what came before the timeout is kept',
        );
        t.ok((rec['durationSeconds'] as number) >= 3, 'keys at 1.5 s, then 2 s of waiting, then the prompt');
        const ev = await sw.events(id);
        t.same(
          ev.map((e) => e.event),
          ['call.ringing', 'call.answered', 'call.gathered', 'call.completed'],
        );
        t.match(ev[2]!.data, { index: 0, digits: '78', status: 'received' });
        await sw.settled(t, before, rec);
      });

      t.test('tries: no key in the first try re-prompts; a key in the second is received', async (t) => {
        // First try: prompt (well under a second) and 3 s; the key at 5 s falls in the second.
        const peer = await answering(t, '448700000001', keysAfter(5000, ['9']));
        await w.route({ port: peer.port, prefix: '4487', rate: '0.010000', increment: '1/1' });
        const before = await sw.balance();
        const r = await service.place(caller, {
          to: '+448700000001',
          from: '+15550001111',
          actions: [{ gather: { digits: 1, timeout: 3, tries: 3, say: 'Hi' } }],
        });
        await exitOk(t, peer, 'sipp sent its key and got our BYE');
        const rec = await sw.ended(r.data['callId'] as string);
        t.same(rec['gathered'], [{ index: 0, digits: '9', status: 'received' }]);
        t.ok((rec['durationSeconds'] as number) >= 5, 'the first try ran out before the key came');
        t.ok((rec['durationSeconds'] as number) < 9, 'no third try after the key');
        await sw.settled(t, before, rec);
      });

      t.test('tries exhausted: no_input after the last try, and the next gather still runs', async (t) => {
        // Gather 0: two tries of 1 s (ends at about 2 s); gather 1 waits 3 s more: the key at 3.5 s is its.
        const peer = await answering(t, '448800000001', keysAfter(3500, ['5']));
        await w.route({ port: peer.port, prefix: '4488', rate: '0.010000', increment: '1/1' });
        const before = await sw.balance();
        const r = await service.place(caller, {
          to: '+448800000001',
          from: '+15550001111',
          async: true,
          actions: [
            { gather: { digits: 1, timeout: 1, tries: 2 } },
            { gather: { digits: 1, timeout: 3, finishOnKey: '' } },
          ],
        });
        const id = r.data['callId'] as string;
        const rec = await sw.ended(id);
        await exitOk(t, peer, 'sipp got our BYE');
        t.same(rec['gathered'], [
          { index: 0, digits: null, status: 'no_input' },
          { index: 1, digits: '5', status: 'received' },
        ]);
        const gathered = (await sw.events(id)).filter((e) => e.event === 'call.gathered').map((e) => e.data);
        t.match(
          gathered,
          [
            { index: 0, digits: null, status: 'no_input' },
            { index: 1, digits: '5', status: 'received' },
          ],
          'one call.gathered each',
        );
        await sw.settled(t, before, rec);
      });

      t.test('no key at all: a single try ends with no_input after its timeout, then the call ends', async (t) => {
        const peer = await answering(t, '448900000001');
        await w.route({ port: peer.port, prefix: '4489', rate: '0.010000', increment: '1/1' });
        const before = await sw.balance();
        const r = await service.place(caller, {
          to: '+448900000001',
          from: '+15550001111',
          actions: [{ gather: { digits: 4, timeout: 2, finishOnKey: '#' } }],
        });
        await exitOk(t, peer, 'sipp got our BYE');
        const rec = await sw.ended(r.data['callId'] as string);
        t.same(rec['gathered'], [{ index: 0, digits: null, status: 'no_input' }]);
        t.ok((rec['durationSeconds'] as number) >= 2, 'waited out the timeout');
        t.equal(rec['hangupReason'], 'The call ended when its actions finished');
        await sw.settled(t, before, rec);
      });
    },
  );
}
