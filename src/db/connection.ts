import postgres from 'postgres';
import type { Logger } from 'pino';

export type Sql = postgres.Sql;
export type TransactionSql = postgres.TransactionSql;
/** Either the pool or a transaction: functions that write take this so callers choose the transaction. */
export type Db = Sql | TransactionSql;

export interface ConnectOptions {
  url: string;
  max: number;
  log: Logger;
  /** Name shown in pg_stat_activity. */
  applicationName?: string;
}

/**
 * Opens the pool. Columns come back in camelCase; numeric and bigint come back as strings
 * (the driver's default), so money never passes through a JavaScript number.
 */
export function connect(opts: ConnectOptions): Sql {
  return postgres(opts.url, {
    max: opts.max,
    transform: { column: { from: postgres.toCamel, to: postgres.fromCamel } },
    connection: { application_name: opts.applicationName ?? 'svc-exchanged' },
    onnotice: (notice) => opts.log.debug({ notice: notice.message }, 'postgres notice'),
    idle_timeout: 60,
    max_lifetime: 60 * 30,
  });
}
