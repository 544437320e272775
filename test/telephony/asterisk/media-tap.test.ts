import type { AriEvent } from 'ari-client';
import pino from 'pino';
import t from 'tap';
import { createAriHost } from '../../../src/telephony/asterisk/ari-host.js';
import { createChannelBook, type ChannelOwner } from '../../../src/telephony/asterisk/channels.js';
import { openMediaTap, type MediaTap } from '../../../src/telephony/asterisk/media-tap.js';
import { asteriskMetrics } from '../../../src/telephony/asterisk/metrics.js';
import { createMediaPool } from '../../../src/telephony/media/pool.js';
import { asteriskBin, NO_ASTERISK, startAsterisk } from '../../helpers/asterisk.js';
import { createRtpPeer } from '../media/helpers/rtp-peer.js';

/**
 * The tap that carries an AI agent's call audio on the Asterisk engine, opened call after call
 * against a private Asterisk. Asterisk answers `externalMedia` before the new channel is in Stasis
 * (its own thread dials it, then starts the application), and a bridge refuses a channel not yet
 * there; a tap that bridges on the answer alone loses that race now and then, more often on a busy
 * machine, and the call then ends with no audio. Each round checks the tap came up and that audio
 * crossed it both ways. The caller is itself an externalMedia channel whose RTP ends at this test's
 * socket (the phone), so nothing but Asterisk and the daemon's RTP worker stands between the two.
 */

const ROUNDS = 15;
const PHONE_MARK = 0xfe;
const AGENT_MARK = 0x7e;

t.test(
  'the tap bridges once its channel is in Stasis, and carries audio both ways',
  { skip: asteriskBin ? false : NO_ASTERISK },
  async (t) => {
    const log = pino({ level: process.env['SVC_TEST_LOG'] ?? 'silent' });
    const ast = await startAsterisk({ exchangeSip: { host: '127.0.0.1', port: 9 }, rtpPorts: 40 });
    t.teardown(() => ast.stop());
    const metrics = asteriskMetrics();
    const host = createAriHost({
      url: ast.ariUrl,
      username: ast.username,
      password: ast.password,
      app: ast.app,
      log,
      metrics,
      requestTimeoutMs: 2000,
      healthIntervalMs: 500,
      healthFailures: 2,
      reconnectMaxMs: 1000,
    });
    const book = createChannelBook([host], log, metrics);
    host.start();
    t.teardown(async () => {
      book.close();
      await host.close();
    });
    await book.waitForHost(10_000);
    t.ok(host.eligible, 'ARI is up');
    const base = 52000 + (process.pid % 300) * 10;
    const pool = createMediaPool({ workers: 1, portMin: base, portMax: base + 9, bindAddress: '127.0.0.1', log });
    t.teardown(() => pool.close());

    for (let round = 0; round < ROUNDS; round++) {
      const phone = await createRtpPeer();
      const callerId = `${host.app}-tap-test-${process.pid}-${round}`;
      let tap: MediaTap | null = null;
      let callerInStasis: () => void = () => undefined;
      const callerReady = new Promise<void>((resolve) => (callerInStasis = resolve));
      const owner: ChannelOwner = {
        host,
        channelIds: () => (tap ? [callerId, tap.channelId] : [callerId]),
        onEvent(event: AriEvent) {
          if (tap && event.channel?.id === tap.channelId) tap.onEvent(event);
          else if (event.type === 'StasisStart') callerInStasis();
        },
        abandon: () => undefined,
        resync: () => undefined,
      };
      book.own(callerId, owner);
      const caller = await host.request('media', (c) =>
        c.channels.externalMedia({
          app: host.app,
          channelId: callerId,
          external_host: `127.0.0.1:${phone.port}`,
          format: 'ulaw',
        }),
      );
      const callerPort = Number(caller.channelvars?.['UNICASTRTP_LOCAL_PORT']);
      await callerReady;

      tap = openMediaTap({ host, book, pool, channelId: callerId, owner, stasisTimeoutMs: 5000, log });
      const session = await tap.ready.catch((err: unknown) => err as Error);
      if (session instanceof Error) {
        t.fail(`round ${round}: the tap did not come up: ${session.message}`);
      } else {
        // The phone talks; the tap's session must hear it.
        let heard = 0;
        const off = session.onAudio((frame) => {
          if (frame.length === 160 && frame.every((b) => b === PHONE_MARK)) heard++;
        });
        let seq = 0;
        const talking = setInterval(() => {
          phone.send(callerPort, {
            payloadType: 0,
            marker: seq === 0,
            sequence: seq,
            timestamp: seq * 160,
            ssrc: 0x51,
            payload: new Uint8Array(160).fill(PHONE_MARK),
          });
          seq++;
        }, 20);
        // The agent speaks; the phone must hear it.
        void session.play(new Uint8Array(160 * 25).fill(AGENT_MARK));
        const phoneHeard = await phone
          .waitFor((ps) => ps.filter((p) => p.payload.every((b) => b === AGENT_MARK)).length >= 10, 10_000)
          .then(
            () => true,
            () => false,
          );
        const deadline = Date.now() + 10_000;
        while (heard < 10 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
        clearInterval(talking);
        off();
        t.ok(phoneHeard, `round ${round}: the agent's audio reached the phone through Asterisk`);
        t.ok(heard >= 10, `round ${round}: the phone's audio reached the agent through Asterisk`, { frames: heard });
      }
      await tap.close();
      await host.request('hangup', (c) => c.channels.hangup({ channelId: callerId })).catch(() => undefined);
      book.release(owner);
      await phone.close();
    }
  },
);
