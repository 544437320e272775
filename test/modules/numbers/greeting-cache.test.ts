import t from 'tap';
import { pino } from 'pino';
import { createManualClock } from '../../../src/platform/clock.js';
import { decodeG711, type G711Codec } from '../../../src/telephony/media/g711.js';
import { createMp3Decoder } from '../../../src/telephony/media/mp3.js';
import { createGreetingCache } from '../../../src/modules/numbers/voice/greeting-cache.js';
import { lameMp3 } from './mp3-fixture.js';

/** `seconds` of a 440 Hz tone. */
const toneMp3 = (seconds: number) => new Uint8Array(lameMp3({ seconds, hz: 440 }));

t.test('voicemail greeting cache: one read and one decode per greeting, bounded, invalidated', async (t) => {
  const decoder = createMp3Decoder({ log: pino({ level: 'silent' }) });
  t.teardown(() => decoder.close());
  const decodes: G711Codec[] = [];
  const clock = createManualClock();
  const make = (o: { maxBytes?: number } = {}) =>
    createGreetingCache({
      decode: (mp3, codec) => {
        decodes.push(codec);
        return decoder.decode(mp3, codec);
      },
      clock,
      urlMaxAgeMs: 60_000,
      ...o,
    });
  const one = toneMp3(1);
  const two = toneMp3(2);
  let reads = 0;
  const reader = (bytes: Uint8Array) => () => {
    reads++;
    return Promise.resolve(bytes);
  };

  t.test('both laws from one decode; the second law matches the decoder’s own', async (t) => {
    decodes.length = 0;
    reads = 0;
    const cache = make();
    const audio = await cache.get('did-1', 'file:a.mp3', reader(one));
    t.same(decodes, ['PCMU'], 'the MP3 is decoded once, for one law');
    t.equal(reads, 1);
    t.equal(audio.PCMA.length, audio.PCMU.length, 'the other law has every sample');
    t.ok(audio.PCMU.length >= 7600 && audio.PCMU.length <= 9600, `about 1 s of audio (${audio.PCMU.length} samples)`);
    const direct = decodeG711('PCMA', await decoder.decode(one, 'PCMA'));
    const transcoded = decodeG711('PCMA', audio.PCMA);
    t.equal(transcoded.length, direct.length);
    let diff = 0;
    let level = 0;
    for (let i = 0; i < direct.length; i++) {
      diff += Math.abs(direct[i]! - transcoded[i]!);
      level += Math.abs(direct[i]!);
    }
    t.ok(level / direct.length > 3000, 'the tone is there');
    t.ok(
      diff / direct.length < 64,
      `the transcoded law is the decoder’s within quantisation (${diff / direct.length})`,
    );

    decodes.length = 0;
    const again = await cache.get('did-1', 'file:a.mp3', reader(one));
    t.equal(again, audio, 'the next call plays the kept audio');
    t.equal(reads, 1, 'not read again');
    t.same(decodes, [], 'not decoded again');
    t.match(cache.stats(), { entries: 1, bytes: audio.PCMU.length * 2, loads: 1, hits: 1 });
  });

  t.test('calls arriving together share one read and decode', async (t) => {
    decodes.length = 0;
    reads = 0;
    const cache = make();
    const got = await Promise.all([1, 2, 3].map(() => cache.get('did-1', 'file:a.mp3', reader(one))));
    t.equal(reads, 1);
    t.equal(decodes.length, 1);
    t.equal(got[0], got[2]);
  });

  t.test('a changed greeting is read again: new source, or dropped by the settings', async (t) => {
    decodes.length = 0;
    reads = 0;
    const cache = make();
    const first = await cache.get('did-1', 'file:a.mp3', reader(one));
    const uploaded = await cache.get('did-1', 'file:b.mp3', reader(two));
    t.equal(reads, 2, 'another uploaded file is read');
    t.ok(uploaded.PCMU.length > first.PCMU.length * 1.5, 'and its audio plays');
    t.equal(cache.stats().entries, 1, 'the old greeting is no longer kept');
    t.equal(cache.stats().bytes, uploaded.PCMU.length * 2);
    cache.invalidate('did-1');
    t.match(cache.stats(), { entries: 0, bytes: 0 });
    await cache.get('did-1', 'file:b.mp3', reader(two));
    t.equal(reads, 3, 'an invalidated greeting is read again');
  });

  t.test('a URL greeting is fetched again once it is old', async (t) => {
    reads = 0;
    const cache = make();
    await cache.get('did-1', 'url:https://example.com/g.mp3', reader(one));
    clock.advance(59_000);
    await cache.get('did-1', 'url:https://example.com/g.mp3', reader(one));
    t.equal(reads, 1, 'kept while young');
    clock.advance(1_000);
    await cache.get('did-1', 'url:https://example.com/g.mp3', reader(one));
    t.equal(reads, 2, 'fetched again after urlMaxAgeMs');
    clock.advance(3_600_000);
    await cache.get('did-2', 'file:x.mp3', reader(one));
    await cache.get('did-2', 'file:x.mp3', reader(one));
    t.equal(reads, 3, 'an uploaded file does not age');
  });

  t.test('failures are not kept', async (t) => {
    reads = 0;
    const cache = make();
    await t.rejects(
      cache.get('did-1', 'file:gone.mp3', () => Promise.reject(Object.assign(new Error('gone'), { code: 'ENOENT' }))),
      { code: 'ENOENT' },
    );
    await t.rejects(cache.get('did-1', 'file:bad.mp3', reader(new Uint8Array([1, 2, 3, 4, 5]))), {
      code: 'MEDIA_UNSUPPORTED_AUDIO',
    });
    t.match(cache.stats(), { entries: 0, bytes: 0 });
    await cache.get('did-1', 'file:bad.mp3', reader(one));
    t.equal(cache.stats().entries, 1, 'the next call tries again');
  });

  t.test('bounded by decoded bytes, least recently used going first', async (t) => {
    const probe = make();
    const size = (await probe.get('p', 'file:p', reader(one))).PCMU.length * 2;
    reads = 0;
    const cache = make({ maxBytes: size * 2 + 10 });
    await cache.get('a', 'file:a', reader(one));
    await cache.get('b', 'file:b', reader(one));
    await cache.get('a', 'file:a', reader(one));
    t.equal(reads, 2);
    await cache.get('c', 'file:c', reader(one));
    t.match(cache.stats(), { entries: 2, bytes: size * 2 });
    await cache.get('a', 'file:a', reader(one));
    t.equal(reads, 3, 'the recently used greeting stayed');
    await cache.get('b', 'file:b', reader(one));
    t.equal(reads, 4, 'the least recently used one went');
    t.ok(cache.stats().bytes <= size * 2 + 10);
  });
});
