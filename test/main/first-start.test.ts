import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { httpsCall } from '../helpers/daemon.js';
import { nodeScriptArgs } from '../helpers/node-script.js';

// The built daemon under `make test` (a bundle of what `make run` runs from dist/), the sources under tsx with `npx tap`.
const DAEMON = nodeScriptArgs(import.meta.url, '../../src/bin/svc-exchanged');

/**
 * The path of `make run`: no database URL, so the embedded PostgreSQL starts in the state
 * directory; the first start prints credentials; the printed key answers over HTTPS; SIGTERM
 * stops it cleanly.
 */
t.test('first start on the embedded defaults', async (t) => {
  const state = mkdtempSync(join(tmpdir(), 'svc-first-'));
  t.teardown(() => rmSync(state, { recursive: true, force: true }));
  const child = spawn(process.execPath, DAEMON, {
    env: {
      ...process.env,
      SVC_PATHS_STATE: state,
      SVC_HTTP_HOST: '127.0.0.1',
      SVC_HTTP_PORT: '0',
      SVC_METRICS_PORT: '0',
      SVC_SIP_HOST: '127.0.0.1',
      SVC_SIP_PORT: '0',
      SVC_SIP_TLS_PORT: '0',
      SVC_SMPP_HOST: '127.0.0.1',
      SVC_SMPP_PORT: '0',
      SVC_SMPP_TLS_PORT: '0',
      SVC_DATABASE_URL: '',
      SVC_REDIS_URL: '',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let exited: number | null = null;
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve((exited = code))));
  t.teardown(() => {
    if (exited === null) child.kill('SIGKILL');
  });
  child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (out += c));
  const ready = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), 90_000);
    const check = () => {
      if (/"ports":\{"http":\d+/.test(out) && /test API key:/.test(out)) {
        clearTimeout(timer);
        resolve(true);
      }
    };
    child.stdout.on('data', check);
    child.on('exit', () => resolve(false));
  });
  t.ok(ready, `daemon started and printed its first-start credentials\n${out.slice(-2000)}`);
  if (!ready) return;
  const key = /test API key:\s+(svc_test_sk_\S+)/.exec(out)![1]!;
  const password = /one-time password:\s+(\S{20})/.exec(out)?.[1];
  t.ok(password, 'the one-time password is printed');
  t.equal(out.split(password!).length - 1, 1, 'printed once, never logged');
  const port = Number(/"ports":\{"http":(\d+)/.exec(out)![1]);
  t.notMatch(
    out
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .join('\n'),
    key,
    'the key never reaches the JSON log',
  );
  const res = await httpsCall(`https://127.0.0.1:${port}/api/v1/account`, 'GET', undefined, {
    token: key,
    insecure: true,
  });
  t.equal(res.status, 200, res.text);
  t.equal(res.json.data.role, 'admin');
  child.kill('SIGTERM');
  t.equal(await exit, 0, 'SIGTERM stops it cleanly');
});
