import t from 'tap';
import { createServer } from 'node:https';
import type { Server } from 'node:https';
import type { ServerResponse } from 'node:http';
import { once } from 'node:events';
import { generate } from 'selfsigned';
import { checkPlayUrl, createSafeDownloader, isPublicAddress } from '../../../src/telephony/media/downloader.js';

const HOST = 'audio.example.test';

async function startServer(t: {
  teardown(fn: () => unknown): void;
}): Promise<{ port: number; ca: string; hits: string[] }> {
  const pems = await generate([{ name: 'commonName', value: HOST }], {
    keyType: 'ec',
    curve: 'P-256',
    extensions: [
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: HOST },
          { type: 7, ip: '127.0.0.1' },
        ],
      },
    ],
  });
  const hits: string[] = [];
  const routes: Record<string, (res: ServerResponse) => void> = {
    '/ok.mp3': (res) => res.writeHead(200, { 'content-type': 'audio/mpeg' }).end(Buffer.from('ID3-fake-audio')),
    '/redirect.mp3': (res) => res.writeHead(302, { location: 'https://127.0.0.1/ok.mp3' }).end(),
    '/missing.mp3': (res) => res.writeHead(404).end(),
    '/declared-big.mp3': (res) => res.writeHead(200, { 'content-length': String(3 * 1024 * 1024) }).end(),
    '/streamed-big.mp3': (res) => {
      res.writeHead(200);
      const chunk = Buffer.alloc(64 * 1024);
      let sent = 0;
      const pump = (): void => {
        while (sent < 40 && res.write(chunk)) sent++;
        if (sent < 40) res.once('drain', pump);
        else res.end();
      };
      pump();
    },
  };
  const server: Server = createServer({ key: pems.private, cert: pems.cert }, (req, res) => {
    hits.push(req.url ?? '');
    const route = routes[req.url ?? ''];
    if (route) route(res);
    else res.writeHead(500).end();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const address = server.address();
  return { port: typeof address === 'object' && address ? address.port : 0, ca: pems.cert, hits };
}

t.test('address policy: loopback, private, link-local, metadata, unique-local refused', async (t) => {
  for (const a of [
    '127.0.0.1',
    '10.1.2.3',
    '172.16.0.1',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '::1',
    '::',
    'fe80::1',
    'fc00::1',
    'fd00:ec2::254',
    '::ffff:127.0.0.1',
    '::ffff:8.8.8.8',
    '224.0.0.1',
    'not-an-ip',
  ]) {
    t.notOk(isPublicAddress(a), `${a} refused`);
  }
  for (const a of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111']) t.ok(isPublicAddress(a), `${a} allowed`);
});

t.test('URL checks: https, length, credentials', async (t) => {
  t.throws(() => checkPlayUrl('http://example.com/a.mp3'), { code: 'MEDIA_DOWNLOAD_REFUSED' });
  t.throws(() => checkPlayUrl(`https://example.com/${'a'.repeat(2048)}`), { code: 'MEDIA_DOWNLOAD_REFUSED' });
  t.throws(() => checkPlayUrl('https://user:pw@example.com/a.mp3'), { code: 'MEDIA_DOWNLOAD_REFUSED' });
  t.throws(() => checkPlayUrl('not a url'), { code: 'MEDIA_DOWNLOAD_REFUSED' });
  t.equal(checkPlayUrl('https://example.com/a.mp3?x=1').hostname, 'example.com');
});

t.test('downloads over https from the resolved address, with the name used for TLS', async (t) => {
  const { port, ca, hits } = await startServer(t);
  const resolved: string[] = [];
  const dl = createSafeDownloader({
    allowPrivateAddresses: true,
    ca,
    resolve: async (host) => {
      resolved.push(host);
      return [{ address: '127.0.0.1', family: 4 }];
    },
  });
  const body = await dl.download(`https://${HOST}:${port}/ok.mp3`);
  t.equal(Buffer.from(body).toString(), 'ID3-fake-audio');
  t.same(resolved, [HOST], 'resolved exactly once');
  t.same(hits, ['/ok.mp3']);
});

t.test('refusals and failures', async (t) => {
  const { port, ca, hits } = await startServer(t);
  const local = createSafeDownloader({ allowPrivateAddresses: true, ca });
  await t.rejects(local.download(`https://127.0.0.1:${port}/redirect.mp3`), {
    code: 'MEDIA_DOWNLOAD_REFUSED',
    message: /redirect/,
  });
  await t.rejects(local.download(`https://127.0.0.1:${port}/missing.mp3`), {
    code: 'MEDIA_DOWNLOAD_FAILED',
    message: /404/,
  });
  await t.rejects(local.download(`https://127.0.0.1:${port}/declared-big.mp3`), { code: 'MEDIA_AUDIO_TOO_LARGE' });
  await t.rejects(local.download(`https://127.0.0.1:${port}/streamed-big.mp3`), { code: 'MEDIA_AUDIO_TOO_LARGE' });
  const hitsBefore = hits.length;
  const strict = createSafeDownloader({
    ca,
    resolve: async () => [
      { address: '8.8.8.8', family: 4 },
      { address: '127.0.0.1', family: 4 },
    ],
  });
  await t.rejects(
    strict.download(`https://127.0.0.1:${port}/ok.mp3`),
    { code: 'MEDIA_DOWNLOAD_REFUSED' },
    'loopback literal',
  );
  await t.rejects(
    strict.download(`https://[::1]:${port}/ok.mp3`),
    { code: 'MEDIA_DOWNLOAD_REFUSED' },
    'IPv6 loopback literal',
  );
  await t.rejects(
    strict.download(`https://${HOST}:${port}/ok.mp3`),
    { code: 'MEDIA_DOWNLOAD_REFUSED' },
    'a name with one private answer',
  );
  await t.rejects(
    strict.download(`https://169.254.169.254/latest/meta-data/`),
    { code: 'MEDIA_DOWNLOAD_REFUSED' },
    'metadata address',
  );
  t.equal(hits.length, hitsBefore, 'nothing refused reached the server');
  const unresolvable = createSafeDownloader({ resolve: async () => Promise.reject(new Error('ENOTFOUND')) });
  await t.rejects(unresolvable.download('https://nowhere.invalid/a.mp3'), { code: 'MEDIA_DOWNLOAD_FAILED' });
});
