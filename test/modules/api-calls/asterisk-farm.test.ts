import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { register } from 'prom-client';
import t from 'tap';
import { asteriskBin, NO_ASTERISK, startAsterisk, type PrivateAsterisk } from '../../helpers/asterisk.js';
import { freePort } from '../../telephony/sip/sipp.js';
import { eventually } from '../sip-trunks/world.js';
import { asteriskSettings } from './engines.js';
import { answering, answeringMany, available, exitOk, expectedCost } from './peers.js';
import { createServiceWorld } from './service-world.js';

/**
 * An Asterisk farm of two: new calls spread over the healthy hosts; a dropped ARI websocket
 * reconnects without losing live calls; a host that stops answering ARI is taken out and its calls
 * end (cause NETWORK_OUT_OF_ORDER), billed to that moment; a channel in our application that no
 * call owns is hung up. Host A's ARI is reached through a TCP proxy the test can cut.
 */

/** A TCP proxy whose open connections `cut()` drops (the listener stays, so reconnects succeed). */
async function tcpProxy(targetPort: number): Promise<{ url: string; cut(): void; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((inbound) => {
    const outbound = net.connect(targetPort, '127.0.0.1');
    for (const s of [inbound, outbound]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    inbound.pipe(outbound).pipe(inbound);
    inbound.on('close', () => outbound.destroy());
    outbound.on('close', () => inbound.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    cut() {
      for (const s of sockets) s.destroy();
    },
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

async function channels(a: PrivateAsterisk): Promise<{ id: string; state: string }[]> {
  const res = await fetch(`${a.ariUrl}/ari/channels`, {
    headers: { authorization: `Basic ${Buffer.from(`${a.username}:${a.password}`).toString('base64')}` },
  });
  return (await res.json()) as { id: string; state: string }[];
}

async function metric(name: string, host: string): Promise<number> {
  const m = register.getSingleMetric(name);
  if (!m) return 0;
  const values = (await m.get()).values;
  return values.find((v) => v.labels['host'] === host)?.value ?? 0;
}

t.test(
  'an Asterisk farm of two hosts',
  { skip: !available ? 'sipp, its pcaps or espeak-ng not installed' : asteriskBin ? false : NO_ASTERISK },
  async (t) => {
    const sipPort = await freePort();
    const exchangeSip = { host: '127.0.0.1', port: sipPort };
    const password = randomBytes(12).toString('hex');
    const a = await startAsterisk({ exchangeSip, password, rtpStart: 20000 + (process.pid % 300) * 60 });
    t.teardown(() => a.stop());
    const b = await startAsterisk({ exchangeSip, password, rtpStart: 20030 + (process.pid % 300) * 60 });
    t.teardown(() => b.stop());
    const proxy = await tcpProxy(Number(new URL(a.ariUrl).port));
    t.teardown(() => proxy.close());
    const prompts = mkdtempSync(join(tmpdir(), 'svc-farm-prompts-'));
    t.teardown(() => rmSync(prompts, { recursive: true, force: true }));
    const hostA = new URL(proxy.url).host;
    const hostB = new URL(b.ariUrl).host;
    const sw = await createServiceWorld(
      t,
      46000 + (process.pid % 200) * 20,
      {},
      {
        asterisk: asteriskSettings(sipPort, prompts, [{ ...a, ariUrl: proxy.url }, b]),
      },
    );
    const { w, service, caller } = sw;
    await eventually(
      async () =>
        (await metric('svc_asterisk_host_up', hostA)) === 1 && (await metric('svc_asterisk_host_up', hostB)) === 1
          ? true
          : null,
      15_000,
    );

    t.test('calls spread over both hosts; a dropped websocket loses neither call', async (t) => {
      const peer = await answeringMany(t, '448100000001');
      await w.route({ port: peer.port, prefix: '4481', rate: '0.010000', increment: '1/1' });
      const before = await sw.balance();
      const place = () =>
        service.place(caller, {
          to: '+448100000001',
          from: '+15550001111',
          async: true,
          actions: [{ say: 'One moment.' }, { pause: 4 }],
        });
      const [r1, r2] = await Promise.all([place(), place()]);
      const both = await eventually(async () => {
        const [ca, cb] = await Promise.all([channels(a), channels(b)]);
        return ca.length === 1 && cb.length === 1 && ca[0]!.state === 'Up' && cb[0]!.state === 'Up' ? true : null;
      }, 15_000);
      t.ok(both, 'one live channel on each host');
      t.equal(await metric('svc_asterisk_calls', hostA), 1, 'calls per host: A');
      t.equal(await metric('svc_asterisk_calls', hostB), 1, 'calls per host: B');
      const reconnects = await metric('svc_asterisk_ws_reconnects_total', hostA);
      proxy.cut();
      for (const r of [r1, r2]) {
        const rec = await sw.ended(r.data['callId'] as string);
        t.equal(rec['status'], 'completed');
        t.equal(rec['hangupCause'], 'NORMAL_CLEARING', 'ended by its actions, not by the websocket drop');
        t.ok((rec['durationSeconds'] as number) >= 4, 'the whole pause was kept');
        t.equal(rec['cost'], expectedCost(rec['billableSeconds'] as number, '0.010000'));
      }
      t.ok((await metric('svc_asterisk_ws_reconnects_total', hostA)) > reconnects, 'the reconnect was counted');
      await eventually(async () => ((await metric('svc_asterisk_host_up', hostA)) === 1 ? true : null), 15_000);
      const after = await sw.balance();
      t.equal(after.held, before.held, 'no hold left');
    });

    t.test('a channel in our application that no call owns is hung up', async (t) => {
      const auth = `Basic ${Buffer.from(`${b.username}:${b.password}`).toString('base64')}`;
      const res = await fetch(
        `${b.ariUrl}/ari/channels?endpoint=${encodeURIComponent('Local/5550100@from-svc-exchange')}&app=${b.app}` +
          `&channelId=${b.app}-leftover`,
        { method: 'POST', headers: { authorization: auth } },
      );
      t.equal(res.status, 200, 'a channel placed behind the engine’s back');
      const gone = await eventually(async () => ((await channels(b)).length === 0 ? true : null), 10_000);
      t.ok(gone, 'the engine hung it up');
    });

    t.test(
      'a host that stops answering: its call ends, billed to that moment; the next call uses the other',
      async (t) => {
        const peer = await answering(t, '448200000001');
        await w.route({ port: peer.port, prefix: '4482', rate: '0.010000', increment: '1/1' });
        const before = await sw.balance();
        const r = await service.place(caller, {
          to: '+448200000001',
          from: '+15550001111',
          async: true,
          actions: [{ pause: 20 }],
        });
        const victim = await eventually(async () => {
          if ((await channels(a)).some((c) => c.state === 'Up')) return a;
          if ((await channels(b)).some((c) => c.state === 'Up')) return b;
          return null;
        }, 15_000);
        await new Promise((r) => setTimeout(r, 1500));
        const killedAt = Date.now();
        victim.kill();
        const rec = await sw.ended(r.data['callId'] as string);
        const endedAt = new Date(rec['endedAt'] as string).getTime();
        t.ok(endedAt - killedAt < 5000, `ended ${endedAt - killedAt} ms after the host died`);
        t.equal(rec['status'], 'completed', 'it was answered: a completed call');
        t.equal(rec['hangupCause'], 'NETWORK_OUT_OF_ORDER');
        t.match(rec['hangupReason'], /media server/);
        t.ok((rec['durationSeconds'] as number) < 10, 'billed to the moment the host was lost, not the 20 s pause');
        t.equal(rec['cost'], expectedCost(rec['billableSeconds'] as number, '0.010000'));
        await exitOk(t, peer, 'the supplier leg got our BYE');
        await sw.settled(t, before, rec);

        const peer2 = await answering(t, '448300000001');
        await w.route({ port: peer2.port, prefix: '4483', rate: '0.010000', increment: '1/1' });
        const r2 = await service.place(caller, { to: '+448300000001', from: '+15550001111', actions: [{ pause: 1 }] });
        await exitOk(t, peer2, 'answered and hung up');
        t.equal(r2.data['status'], 'completed', 'the next call went to the surviving host');
      },
    );
  },
);
