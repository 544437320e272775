import t from 'tap';
import {
  buildTelephoneEvent,
  createDtmfReceiver,
  keyToEvent,
  parseTelephoneEvent,
  telephoneEventPackets,
} from '../../../src/telephony/media/dtmf.js';
import type { DtmfKey } from '../../../src/telephony/media/dtmf.js';

const ev = (event: number, end: boolean, duration: number): Uint8Array =>
  buildTelephoneEvent({ event, end, volume: 10, duration });

function collect(): { keys: DtmfKey[]; rx: ReturnType<typeof createDtmfReceiver> } {
  const keys: DtmfKey[] = [];
  return { keys, rx: createDtmfReceiver((k) => keys.push(k)) };
}

t.test('payload encoding round trip and key mapping', async (t) => {
  t.same(parseTelephoneEvent(ev(11, true, 800)), { event: 11, end: true, volume: 10, duration: 800 });
  t.equal(keyToEvent('*'), 10);
  t.equal(keyToEvent('#'), 11);
  t.equal(keyToEvent('x'), null);
  t.equal(parseTelephoneEvent(Uint8Array.of(1, 2)), null);
});

t.test('one press with continuations and three end packets is one key', async (t) => {
  const { keys, rx } = collect();
  rx.handle(100, 8000, ev(5, false, 160));
  rx.handle(101, 8000, ev(5, false, 320));
  rx.handle(102, 8000, ev(5, true, 480));
  rx.handle(103, 8000, ev(5, true, 480));
  rx.handle(104, 8000, ev(5, true, 480));
  t.same(keys, ['5']);
});

t.test('out-of-order and repeated packets do not duplicate keys', async (t) => {
  const { keys, rx } = collect();
  // key 1: end packet first, then the start arriving late
  rx.handle(12, 1000, ev(1, true, 480));
  rx.handle(10, 1000, ev(1, false, 160));
  rx.handle(11, 1000, ev(1, false, 320));
  rx.handle(12, 1000, ev(1, true, 480)); // duplicate datagram
  // key 2 interleaved with a late retransmission of key 1
  rx.handle(20, 5000, ev(2, false, 160));
  rx.handle(13, 1000, ev(1, true, 480));
  rx.handle(21, 5000, ev(2, true, 320));
  t.same(keys, ['1', '2']);
});

t.test('a sender reusing the timestamp for a second press of the same key', async (t) => {
  const { keys, rx } = collect();
  rx.handle(1, 7000, ev(9, false, 160));
  rx.handle(2, 7000, ev(9, true, 320));
  rx.handle(3, 7000, ev(9, true, 320));
  rx.handle(4, 7000, ev(9, true, 320));
  rx.handle(0, 7000, ev(9, false, 160)); // late start of the first press: not new
  rx.handle(10, 7000, ev(9, false, 160)); // after the end: a new press
  rx.handle(11, 7000, ev(9, true, 320));
  t.same(keys, ['9', '9']);
});

t.test('unknown events are ignored', async (t) => {
  const { keys, rx } = collect();
  rx.handle(1, 1, ev(40, false, 160));
  t.same(keys, []);
});

t.test('send: start with marker, growing durations, three end packets', async (t) => {
  const packets = telephoneEventPackets('#', 100);
  const parsed = packets.map((p) => ({ marker: p.marker, ...parseTelephoneEvent(p.payload) }));
  t.equal(parsed.length, 4 + 3);
  t.equal(parsed[0]?.marker, true);
  t.ok(parsed.slice(1).every((p) => !p.marker));
  t.same(
    parsed.map((p) => p.duration),
    [160, 320, 480, 640, 800, 800, 800],
  );
  t.same(
    parsed.map((p) => p.end),
    [false, false, false, false, true, true, true],
  );
  t.ok(parsed.every((p) => p.event === 11));
});
