import t from 'tap';
import dgram from 'node:dgram';
import { pino } from 'pino';
import { createMediaPool } from '../../../src/telephony/media/pool.js';
import { isPrivateAddress } from '../../../src/telephony/media/rtp-relay.js';
import { createCallMediaRelay } from '../../../src/telephony/media/call-relay.js';

const log = pino({ level: 'silent' });
const PORT_MIN = 46000 + (process.pid % 50) * 100;
const pool = createMediaPool({ workers: 1, portMin: PORT_MIN, portMax: PORT_MIN + 99, bindAddress: '127.0.0.1', log });
t.teardown(() => pool.close());

interface Peer {
  port: number;
  got: { data: string; port: number }[];
  send(data: string, port: number): void;
  close(): Promise<void>;
}

async function peer(t: { teardown(fn: () => unknown): void }): Promise<Peer> {
  const sock = dgram.createSocket('udp4');
  const got: Peer['got'] = [];
  sock.on('message', (m, r) => got.push({ data: m.toString(), port: r.port }));
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
  const p: Peer = {
    port: sock.address().port,
    got,
    send: (data, port) => sock.send(Buffer.from(data), port, '127.0.0.1'),
    close: () => new Promise<void>((r) => sock.close(() => r())),
  };
  t.teardown(() => p.close());
  return p;
}

const until = async (ok: () => boolean, what: string, ms = 3000) => {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};
const settle = () => new Promise((r) => setTimeout(r, 100));

t.test('packets cross both ways, RTP and RTCP, from the port facing the other side', async (t) => {
  const relay = await pool.openRelay();
  t.teardown(() => relay.close());
  t.ok(
    relay.callerPort % 2 === 0 && relay.calleePort % 2 === 0 && relay.callerPort !== relay.calleePort,
    'two even ports',
  );
  const caller = await peer(t);
  const callee = await peer(t);
  const callerRtcp = await peer(t);
  relay.setRemote('caller', '127.0.0.1', caller.port);
  relay.setRemote('callee', '127.0.0.1', callee.port);
  caller.send('hello callee', relay.callerPort);
  await until(() => callee.got.length === 1, 'caller → callee');
  t.same(callee.got[0], { data: 'hello callee', port: relay.calleePort }, 'arrives from the callee-facing port');
  callee.send('hello caller', relay.calleePort);
  await until(() => caller.got.length === 1, 'callee → caller');
  t.same(caller.got[0], { data: 'hello caller', port: relay.callerPort });
  // RTCP: each side's RTCP source is latched on its first packet; the other side's RTCP goes there.
  const calleeRtcp = await peer(t);
  calleeRtcp.send('rtcp from callee', relay.calleePort + 1);
  await settle();
  callerRtcp.send('rtcp from caller', relay.callerPort + 1);
  await until(() => calleeRtcp.got.length === 1, 'RTCP caller → callee');
  t.same(
    calleeRtcp.got[0],
    { data: 'rtcp from caller', port: relay.calleePort + 1 },
    'from the callee-facing RTCP port',
  );
  t.equal(callee.got.length, 1, 'RTCP never reaches the RTP port');
  const stats = await pool.stats();
  t.ok((stats[0]?.packetsRelayed ?? 0) >= 2);
  t.equal(stats[0]?.relays, 1);
});

t.test('latching: the first source holds the side; a packet from elsewhere is dropped', async (t) => {
  const relay = await pool.openRelay();
  t.teardown(() => relay.close());
  const caller = await peer(t);
  const intruder = await peer(t);
  const callee = await peer(t);
  relay.setRemote('caller', '127.0.0.1', 9); // the SDP names another port: NAT rewrote it
  relay.setRemote('callee', '127.0.0.1', callee.port);
  caller.send('first', relay.callerPort);
  await until(() => callee.got.length === 1, 'first packet relayed');
  intruder.send('injected', relay.callerPort);
  await settle();
  t.same(
    callee.got.map((g) => g.data),
    ['first'],
    'the intruder is not relayed',
  );
  callee.send('back', relay.calleePort);
  await until(() => caller.got.length === 1, 'answer goes to the latched port, not the SDP port');
  t.equal(intruder.got.length, 0);
  // The same SDP again (a refresh) keeps the latch; a new one (re-INVITE) starts latching again.
  relay.setRemote('caller', '127.0.0.1', 9);
  intruder.send('still not relayed', relay.callerPort);
  await settle();
  t.same(
    callee.got.map((g) => g.data),
    ['first'],
    'a repeated SDP does not reopen the latch',
  );
  relay.setRemote('caller', '127.0.0.1', intruder.port);
  intruder.send('after re-invite', relay.callerPort);
  await until(() => callee.got.length === 2, 're-latched');
  t.equal(callee.got[1]?.data, 'after re-invite');
});

t.test("nothing goes to a side whose SDP is not known yet; an address other than the SDP's is refused", async (t) => {
  const relay = await pool.openRelay();
  t.teardown(() => relay.close());
  const caller = await peer(t);
  const callee = await peer(t);
  relay.setRemote('caller', '127.0.0.1', caller.port);
  caller.send('early', relay.callerPort);
  await settle();
  t.equal(callee.got.length, 0, 'callee unknown: dropped');
  relay.setRemote('callee', '192.0.2.55', callee.port);
  callee.send('from a public address the SDP did not name', relay.calleePort);
  await settle();
  t.equal(caller.got.length, 0, 'refused');
});

