// Test helper: runs test/fixtures/smpp/smsc.pl (Net::SMPP) as a child process and follows its event lines.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const script = fileURLToPath(new URL('../fixtures/smpp/smsc.pl', import.meta.url));

export interface PerlSmsc {
  port: number;
  lines: string[];
  /** Resolves with the nth line (already seen or coming) that matches; n defaults to 1. */
  waitFor(re: RegExp, nth?: number): Promise<string>;
  /**
   * `mo FROM TO TEXT`: a mobile-originated deliver_sm over every bound connection; `gather N`: the
   * next N accepted submits are answered together once the Nth has come.
   */
  send(command: 'disconnect' | 'release' | 'quit' | `mo ${string} ${string} ${string}` | `gather ${number}`): void;
  stop(): Promise<void>;
}

/** `refuse`: every submit is refused (ESME_RSUBMITFAIL), as a supplier a send fails over from. */
export async function startPerlSmsc(
  systemId: string,
  password: string,
  opts: { refuse?: boolean } = {},
): Promise<PerlSmsc> {
  const args = [script, systemId, password, ...(opts.refuse ? ['refuse'] : [])];
  const child = spawn('perl', args, { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines: string[] = [];
  const waiters: Array<{ re: RegExp; left: number; resolve: (l: string) => void; reject: (e: Error) => void }> = [];
  const rl = createInterface({ input: child.stdout });
  let portResolve: (p: number) => void = () => {};
  const portP = new Promise<number>((r) => (portResolve = r));
  rl.on('line', (line) => {
    const m = /^LISTENING (\d+)/.exec(line);
    if (m) return portResolve(Number(m[1]));
    lines.push(line);
    for (let i = waiters.length - 1; i >= 0; i--) {
      const w = waiters[i]!;
      if (w.re.test(line) && --w.left === 0) {
        waiters.splice(i, 1);
        w.resolve(line);
      }
    }
  });
  const exited = once(child, 'exit');
  let gone = false;
  // A dead SMSC fails whoever waits for its lines instead of leaving the test hanging.
  child.once('exit', (code, signal) => {
    gone = true;
    for (const w of waiters.splice(0)) w.reject(new Error(`smsc.pl exited (${code ?? signal}) before ${w.re}`));
  });
  const port = await portP;
  return {
    port,
    lines,
    waitFor(re, nth = 1) {
      const seen = lines.filter((l) => re.test(l));
      if (seen.length >= nth) return Promise.resolve(seen[nth - 1] as string);
      if (gone) return Promise.reject(new Error(`smsc.pl exited before ${re}`));
      return new Promise((resolve, reject) => waiters.push({ re, left: nth - seen.length, resolve, reject }));
    },
    send(command) {
      child.stdin.write(`${command}\n`);
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await exited;
    },
  };
}
