import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { loadConfig, type DeepPartial } from '../../../src/config/load.js';
import type { Config } from '../../../src/config/schema.js';
import { seedTls, TEST_NETWORKS, TEST_SCRYPT_COST } from '../../helpers/daemon.js';
import { nodeScriptArgs } from '../../helpers/node-script.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

/**
 * The settings of a second daemon on an existing test database: loopback on free ports, its own
 * state directory (its own node id, kept across a restart with the same settings), `extra` merged on top section by section.
 */
export function childDaemonConfig(
  t: Teardown,
  databaseUrl: string,
  extra: DeepPartial<Config> = {},
): DeepPartial<Config> {
  const state = mkdtempSync(join(tmpdir(), 'svc-child-state-'));
  t.teardown(() => rmSync(state, { recursive: true, force: true }));
  const base: Record<string, Record<string, unknown>> = {
    paths: { state },
    log: { level: 'silent' },
    // Schemas compile when a route is first called, as in the in-process test daemons: compiling
    // all ~500 routes' at start was about 1.8 s of each child's 2.8 s of start-up CPU.
    http: { host: '127.0.0.1', port: 0, schema_compile: 'first_use' },
    database: { url: databaseUrl, pool_max: 4 },
    // Overload rules off as in test/helpers/daemon.ts: a starved test process is no overloaded daemon.
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
    billing: { require_route_for_sub_accounts: false },
    // The suppliers are sipp on loopback: the outbound guard lets them through only when allowed.
    security: { private_supplier_networks: TEST_NETWORKS, private_trunk_networks: TEST_NETWORKS },
    auth: { scrypt_cost: TEST_SCRYPT_COST },
  };
  // Section by section, so `extra` changing one SIP setting keeps the daemon on loopback port 0.
  const merged: Record<string, unknown> = { ...base };
  for (const [section, values] of Object.entries(extra as Record<string, Record<string, unknown> | undefined>)) {
    merged[section] = { ...base[section], ...values };
  }
  return merged as DeepPartial<Config>;
}

const CHILD = nodeScriptArgs(import.meta.url, 'crash-child');

/**
 * A daemon in its own process (crash-child.ts) that a crash test can SIGKILL mid-call (`kill`), or
 * stop as SIGTERM stops one (`stop`: its live calls hung up and billed; SIGKILL after 20 s).
 */
export async function spawnChildDaemon(
  t: Teardown,
  overrides: DeepPartial<Config>,
): Promise<{ pid: number; ports: Record<string, number>; kill(): Promise<void>; stop(): Promise<void> }> {
  seedChildTls(overrides);
  const child = spawn(process.execPath, [...CHILD, JSON.stringify(overrides)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const kill = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const late = setTimeout(() => child.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(late);
  };
  t.teardown(kill);
  const first = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', () => reject(new Error('child daemon exited before listening')));
  });
  return { pid: child.pid ?? -1, ports: JSON.parse(first) as Record<string, number>, kill, stop };
}

/**
 * A child on a fresh state directory gets the certificate the test daemons share (see seedTls)
 * instead of making one; a restarted child keeps the one its state directory already has.
 */
function seedChildTls(overrides: DeepPartial<Config>): void {
  const state = overrides.paths?.state;
  if (!state || existsSync(join(state, 'tls', 'server.key'))) return;
  seedTls(loadConfig({ overrides }), state);
}
