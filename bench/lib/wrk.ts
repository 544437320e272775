import { spawn } from 'node:child_process';

export interface WrkResult {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
}

/** Runs wrk (Debian `wrk`) against a URL and reads its latency distribution; async so a server in this process keeps serving. */
export async function runWrk(
  url: string,
  opts: {
    seconds: number;
    connections: number;
    threads?: number;
    headers?: Record<string, string>;
    /** A wrk Lua script (`-s`) and the arguments after `--` its init(args) receives. */
    script?: string;
    scriptArgs?: string[];
  },
): Promise<WrkResult> {
  const args = ['-t', String(opts.threads ?? 1), '-c', String(opts.connections), '-d', `${opts.seconds}s`, '--latency'];
  for (const [k, v] of Object.entries(opts.headers ?? {})) args.push('-H', `${k}: ${v}`);
  if (opts.script) args.push('-s', opts.script);
  const child = spawn('wrk', [...args, url, ...(opts.script && opts.scriptArgs ? ['--', ...opts.scriptArgs] : [])]);
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', resolve);
  });
  if (code !== 0) throw new Error(`wrk failed: ${err}`);
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN);
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0);
  return { requestsPerSecond: rps, p50Ms: latency(out, '50%'), p99Ms: latency(out, '99%'), non2xx };
}

function latency(out: string, pct: string): number {
  const m = new RegExp(`\\s${pct.replace('%', '%')}\\s+([\\d.]+)(us|ms|s)`).exec(out);
  if (!m) return NaN;
  const v = Number(m[1]);
  return m[2] === 'us' ? v / 1000 : m[2] === 's' ? v * 1000 : v;
}
