import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, constants, existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../telephony/sip/sipp.js';

/**
 * A private Asterisk for a test: the operator configuration from `asterisk/` with its addresses
 * swapped for free ports, an `asterisk.conf` pointing every writable directory into a temp dir,
 * started in the foreground and killed at teardown. Found through `ASTERISK_BIN` or `PATH` only.
 */

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const CONFIG_DIR = join(REPO, 'asterisk');

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The Asterisk binary from `ASTERISK_BIN`, else the first `asterisk` on `PATH`; null when none. */
export function findAsterisk(): string | null {
  const env = process.env['ASTERISK_BIN'];
  if (env) return executable(env) ? env : null;
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, 'asterisk');
    if (existsSync(candidate) && executable(candidate)) return candidate;
  }
  return null;
}

export const asteriskBin = findAsterisk();
/** The skip reason every Asterisk test names (scripts/test-summary.mjs counts them by it). */
export const NO_ASTERISK = 'no Asterisk: set ASTERISK_BIN or put asterisk on PATH';

export interface PrivateAsterisk {
  /** ARI base URL, e.g. http://127.0.0.1:39211 */
  ariUrl: string;
  username: string;
  password: string;
  app: string;
  /** Where Asterisk's PJSIP listens (the exchange sends its in-dialog requests there). */
  sipPort: number;
  dir: string;
  /** Runs a CLI command against this instance (`asterisk -rx`). */
  cli(command: string): Promise<string>;
  /** Kills it hard (a host failure); `stop` then only cleans up. */
  kill(): void;
  stop(): Promise<void>;
}

function run(bin: string, args: string[]): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('exit', () => resolvePromise(out));
  });
}

export interface StartAsteriskOptions {
  /** Where the exchange's Asterisk-facing SIP listener is (the aor contact and the identify match). */
  exchangeSip: { host: string; port: number };
  /** First RTP port. */
  rtpStart?: number;
  /** RTP ports from `rtpStart` (default 25: a dozen calls, RTP and RTCP each). */
  rtpPorts?: number;
  /** The ARI password (hosts of one farm share it); random when not given. */
  password?: string;
}

export async function startAsterisk(options: StartAsteriskOptions): Promise<PrivateAsterisk> {
  const bin = asteriskBin;
  if (!bin) throw new Error(NO_ASTERISK);
  const dir = await mkdtemp(join(tmpdir(), 'svc-asterisk-'));
  const [httpPort, sipPort] = [await freePort(), await freePort()];
  const rtpStart = options.rtpStart ?? 20000 + (process.pid % 400) * 26;
  const password = options.password ?? randomBytes(12).toString('hex');
  const ex = options.exchangeSip;
  const edits: Record<string, (text: string) => string> = {
    'http.conf': (s) => s.replace(/^bindport = .*$/m, `bindport = ${httpPort}`),
    'ari.conf': (s) => s.replace(/^password = .*$/m, `password = ${password}`),
    'pjsip.conf': (s) =>
      s
        .replace(/^bind = .*$/m, `bind = 127.0.0.1:${sipPort}`)
        .replace(/^contact = .*$/m, `contact = sip:${ex.host}:${ex.port}`)
        .replace(/^match = .*$/m, `match = ${ex.host}`),
    'rtp.conf': (s) =>
      s
        .replace(/^rtpstart = .*$/m, `rtpstart = ${rtpStart}`)
        .replace(/^rtpend = .*$/m, `rtpend = ${rtpStart + (options.rtpPorts ?? 25) - 1}`),
    'modules.conf': (s) => s,
    'extensions.conf': (s) => s,
    'logger.conf': (s) => s,
  };
  for (const [name, edit] of Object.entries(edits)) {
    await writeFile(join(dir, name), edit(await readFile(join(CONFIG_DIR, name), 'utf8')));
  }
  // Files Asterisk reads at start that the engine needs nothing from: empty quiets their errors.
  for (const f of ['cdr', 'cel', 'features', 'acl', 'udptl', 'pjsip_notify', 'pjproject', 'stasis', 'ccss']) {
    await writeFile(join(dir, `${f}.conf`), '');
  }
  for (const sub of ['run', 'log', 'spool', 'lib', 'keys']) await mkdir(join(dir, sub));
  await writeFile(
    join(dir, 'asterisk.conf'),
    [
      '[directories]',
      `astetcdir => ${dir}`,
      `astrundir => ${dir}/run`,
      `astlogdir => ${dir}/log`,
      `astspooldir => ${dir}/spool`,
      `astvarlibdir => ${dir}/lib`,
      `astdbdir => ${dir}/lib`,
      `astkeydir => ${dir}/keys`,
      '[options]',
      'nocolor = yes',
      'maxload = 0',
      '',
    ].join('\n'),
  );
  const conf = join(dir, 'asterisk.conf');
  const child: ChildProcess = spawn(bin, ['-f', '-n', '-C', conf], { stdio: ['ignore', 'pipe', 'pipe'] });
  let console = '';
  child.stdout?.on('data', (d: Buffer) => (console += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (console += d.toString()));
  let exited = false;
  child.on('exit', () => (exited = true));
  const ariUrl = `http://127.0.0.1:${httpPort}`;
  const auth = `Basic ${Buffer.from(`svc-exchange:${password}`).toString('base64')}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (exited) throw new Error(`asterisk exited at start:\n${console.slice(-4000)}`);
    try {
      const res = await fetch(`${ariUrl}/ari/asterisk/info`, { headers: { authorization: auth } });
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`asterisk did not answer ARI in 20 s:\n${console.slice(-4000)}`);
    }
    await new Promise((r) => setTimeout(r, 150));
  }
  // PJSIP loads after HTTP: wait until the endpoint the engine dials through exists.
  for (;;) {
    const out = await run(bin, ['-C', conf, '-rx', 'pjsip show endpoint svc-exchange']);
    if (/Endpoint:\s+svc-exchange/.test(out)) break;
    if (Date.now() > deadline) throw new Error(`asterisk has no svc-exchange endpoint:\n${out}`);
    await new Promise((r) => setTimeout(r, 150));
  }
  const stopChild = async (signal: NodeJS.Signals): Promise<void> => {
    if (exited) return;
    const gone = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill(signal);
    await Promise.race([gone, new Promise((r) => setTimeout(r, 3000))]);
    if (!exited) child.kill('SIGKILL');
  };
  return {
    ariUrl,
    username: 'svc-exchange',
    password,
    app: 'svc-exchange',
    sipPort,
    dir,
    cli: (command) => run(bin, ['-C', conf, '-rx', command]),
    kill() {
      if (!exited) child.kill('SIGKILL');
    },
    async stop() {
      await stopChild('SIGTERM');
      if (process.env['SVC_TEST_KEEP_ASTERISK']) return;
      await rm(dir, { recursive: true, force: true });
    },
  };
}