t.test('private SDP addresses are callers behind NAT', async (t) => {
  t.ok(isPrivateAddress('10.1.2.3'));
  t.ok(isPrivateAddress('172.16.0.1'));
  t.ok(isPrivateAddress('192.168.1.10'));
  t.ok(isPrivateAddress('100.64.0.1'));
  t.ok(isPrivateAddress('fd00::1'));
  t.notOk(isPrivateAddress('172.32.0.1'));
  t.notOk(isPrivateAddress('198.51.100.7'));
  t.notOk(isPrivateAddress('127.0.0.1'));
  const relay = await pool.openRelay();
  t.teardown(() => relay.close());
  const caller = await peer(t);
  const callee = await peer(t);
  relay.setRemote('caller', '192.168.1.10', 4000);
  relay.setRemote('callee', '127.0.0.1', callee.port);
  caller.send('from behind NAT', relay.callerPort);
  await until(() => callee.got.length === 1, 'latched from any address');
  callee.send('back', relay.calleePort);
  await until(() => caller.got.length === 1, 'reply to the latched public source');
});

const sdp = (port: number, direction = 'sendrecv') =>
  Buffer.from(
    [
      'v=0',
      'o=- 1 1 IN IP4 127.0.0.1',
      's=-',
      'c=IN IP4 127.0.0.1',
      't=0 0',
      `m=audio ${port} RTP/AVP 0`,
      `a=${direction}`,
      '',
    ].join('\r\n'),
  );

t.test('a refused re-offer leaves the side where it was: its earlier target and latch', async (t) => {
  const relay = await pool.openRelay();
  const call = createCallMediaRelay(relay);
  t.teardown(() => call.close());
  const caller = await peer(t);
  const moved = await peer(t);
  const callee = await peer(t);
  call.pass('caller', sdp(caller.port));
  call.pass('callee', sdp(callee.port));
  caller.send('before', relay.callerPort);
  await until(() => callee.got.length === 1, 'caller latched');
  // The caller offers a new address; the callee refuses it (488), so the call keeps the old one.
  call.pass('caller', sdp(moved.port));
  call.refused('caller');
  callee.send('to the caller', relay.calleePort);
  await until(() => caller.got.length === 1, 'audio back at the earlier, latched address');
  moved.send('from the refused address', relay.callerPort);
  await settle();
  t.same(
    callee.got.map((g) => g.data),
    ['before'],
    'the refused address does not feed the call',
  );
  t.equal(moved.got.length, 0);
  // An accepted re-offer moves it; a refusal of a later offer that changed nothing moves nothing back.
  call.pass('caller', sdp(moved.port));
  call.pass('callee', sdp(callee.port));
  call.pass('caller', sdp(moved.port, 'sendonly'));
  call.refused('caller');
  moved.send('after the accepted move', relay.callerPort);
  await until(() => callee.got.length === 2, 'the accepted address latched');
  callee.send('to the moved caller', relay.calleePort);
  await until(() => moved.got.length === 1, 'audio to the accepted address');
  t.equal(caller.got.length, 1, 'nothing more to the old address');
});

t.test('armed, silence either way times the relay out; disarmed (on hold), it does not', async (t) => {
  // Absence is judged against witnesses: relays with the same timeout whose own timeouts prove a
  // check pass has come and gone (the worker checks every armed relay in one pass, in open order).
  const open = async () => {
    const relay = await pool.openRelay({ timeoutMs: 300 });
    t.teardown(() => relay.close());
    const r = { relay, timedOut: 0 };
    relay.onTimeout(() => r.timedOut++);
    return r;
  };
  const held = await open();
  const witness = await open();
  held.relay.arm(false);
  witness.relay.arm(true);
  await until(() => witness.timedOut === 1, 'the armed witness times out', 3000);
  t.equal(held.timedOut, 0, 'not armed: no timeout, though silent longer than the witness');
  held.relay.arm(true);
  await until(() => held.timedOut === 1, 'timeout after arming', 3000);
  const later = await open();
  later.relay.arm(true);
  await until(() => later.timedOut === 1, 'a later check pass', 3000);
  t.equal(held.timedOut, 1, 'reported once');
});

t.test('closing frees the ports for the next relay', async (t) => {
  const opened = await Promise.all(Array.from({ length: 10 }, () => pool.openRelay()));
  const ports = new Set(opened.flatMap((r) => [r.callerPort, r.calleePort]));
  t.equal(ports.size, 20, 'distinct ports');
  await Promise.all(opened.map((r) => r.close()));
  const [stats] = await pool.stats();
  t.equal(stats?.relays, 0);
  // 100 ports hold 25 relays (four sockets each): 30 in sequence need the closed ones back.
  for (let i = 0; i < 30; i++) await (await pool.openRelay()).close();
  t.pass('ports reused');
});
