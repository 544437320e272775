/** A daemon in its own process, so a crash test can SIGKILL it mid-call, or SIGTERM stop it. Argument: config overrides as JSON. */
import pino from 'pino';
import { loadConfig, type DeepPartial } from '../../../src/config/load.js';
import type { Config } from '../../../src/config/schema.js';
import { startDaemon } from '../../../src/daemon.js';

const overrides = JSON.parse(process.argv[2] ?? '{}') as DeepPartial<Config>;
const daemon = await startDaemon(loadConfig({ overrides }), { log: pino({ level: 'silent' }) });
process.stdout.write(`${JSON.stringify(daemon.ports)}\n`);
// As src/main.ts stops a daemon on SIGTERM: live calls hung up and billed before it exits.
process.once('SIGTERM', () => {
  void daemon.stop().finally(() => process.exit(0));
});
