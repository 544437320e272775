import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import type { Sql } from '../db/connection.js';
import type { Clock } from './clock.js';
import type { HealthRegistry } from './health.js';
import type { Lookup } from './outbound-guard.js';
import type { SelfAddresses } from './self-addresses.js';

/** What every module is built from (CONVENTIONS 2: dependencies are passed in). */
export interface CoreDeps {
  config: Readonly<Config>;
  sql: Sql;
  log: Logger;
  clock: Clock;
  /** null: a daemon running alone keeps shared counters in process. */
  redis: Redis | null;
  /** Readiness probes shown by GET /status. */
  health: HealthRegistry;
  /** The daemon's TLS certificate (for SMPP over TLS); null behind a TLS proxy or in tools. */
  tls?: { key: string | Buffer; cert: string | Buffer } | null;
  /** The daemon's own addresses and bound ports (made from the settings when absent). */
  self?: SelfAddresses;
  /** Name resolution for the outbound guard (the system resolver when absent; tests answer their own names). */
  lookup?: Lookup;
}
