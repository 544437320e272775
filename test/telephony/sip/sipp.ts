/** Runs real sipp peers for the B2BUA tests: scenario templates from test/fixtures/sipp, killed in teardown. */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import dgram from 'node:dgram';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const FIXTURES = new URL('../../fixtures/sipp/', import.meta.url);

export const fixture = (name: string): string => readFileSync(new URL(name, FIXTURES), 'utf8');

export function fill(text: string, vars: Record<string, string>): string {
  return text.replace(/\{\{(\w+)\}\}/g, (_m, k: string) => vars[k] ?? '');
}

/**
 * A UAC scenario that takes a 503 (or each of `codes`) to any of its INVITEs as a caller would: it
 * ACKs it and ends the call (sipp counts it successful; the scenario's own counts show it). sipp run
 * with -nd (no default behaviours) otherwise treats the refusal as unexpected, never ACKs it and keeps
 * retransmitting the INVITE until its timers give up, which no RFC 3261 caller does (§17.1.1.2).
 */
export function acceptingRefusal(scenario: string, codes: readonly number[] = [503]): string {
  const trying = '<recv response="100" optional="true"/>';
  if (!scenario.includes(trying) || !scenario.includes('</scenario>'))
    throw new Error('acceptingRefusal: no optional 100 to put the refusals beside');
  const refusals = codes.map((c) => `\n  <recv response="${c}" optional="true" next="refused"/>`).join('');
  return scenario
    .replaceAll(trying, `${trying}${refusals}`)
    .replace('</scenario>', `${fixture('uac-refused.block')}</scenario>`);
}

interface Teardown {
  teardown(fn: () => void | Promise<void>): void;
}

/** A port free for both UDP and TCP on 127.0.0.1. */
/** A sipp UAS scenario answering one OPTIONS with `code` (sipp counts each probe as a call). */
export const optionsUas = (code: number): string => `<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="options ${code}">
  <recv request="OPTIONS"/>
  <send>
    <![CDATA[
      SIP/2.0 ${code} ${code === 200 ? 'OK' : 'Probe Answer'}
      [last_Via:]
      [last_From:]
      [last_To:];tag=[pid]SIPpTag01[call_number]
      [last_Call-ID:]
      [last_CSeq:]
      Content-Length: 0

    ]]>
  </send>
</scenario>`;

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

/**
 * A media port for a sipp peer (`-mp`). sipp binds four UDP ports from it (audio RTP and RTCP,
 * video RTP and RTCP), and `freePort` checks only the first: a port from the kernel's ephemeral
 * range can have its third taken by any socket. So it is an even port from 28100-32699, between
 * the tests' daemon RTP ranges (10000-28000, 40000-60000) and the ephemeral range (32768-),
 * with all four free when picked.
 */
export async function sippMediaPort(): Promise<number> {
  for (;;) {
    const port = 28100 + 2 * Math.floor(Math.random() * 2300);
    const held: dgram.Socket[] = [];
    let free = true;
    for (let p = port; p < port + 4 && free; p++) {
      const udp = dgram.createSocket('udp4');
      free = await new Promise<boolean>((r) => {
        udp.once('error', () => r(false));
        udp.bind(p, '127.0.0.1', () => r(true));
      });
      if (free) held.push(udp);
      else udp.unref();
    }
    await Promise.all(held.map((u) => new Promise<void>((r) => u.close(() => r()))));
    if (free) return port;
  }
}

export interface SippRun {
  port: number;
  exited: Promise<number>;
  output(): string;
}

/** Socket inodes the process holds (Linux /proc). */
function socketInodes(pid: number): Set<string> {
  const inodes = new Set<string>();
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m) inodes.add(m[1]!);
      } catch {
        // The descriptor closed between listing and reading.
      }
    }
  } catch {
    // The process is gone.
  }
  return inodes;
}

/**
 * The socket tables of /proc/net where sipp's own SIP socket shows, from its `-t` transport (UDP
 * when none is given). Only those are read: /proc/net/tcp lists every TCP socket of the machine
 * and cost about 6 ms of CPU a read, and a sipp start polled it every 10 ms until sipp had bound.
 */
function socketTables(args: string[]): string[] {
  const at = args.indexOf('-t');
  const transport = at < 0 ? 'u1' : (args[at + 1] ?? '');
  if (transport.startsWith('u')) return ['/proc/net/udp'];
  if (transport.startsWith('t') || transport.startsWith('l')) return ['/proc/net/tcp'];
  return ['/proc/net/udp', '/proc/net/tcp'];
}

/**
 * True once `pid` itself holds a socket on `port` in one of `tables`. Read from /proc rather than by
 * trying to bind the port: a probe bind that lands before sipp's own makes sipp fail with
 * EADDRINUSE and exit, which was the flake in the health tests (the peer gone before the first OPTIONS).
 */
function holdsPort(pid: number, port: number, tables: string[]): boolean {
  const inodes = socketInodes(pid);
  if (!inodes.size) return false;
  const hex = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  for (const table of tables) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols[1]?.endsWith(hex) && inodes.has(cols[9] ?? '')) return true;
    }
  }
  return false;
}

/** sipp's own words when its port was taken between freePort() and its bind. */
const BIND_FAILURE = /Unable to bind|Address already in use/;

/**
 * Starts sipp with a scenario text; the process is killed at teardown if still running. Resolves once
 * sipp holds its port; if another process took the port first (sipp exits with a bind error), starts
 * again on a fresh port, so a peer never waits on a sipp that is not there.
 */
export async function sipp(
  t: Teardown,
  scenario: string,
  args: string[],
  opts: { calls?: number; timeout?: string; /** First port to try (tests of this helper). */ port?: number } = {},
): Promise<SippRun> {
  const dir = mkdtempSync(join(tmpdir(), 'sipp-'));
  const file = join(dir, 'scenario.xml');
  writeFileSync(file, scenario);
  let current: ChildProcess | null = null;
  let currentExit: Promise<number> | null = null;
  t.teardown(async () => {
    if (current && current.exitCode === null && current.signalCode === null) {
      current.kill('SIGKILL');
      await currentExit;
    }
    rmSync(dir, { recursive: true, force: true });
  });
  const tables = socketTables(args);
  for (let attempt = 1; ; attempt++) {
    const port = attempt === 1 && opts.port ? opts.port : await freePort();
    const child = spawn(
      'sipp',
      [
        ...args,
        '-sf',
        file,
        '-i',
        '127.0.0.1',
        '-p',
        String(port),
        '-m',
        String(opts.calls ?? 1),
        '-nostdin',
        '-timeout',
        opts.timeout ?? '15s',
        '-timeout_error',
        '-nd',
      ],
      {
        cwd: dir,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    // 'close', not 'exit': the output is complete by then, which the bind-failure check reads.
    const exited = new Promise<number>((resolve) => child.once('close', (code) => resolve(code ?? -1)));
    current = child;
    currentExit = exited;
    let gone = false;
    void exited.then(() => (gone = true));
    const started = Date.now();
    while (!gone && child.pid !== undefined && !holdsPort(child.pid, port, tables) && Date.now() - started < 5000) {
      await new Promise((r) => setTimeout(r, 10));
    }
    if (gone && BIND_FAILURE.test(out) && attempt < 5) continue;
    return { port, exited, output: () => out };
  }
}
