import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { getCountries, getCountryCallingCode } from 'libphonenumber-js';
import type { Config } from '../../config/schema.js';
import type { Sql } from '../../db/connection.js';
import { Scopes } from '../../http/access.js';
import type { Clock } from '../../platform/clock.js';
import { SubscribableEvents } from '../../webhooks/events.js';
import { countryName } from '../../platform/country-names.js';

/** The package this daemon runs from: found upward from this file, in src/ (tsx) and dist/src/ alike. */
function packageInfo(): { name: string; version: string } {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'svc-exchange') return { name: pkg.name, version: pkg.version ?? '0.0.0' };
    }
    dir = dirname(dir);
  }
  return { name: 'svc-exchange', version: '0.0.0' };
}

/** Version and build, server time and what the exchange supports, as such services publish. */
export function createSystemService(deps: { sql: Sql; config: Readonly<Config>; clock: Clock }) {
  const { sql, config, clock } = deps;
  const pkg = packageInfo();
  const startedAt = clock.now();
  // Built once, on first use: the list only changes with the libphonenumber-js release, and its
  // ~250 name look-ups took tens of milliseconds of CPU at every daemon start.
  let countryList: { code: string; name: string; callingCode: string }[] | undefined;
  const countries = () =>
    (countryList ??= getCountries().map((code) => ({
      code,
      name: countryName(code) ?? code,
      callingCode: `+${getCountryCallingCode(code)}`,
    })));

  return {
    async version() {
      const [schema] = await sql<{ version: number | null; appliedAt: Date | null }[]>`
        select max(version) as version, max(applied_at) as applied_at from schema_migrations`;
      const now = clock.now();
      return {
        name: pkg.name,
        version: pkg.version,
        apiVersion: 'v1',
        schemaVersion: schema?.version ?? null,
        schemaUpdatedAt: schema?.appliedAt?.toISOString() ?? null,
        runtime: `node ${process.version}`,
        platform: `${process.platform}-${process.arch}`,
        startedAt: startedAt.toISOString(),
        uptimeSeconds: Math.max(0, Math.floor((now.getTime() - startedAt.getTime()) / 1000)),
      };
    },

    time() {
      const now = clock.now();
      return {
        now: now.toISOString(),
        unixSeconds: Math.floor(now.getTime() / 1000),
        unixMs: now.getTime(),
        timezone: 'UTC' as const,
      };
    },

    capabilities() {
      return {
        currencies: ['USD'],
        countries: countries(),
        voice: {
          sip: {
            primary: config.sip.primary_host,
            secondary: config.sip.secondary_host || null,
            port: 5060,
            transports: ['udp', 'tcp', 'tls'],
            authentication: 'digest-md5',
          },
          codecs: ['PCMU', 'PCMA', 'G729'],
          mediaCodecs: ['PCMU', 'PCMA'],
          dtmf: 'rfc2833',
          maxCallSeconds: config.sip.max_call_seconds,
        },
        sms: {
          smpp: { version: '3.4', port: config.smpp.port, tlsPort: config.smpp.tls_port },
          encodings: ['GSM-7', 'UCS-2'],
          bulkMaxRecipients: 1000,
        },
        api: {
          basePath: '/api/v1',
          openapi: '/api/v1/docs/json',
          scopes: [...Scopes],
          events: [...SubscribableEvents],
          rateLimitPerSecond: config.limits.default_per_second,
          cursorLimitMax: 100,
          idempotencyHours: config.limits.idempotency_ttl_hours,
        },
        topupMinimums: { card: '5.000000', crypto: '5.000000', wire: '100.000000' },
        twoFactor: ['totp'],
      };
    },
  };
}

export type SystemService = ReturnType<typeof createSystemService>;
