// Kannel (Debian `kannel`: bearerbox + smsbox) binds to our SMPP server as a customer, sends through
// its sendsms HTTP interface and receives our receipts on its dlr-url.
import t from 'tap';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { createSmppServer } from '../../src/messaging/smpp-server.js';
import type { SmppSubmission } from '../../src/messaging/smpp-server.js';
import { systemClock } from '../../src/platform/clock.js';

const template = fileURLToPath(new URL('../fixtures/kannel/kannel.conf.tmpl', import.meta.url));

async function freePort(): Promise<number> {
  const s = net.createServer();
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

function spawnBox(t: { teardown(fn: () => unknown): void }, bin: string, conf: string): ChildProcess {
  const child = spawn(bin, [conf], { stdio: 'ignore' });
  const exited = once(child, 'exit');
  t.teardown(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
    await exited;
    clearTimeout(timer);
  });
  return child;
}

async function sendsms(port: number, params: Record<string, string>): Promise<{ status: number; body: string }> {
  const url = `http://127.0.0.1:${port}/cgi-bin/sendsms?${new URLSearchParams(params).toString()}`;
  // smsbox opens its HTTP port only once it is connected to bearerbox; retry refusals briefly.
  for (let i = 0; ; i++) {
    try {
      const res = await fetch(url);
      return { status: res.status, body: await res.text() };
    } catch (err) {
      if (i > 100) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

t.test('Kannel as SMPP customer: GSM-7 with extension, UCS-2, 260-char concatenated, receipts', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-kannel-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));

  const submissions: SmppSubmission[] = [];
  const submitWaiters: Array<() => void> = [];
  let bound: () => void = () => {};
  const boundP = new Promise<void>((r) => (bound = r));
  let n = 0;
  const server = createSmppServer({
    port: 0,
    host: '127.0.0.1',
    tls: null,
    log: pino({ level: 'silent' }),
    clock: systemClock,
    idleTimeoutMs: 120_000,
    async authenticate(systemId, password) {
      if (systemId !== 'kannel' || password !== 'secret') return null;
      setImmediate(bound);
      return { accountId: 'kannel-acc', throughputPerSecond: 0 };
    },
    async onSubmit(_account, s) {
      submissions.push(s);
      submitWaiters.splice(0).forEach((w) => w());
      return { messageId: `k${++n}` };
    },
  });
  const { port } = await server.start();
  t.teardown(() => server.stop());

  const dlrs: URLSearchParams[] = [];
  const dlrWaiters: Array<() => void> = [];
  const dlrServer = createServer((req, res) => {
    dlrs.push(new URL(req.url ?? '/', 'http://x').searchParams);
    dlrWaiters.splice(0).forEach((w) => w());
    res.end('ok');
  });
  dlrServer.listen(0, '127.0.0.1');
  await once(dlrServer, 'listening');
  t.teardown(() => new Promise((r) => dlrServer.close(r)));
  const dlrPort = (dlrServer.address() as AddressInfo).port;

  const [adminPort, smsboxPort, sendsmsPort] = [await freePort(), await freePort(), await freePort()];
  const conf = (await readFile(template, 'utf8'))
    .replaceAll('{{ADMIN_PORT}}', String(adminPort))
    .replaceAll('{{SMSBOX_PORT}}', String(smsboxPort))
    .replaceAll('{{SENDSMS_PORT}}', String(sendsmsPort))
    .replaceAll('{{SMPP_PORT}}', String(port))
    .replaceAll('{{DIR}}', dir);
  const confPath = join(dir, 'kannel.conf');
  await writeFile(confPath, conf);
  spawnBox(t, '/usr/sbin/bearerbox', confPath);
  await boundP;
  spawnBox(t, '/usr/sbin/smsbox', confPath);
  t.equal(server.binds()[0]?.bindType, 'transceiver', 'Kannel bound as transceiver');

  const waitSubmissions = async (count: number) => {
    while (submissions.length < count) await new Promise<void>((r) => submitWaiters.push(r));
  };
  const waitDlrTags = async (tags: string[]) => {
    while (!tags.every((tag) => dlrs.some((d) => d.get('tag') === tag)))
      await new Promise<void>((r) => dlrWaiters.push(r));
  };
  const base = { username: 'tester', password: 'foobar', from: '447700900001', charset: 'UTF-8', 'dlr-mask': '3' };
  const dlrUrl = (tag: string) => `http://127.0.0.1:${dlrPort}/dlr?tag=${tag}&type=%d`;

  const gsmText = 'Price: 5€ {promo} [x] ~ok~ | back\\slash ^';
  const r1 = await sendsms(sendsmsPort, {
    ...base,
    to: '447700900123',
    text: gsmText,
    coding: '0',
    'dlr-url': dlrUrl('gsm'),
  });
  t.match(r1.body, /Accepted|Sent/);
  await waitSubmissions(1);
  t.match(submissions[0], {
    to: '447700900123',
    from: '447700900001',
    text: gsmText,
    dataCoding: 0,
    parts: 1,
    registeredDelivery: 1,
  });

  const ucsText = 'Привет, мир! 你好 😀';
  await sendsms(sendsmsPort, { ...base, to: '447700900124', text: ucsText, coding: '2', 'dlr-url': dlrUrl('ucs') });
  await waitSubmissions(2);
  t.match(submissions[1], { text: ucsText, dataCoding: 8, parts: 1 });

  const longText = 'The quick brown fox jumps over the lazy dog 0123456789. '.repeat(5).slice(0, 260);
  t.equal(longText.length, 260);
  await sendsms(sendsmsPort, { ...base, to: '447700900125', text: longText, coding: '0', 'dlr-url': dlrUrl('long') });
  await waitSubmissions(3);
  t.match(submissions[2], { text: longText, dataCoding: 0, parts: 2 });
  t.equal(submissions[2]?.partMessageIds.length, 1);

  // Receipts back, as the lead's code would send them.
  const now = new Date();
  server.deliverReceipt('kannel-acc', {
    messageId: 'k1',
    stat: 'DELIVRD',
    submitDate: now,
    doneDate: now,
    to: '447700900123',
    from: '447700900001',
    text: gsmText,
  });
  server.deliverReceipt('kannel-acc', {
    messageId: 'k2',
    stat: 'UNDELIV',
    err: '1',
    submitDate: now,
    doneDate: now,
    to: '447700900124',
    from: '447700900001',
  });
  server.deliverReceipt('kannel-acc', {
    messageId: 'k3',
    partMessageIds: submissions[2]?.partMessageIds ?? [],
    stat: 'DELIVRD',
    submitDate: now,
    doneDate: now,
    to: '447700900125',
    from: '447700900001',
  });
  await waitDlrTags(['gsm', 'ucs', 'long']);
  const byTag = (tag: string) => dlrs.filter((d) => d.get('tag') === tag).map((d) => d.get('type'));
  t.same(byTag('gsm'), ['1'], 'Kannel reported delivered (type 1) for the GSM message');
  t.same(byTag('ucs'), ['2'], 'Kannel reported failed (type 2) for the UCS-2 message');
  t.ok(byTag('long').includes('1'), 'Kannel matched a receipt of the concatenated message');
});
