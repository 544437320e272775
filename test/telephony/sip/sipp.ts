/** Runs real sipp peers for the B2BUA tests: scenario templates from test/fixtures/sipp, killed in teardown. */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import dgram from 'node:dgram';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const FIXTURES = new URL('../../fixtures/sipp/', import.meta.url);

export const fixture = (name: string): string => readFileSync(new URL(name, FIXTURES), 'utf8');

export function fill(text: string, vars: Record<string, string>): string {
  return text.replace(/\{\{(\w+)\}\}/g, (_m, k: string) => vars[k] ?? '');
}

interface Teardown {
  teardown(fn: () => void | Promise<void>): void;
}

/** A port free for both UDP and TCP on 127.0.0.1. */
export async function freePort(): Promise<number> {
  for (;;) {
    const srv = net.createServer();
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    const port = (srv.address() as net.AddressInfo).port;
    const udp = dgram.createSocket('udp4');
    const ok = await new Promise<boolean>((r) => {
      udp.once('error', () => r(false));
      udp.bind(port, '127.0.0.1', () => r(true));
    });
    await new Promise<void>((r) => srv.close(() => r()));
    if (ok) {
      await new Promise<void>((r) => udp.close(() => r()));
      return port;
    }
    udp.close();
  }
}

export interface SippRun {
  port: number;
  exited: Promise<number>;
  output(): string;
}

/** Starts sipp with a scenario text; the process is killed at teardown if still running. */
export async function sipp(t: Teardown, scenario: string, args: string[], opts: { calls?: number; timeout?: string } = {}): Promise<SippRun> {
  const dir = mkdtempSync(join(tmpdir(), 'sipp-'));
  const file = join(dir, 'scenario.xml');
  writeFileSync(file, scenario);
  const port = await freePort();
  const child = spawn('sipp', [...args, '-sf', file, '-i', '127.0.0.1', '-p', String(port), '-m', String(opts.calls ?? 1), '-nostdin', '-timeout', opts.timeout ?? '15s', '-timeout_error', '-nd'], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number>((resolve) => child.once('exit', (code) => resolve(code ?? -1)));
  t.teardown(async () => {
    if (child.exitCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });
  // Wait until sipp holds its port, so peers do not send into the void.
  const started = Date.now();
  while (child.exitCode === null && Date.now() - started < 5000) {
    const probe = dgram.createSocket('udp4');
    const taken = await new Promise<boolean>((r) => {
      probe.once('error', () => r(true));
      probe.bind(port, '127.0.0.1', () => r(false));
    });
    try {
      probe.close();
    } catch {
      // A socket whose bind failed is already closed.
    }
    if (taken) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  return { port, exited, output: () => out };
}
