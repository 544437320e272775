import t from 'tap';
import { pino } from 'pino';
import { createHttpPromptStore } from '../../../src/telephony/asterisk/prompt-server.js';

const log = pino({ level: 'silent' });

t.test('prompts over HTTP: one unguessable, expiring URL per file, nothing else served', async (t) => {
  let now = 1_000_000;
  const store = createHttpPromptStore({ bind: '127.0.0.1', port: 0, ttlMs: 60_000, log, now: () => now });
  t.teardown(() => store.close());
  const audio = new Uint8Array(1600).fill(0xff);
  const uri = await store.publish(audio);
  const m = /^sound:(http:\/\/127\.0\.0\.1:(\d+)\/prompts\/([0-9a-f]{32})\.ulaw)$/.exec(uri);
  t.ok(m, `a sound: URI Asterisk's media cache fetches, ending in .ulaw (${uri})`);
  const url = m![1]!;
  const port = await store.port;
  t.equal(Number(m![2]), port);

  const res = await fetch(url);
  t.equal(res.status, 200);
  t.same(new Uint8Array(await res.arrayBuffer()), audio, 'the very bytes published');
  t.match(res.headers.get('cache-control'), /^private, max-age=60$/);

  t.equal(await store.publish(audio), uri, 'the same prompt again: the same URL (Asterisk caches it)');
  const other = await store.publish(new Uint8Array(800).fill(0x7f));
  t.not(other, uri, 'another prompt, another token');

  const base = `http://127.0.0.1:${port}/prompts`;
  for (const path of [`${base}/${'0'.repeat(32)}.ulaw`, `${base}/`, `http://127.0.0.1:${port}/`, `${url}?x=1`]) {
    const r = await fetch(path);
    t.equal(r.status, 404, `${path.slice(base.length - 8)}: not found`);
    await r.body?.cancel();
  }
  const post = await fetch(url, { method: 'POST' });
  t.equal(post.status, 404, 'read only');
  await post.body?.cancel();

  // Past half its life a repeat gets a fresh token; past its life the old one is gone.
  now += 31_000;
  const renewed = await store.publish(audio);
  t.not(renewed, uri, 'a fresh token once the old one is past half its life');
  now += 30_000;
  const expired = await fetch(url);
  t.equal(expired.status, 404, 'an expired token serves nothing');
  await expired.body?.cancel();
  const fresh = await fetch(renewed.slice('sound:'.length));
  t.equal(fresh.status, 200, 'the renewed one still does');
  await fresh.body?.cancel();
});
