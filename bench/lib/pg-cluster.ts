/**
 * A throw-away PostgreSQL cluster for benches that need a server of their own (settings the
 * machine's server does not have, or a server run under valgrind): its files made by initdb in a
 * temporary folder, and its postmaster started, waited for and stopped. The machine's own server is
 * shared by every test and bench here, so it is never restarted or reconfigured.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';

const asRoot = process.getuid?.() === 0;
const idOfPostgres = (flag: '-u' | '-g') =>
  Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim());

export interface ClusterFiles {
  /** The temporary folder: the data directory, the server's socket and whatever the bench adds. */
  dir: string;
  data: string;
  /** The server's binaries (the newest installed, Debian layout). */
  bin: string;
  /** The command and arguments that run `cmd` as the cluster's owner (as root: `postgres`, since the server refuses root). */
  asOwner(cmd: string, args: string[]): [string, string[]];
  /** Hands a folder (and, with `deep`, all in it) to the cluster's owner. */
  own(path: string, deep?: boolean): void;
  /** Deletes the folder and everything in it. */
  remove(): void;
}

/** The newest installed server's binaries (Debian layout). */
function binDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length === 0) throw new Error('no PostgreSQL server binaries under /usr/lib/postgresql');
  return join(root, versions[0]!, 'bin');
}

/** A new cluster's files under a temporary folder named after `prefix`. */
export function initCluster(prefix: string): ClusterFiles {
  const bin = binDir();
  const [uid, gid] = asRoot ? [idOfPostgres('-u'), idOfPostgres('-g')] : [-1, -1];
  const own = (path: string, deep = false) => {
    if (!asRoot) return;
    if (deep) spawnSync('chown', ['-R', `${uid}:${gid}`, path]);
    else chownSync(path, uid, gid);
  };
  const asOwner = (cmd: string, args: string[]): [string, string[]] =>
    asRoot ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];
  const dir = mkdtempSync(join(tmpdir(), prefix));
  own(dir);
  const data = join(dir, 'data');
  const [cmd, args] = asOwner(join(bin, 'initdb'), [
    '-D',
    data,
    '-U',
    'postgres',
    '--auth=trust',
    '-E',
    'UTF8',
    '--locale=C.UTF-8',
  ]);
  const init = spawnSync(cmd, args, { encoding: 'utf8' });
  if (init.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`initdb failed: ${init.stderr}`);
  }
  return { dir, data, bin, asOwner, own, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export interface ClusterServer {
  /** A connection URL for database `db` as the superuser. */
  url(db: string): string;
  /** Fast shutdown (open sessions rolled back); resolves once the postmaster has exited. */
  stop(): Promise<void>;
}

export interface ServerOptions {
  /** `-c` settings besides the port, listen address and socket folder, which are always set. */
  settings: string[];
  /** A command the server runs under (e.g. valgrind and its options). */
  wrap?: string[];
  /** The first statement, run on the `postgres` database once the server answers (retried until it does). */
  ready?: (sql: postgres.Sql) => Promise<unknown>;
  /** Tries at starting, `delayMs` apart (a server under valgrind takes a minute). */
  attempts?: number;
  delayMs?: number;
}

/** Starts `files`' server on `port` and resolves once `ready` (default `select 1`) has run. */
export async function startServer(files: ClusterFiles, port: number, opts: ServerOptions): Promise<ClusterServer> {
  const settings = [
    `port=${port}`,
    'listen_addresses=127.0.0.1',
    `unix_socket_directories=${files.dir}`,
    ...opts.settings,
  ];
  const server = [join(files.bin, 'postgres'), '-D', files.data, ...settings.flatMap((s) => ['-c', s])];
  const [cmd, args] = opts.wrap
    ? files.asOwner(opts.wrap[0]!, [...opts.wrap.slice(1), ...server])
    : files.asOwner(server[0]!, server.slice(1));
  const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  let log = '';
  child.stderr.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-4000)));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const url = (db: string) => `postgres://postgres@127.0.0.1:${port}/${db}`;
  const stop = async () => {
    // To the group: runuser's child, and valgrind's, get it too.
    if (child.exitCode === null && child.pid) process.kill(-child.pid, 'SIGINT');
    await exited;
  };
  const attempts = opts.attempts ?? 100;
  const delayMs = opts.delayMs ?? 100;
  const ready = opts.ready ?? ((sql: postgres.Sql) => sql`select 1`);
  for (let i = 0; ; i++) {
    const probe = postgres(url('postgres'), { max: 1, connect_timeout: 10, onnotice: () => {} });
    try {
      await ready(probe);
      return { url, stop };
    } catch (err) {
      if (i >= attempts || child.exitCode !== null) {
        await stop();
        throw new Error(`PostgreSQL did not start: ${String(err)}\n${log}`, { cause: err });
      }
      await new Promise((r) => setTimeout(r, delayMs));
    } finally {
      await probe.end({ timeout: 1 });
    }
  }
}
