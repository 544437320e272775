import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import t from 'tap';
import { createTestDatabase } from '../helpers/db.js';
import { httpsCall } from '../helpers/daemon.js';
import { nodeScriptArgs } from '../helpers/node-script.js';

// The daemon in a child process whose open-file limit is small enough for a test to exhaust.
const CHILD = nodeScriptArgs(import.meta.url, '../modules/sip-trunks/crash-child');
const FD_LIMIT = 1200;

t.test('idle SIP TCP connections from many sources cannot take the HTTPS API down', async (t) => {
  const db = await createTestDatabase(t, { migrate: false });
  const state = mkdtempSync(join(tmpdir(), 'svc-fd-state-'));
  t.teardown(() => rmSync(state, { recursive: true, force: true }));
  const overrides = {
    paths: { state },
    log: { level: 'silent' },
    // Schemas compile on first use, as in every test daemon (test/helpers/daemon.ts).
    http: { host: '127.0.0.1', port: 0, max_connections: 200, schema_compile: 'first_use' },
    database: { url: db.url, pool_max: 4 },
    // Long idle time: the caps alone must hold the flood.
    sip: { host: '127.0.0.1', port: 0, tls_port: 0, options_interval_seconds: 3600, tcp_idle_seconds: 600 },
    smpp: { host: '127.0.0.1', port: 0, tls_port: 0 },
    metrics: { enabled: false },
  };
  const child = spawn(
    'bash',
    ['-c', `ulimit -n ${FD_LIMIT} && exec "$0" "$@"`, process.execPath, ...CHILD, JSON.stringify(overrides)],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  });
  const ports = JSON.parse(
    await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout! }).once('line', resolve);
      child.once('exit', () => reject(new Error('child daemon exited before listening')));
    }),
  ) as Record<string, number>;

  // 2,000 idle connections, 100 from each of 20 addresses: more than the process could hold.
  const socks: net.Socket[] = [];
  t.teardown(() => socks.forEach((s) => s.destroy()));
  const settled: Promise<void>[] = [];
  for (let i = 0; i < 2000; i++) {
    const s = net.connect({ host: '127.0.0.1', port: ports['sip']!, localAddress: `127.0.1.${1 + (i % 20)}` });
    socks.push(s);
    s.on('error', () => undefined);
    settled.push(
      new Promise<void>((r) => {
        s.once('connect', () => r());
        s.once('close', () => r());
      }),
    );
  }
  await Promise.all(settled);

  const res = await httpsCall(`https://127.0.0.1:${ports['http']}/api/v1/status`, 'GET', undefined, { insecure: true });
  t.equal(res.status, 200, 'the HTTPS API answers during the flood');
  const open = socks.filter((s) => !s.destroyed).length;
  t.ok(open < 2000, `the daemon closed the connections over its caps (${open} of 2000 still open)`);
});
