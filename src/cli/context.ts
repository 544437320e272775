import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { connect, type Sql } from '../db/connection.js';
import { embeddedDataDir, embeddedOptions, startEmbeddedPostgres } from '../db/embedded.js';
import { migrate } from '../db/migrate.js';
import { buildModules, type Services } from '../modules/index.js';
import { systemClock } from '../platform/clock.js';
import { createHealthRegistry } from '../platform/health.js';

export interface CliContext {
  config: Readonly<Config>;
  sql: Sql;
  services: Services;
  close(): Promise<void>;
}

/**
 * Opens the daemon's database directly, so svcctl works while the daemon is down. With the
 * embedded default it joins the running embedded server when one is up (its postmaster.pid
 * names the port), else starts it for the duration of the command.
 */
export async function openContext(config: Readonly<Config>, log: Logger): Promise<CliContext> {
  let url = config.database.url;
  let stopEmbedded: (() => Promise<void>) | null = null;
  if (!url) {
    const pidFile = join(embeddedDataDir(embeddedOptions(config, log)), 'postmaster.pid');
    const running = existsSync(pidFile) ? readFileSync(pidFile, 'utf8').split('\n')[3]?.trim() : undefined;
    if (running) {
      url = `postgres://svc:svc@127.0.0.1:${running}/svc_exchange`;
    } else {
      const embedded = await startEmbeddedPostgres(embeddedOptions(config, log));
      url = embedded.url;
      stopEmbedded = () => embedded.stop();
    }
  }
  const sql = connect({ url, max: 2, log, applicationName: 'svcctl' });
  try {
    await migrate(sql, log);
    const { services } = await buildModules({
      config,
      sql,
      log,
      clock: systemClock,
      redis: null,
      health: createHealthRegistry(),
    });
    return {
      config,
      sql,
      services,
      async close() {
        await sql.end({ timeout: 5 });
        if (stopEmbedded) await stopEmbedded();
      },
    };
  } catch (err) {
    await sql.end({ timeout: 1 });
    if (stopEmbedded) await stopEmbedded();
    throw err;
  }
}
