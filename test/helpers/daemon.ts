import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import pino from 'pino';
import { loadConfig, type DeepPartial } from '../../src/config/load.js';
import type { Config } from '../../src/config/schema.js';
import { startDaemon, type Daemon } from '../../src/daemon.js';
import type { Clock } from '../../src/platform/clock.js';
import type { Lookup } from '../../src/platform/outbound-guard.js';
import { createTestDatabase } from './db.js';

type Teardown = { teardown(fn: () => unknown): void };

/** Loopback and the documentation ranges: what the tests' suppliers, SMSCs and trunks use. */
export const TEST_NETWORKS = [
  '127.0.0.0/8',
  '::1/128',
  '192.0.2.0/24',
  '198.51.100.0/24',
  '203.0.113.0/24',
  '2001:db8::/32',
];
/** The lowest scrypt cost the settings allow: tests hash cheaply, the format stays the same. */
export const TEST_SCRYPT_COST = 10;

export interface TestDaemon extends Daemon {
  config: Readonly<Config>;
  baseUrl: string;
  /** A real HTTPS request to the daemon (the self-signed certificate is trusted for the test). */
  https(
    method: string,
    path: string,
    opts?: { token?: string; body?: unknown; rawBody?: string | Readable; headers?: Record<string, string> },
  ): Promise<HttpsResult>;
}

export interface HttpsResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** Starts the whole daemon on free ports against a fresh database; stopped at teardown. */
export async function startTestDaemon(
  t: Teardown,
  overrides: DeepPartial<Config> = {},
  opts: { clock?: Clock; lookup?: Lookup } = {},
): Promise<TestDaemon> {
  const db = await createTestDatabase(t);
  const state = mkdtempSync(join(tmpdir(), 'svc-test-state-'));
  const base: Record<string, Record<string, unknown>> = {
    paths: { state },
    log: { level: 'silent' },
    // A test calls a few of the ~500 routes: their schemas compile on first use (about 2 s of CPU
    // less per daemon); test/http/schema-compile.test.ts compiles them all at start.
    http: { host: '127.0.0.1', port: 0, schema_compile: 'first_use' },
    database: { url: db.url, pool_max: 10 },
    // No background OPTIONS: a probe landing on a sipp peer (or on a port another test's sipp now
    // holds) fails that scenario; health tests call checkAll() themselves.
    // No overload refusals by the event loop's load or by retransmissions: on a 2-core machine running the suite, a
    // starved test process reads as an overloaded daemon; test/modules/sip-trunks/overload.test.ts sets them.
    sip: {
      host: '127.0.0.1',
      port: 0,
      tls_port: 0,
      options_interval_seconds: 3600,
      overload_busy_pct: 0,
      overload_loop_delay_ms: 0,
      overload_retransmit_pct: 0,
    },
    smpp: { host: '127.0.0.1', port: 0, tls_port: 0 },
    metrics: { host: '127.0.0.1', port: 0 },
    webhooks: { allow_private_targets: true },
    // Test suppliers, SMSCs and trunks listen on loopback, and tests name suppliers by documentation
    // addresses (RFC 5737, 3849) that reach nothing; attack tests set these to [].
    security: { private_supplier_networks: TEST_NETWORKS, private_trunk_networks: TEST_NETWORKS },
    // Each production-strength hash takes 32 MiB and tens of ms; the suite makes thousands.
    auth: { scrypt_cost: TEST_SCRYPT_COST },
  };
  // Sections merge key by key, so a test overriding one SIP key still listens on loopback port 0.
  const merged: Record<string, unknown> = { ...base };
  for (const [section, values] of Object.entries(overrides as Record<string, Record<string, unknown> | undefined>)) {
    merged[section] = { ...base[section], ...values };
  }
  const config = loadConfig({ overrides: merged as DeepPartial<Config> });
  const sharedTls = seedTls(config, state);
  const log = pino({ level: process.env['SVC_TEST_LOG'] ?? 'silent' });
  const daemon = await startDaemon(config, {
    log,
    ...(opts.clock ? { clock: opts.clock } : {}),
    ...(opts.lookup ? { lookup: opts.lookup } : {}),
  });
  t.teardown(async () => {
    await daemon.stop();
    rmSync(state, { recursive: true, force: true });
  });
  if (sharedTls) keepTls(state, sharedTls);
  const cert = readCert(state);
  const baseUrl = `https://127.0.0.1:${daemon.ports['http']}/api/v1`;
  return {
    ...daemon,
    config,
    baseUrl,
    https: (method, path, o = {}) => httpsCall(baseUrl + path, method, cert, o),
  };
}

/**
 * One self-signed certificate for every test daemon of the machine: each starts on a fresh state
 * directory, where the daemon would otherwise make (and import the generator for) a certificate of
 * its own. The first daemon's is kept under the temporary directory, named by the host name it was
 * made for; later daemons find it in their state directory, as a restarted daemon would. Returns
 * where the kept one is, or null when the daemon does not make its own.
 */
export function seedTls(config: Readonly<Config>, state: string): string | null {
  if (config.http.tls_mode !== 'self-signed') return null;
  const shared = join(tmpdir(), `svc-test-tls-${config.http.public_hostname.replace(/[^a-z0-9.-]/gi, '_')}`);
  const key = join(shared, 'server.key');
  const cert = join(shared, 'server.crt');
  if (existsSync(key) && existsSync(cert)) {
    mkdirSync(join(state, 'tls'), { recursive: true, mode: 0o700 });
    copyFileSync(key, join(state, 'tls', 'server.key'));
    copyFileSync(cert, join(state, 'tls', 'server.crt'));
  }
  return shared;
}

/**
 * Keeps the certificate a daemon made, if none is kept yet. The pair is written to a directory of
 * this process's and renamed into place whole: of several processes racing, the first rename wins
 * and no reader ever sees one process's key beside another's certificate.
 */
function keepTls(state: string, shared: string): void {
  if (existsSync(shared)) return;
  const partial = `${shared}.${process.pid}`;
  try {
    mkdirSync(partial, { recursive: true, mode: 0o700 });
    for (const file of ['server.key', 'server.crt']) copyFileSync(join(state, 'tls', file), join(partial, file));
    renameSync(partial, shared);
  } catch {
    // Another process kept its own first (or the state had none): later daemons use that.
    rmSync(partial, { recursive: true, force: true });
  }
}

function readCert(state: string): string | undefined {
  try {
    return readFileSync(join(state, 'tls', 'server.crt'), 'utf8');
  } catch {
    return undefined;
  }
}

export function httpsCall(
  url: string,
  method: string,
  ca: string | undefined,
  o: {
    token?: string;
    body?: unknown;
    /** A stream is piped as it is read (a body too large to build in memory). */
    rawBody?: string | Readable;
    headers?: Record<string, string>;
    insecure?: boolean;
  },
): Promise<HttpsResult> {
  const body = o.rawBody ?? (o.body === undefined ? undefined : JSON.stringify(o.body));
  const headers: Record<string, string> = { ...(o.headers ?? {}) };
  if (body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type'))
    headers['content-type'] = 'application/json';
  if (o.token) headers['authorization'] = `Bearer ${o.token}`;
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      url,
      {
        method,
        headers,
        ca,
        servername: 'localhost',
        checkServerIdentity: () => undefined,
        ...(o.insecure ? { rejectUnauthorized: false } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
      },
    );
    req.on('error', reject);
    if (typeof body === 'object') {
      body.on('error', (err) => req.destroy(err));
      body.pipe(req);
      return;
    }
    if (body !== undefined) req.write(body);
    req.end();
  });
}
