import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config/load.js';
import { startDaemon, type FirstStart } from './daemon.js';
import { createLogger } from './platform/logger.js';
import { MigrationError } from './db/migrate.js';
import { EmbeddedDatabaseError } from './db/embedded.js';

const USAGE = `usage: svc-exchanged [--config PATH] [--check-config]

  --config PATH    TOML settings layered over config/default.toml's defaults
  --check-config   validate the settings (file and SVC_* environment) and exit
`;

/** Starts the daemon and stops it in order on SIGTERM or SIGINT; nothing else. */
export async function main(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  let args;
  try {
    args = parseArgs({
      args: argv,
      options: { config: { type: 'string' }, 'check-config': { type: 'boolean' }, help: { type: 'boolean' } },
    });
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  if (args.values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  let config;
  try {
    config = loadConfig({ file: args.values.config ?? env['SVC_CONFIG'], env });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(
        `svc-exchanged: invalid configuration:\n${err.problems.map((p) => `  - ${p}`).join('\n')}\n`,
      );
      return 78; // EX_CONFIG: systemd does not restart-loop on a bad file
    }
    throw err;
  }
  if (args.values['check-config']) {
    process.stdout.write('configuration is valid\n');
    return 0;
  }
  const log = createLogger(config.log.level);
  let daemon;
  try {
    daemon = await startDaemon(config, { log, version: process.env['npm_package_version'] ?? '0.1.0' });
  } catch (err) {
    if (err instanceof MigrationError) {
      log.fatal({ err: { message: err.message } }, 'refusing to start: migrations');
      return 1;
    }
    if (err instanceof EmbeddedDatabaseError) {
      // The one sentence saying what to do goes to the terminal too: a first run reads it there.
      log.fatal({ err: { message: err.message } }, 'refusing to start: embedded database');
      process.stderr.write(`svc-exchanged: ${err.message}\n`);
      return 1;
    }
    log.fatal({ err }, 'start failed');
    return 1;
  }
  if (daemon.firstStart) printFirstStart(daemon.firstStart, daemon.ports['http']!);

  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      log.info({ signal }, 'stopping');
      void daemon.stop().then(
        () => resolve(0),
        (err) => {
          log.error({ err }, 'stop failed');
          resolve(1);
        },
      );
    };
    // SIGHUP: new certificates and CA files without dropping calls (systemd's ExecReload sends it).
    process.on('SIGHUP', () => {
      void daemon
        .reload()
        .catch((err: unknown) => log.error({ err }, 'reload failed; the previous TLS material stays in use'));
    });
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
}

/** Printed once to the terminal, never to the log: these are secrets. */
function printFirstStart(f: FirstStart, port: number) {
  process.stdout.write(
    [
      '',
      '==================================================================',
      ' svc-exchange first start: an operator account was created.',
      ` e-mail:             ${f.email}`,
      ` one-time password:  ${f.password}`,
      `   (signs in once, until ${f.passwordExpiresAt.toISOString()}; then set your own with POST /api/v1/auth/change-password)`,
      ` test API key:       ${f.testKey}`,
      '',
      ' Try it (the certificate is self-signed, hence -k):',
      `   curl -k -H "Authorization: Bearer ${f.testKey}" https://localhost:${port}/api/v1/account`,
      ' These are shown only this once.',
      '==================================================================',
      '',
    ].join('\n'),
  );
}
