// Runs the test files of the tree built by scripts/build-tests.mjs, a few at a time, each as a
// plain `node` process.
//
// Why not tap's own runner: it starts every test process with two module-loader hooks of its own
// (processinfo and mock), which send each of a test's ~1,000 module loads through a loader
// thread; with ~200 test processes that was about half of the suite's CPU (measured on one
// daemon test: 9.6 s of CPU under the runner with tsx, 5.0 s as plain node on the built tree).
// The files are ordinary tap tests: each prints TAP and its own totals and exits non-zero on a
// failure, so `npx tap test/x.test.ts` still runs any one of them from the sources.
//
// usage: run-tests.mjs [--jobs N] [--max-jobs N] [--save FAILED_LIST] [--out OUTPUT] [--source-maps] [--update-seed] [test/x.test.ts ...]
//   --jobs (TEST_JOBS, 3) files run at a time, and up to --max-jobs (TEST_MAX_JOBS, 5) while the
//   cores are idle. With no files, every test/**/*.test.ts. --source-maps runs node with --enable-source-maps, so
//   stacks name lines of the sources instead of the bundles: `make test` asks for it on the re-run
//   of failed files only, since reading the maps costs every process about a quarter of a short
//   test's CPU (the first run's failures still show the bundle's code around each failing line).
//   The output file gets every file's TAP and, last, the sum of their totals in tap's form
//   (`# { total: N, pass: N, fail: N, skip: N }`); the failed list gets one source path a line.
//   Slowest files start first (times of the last run). --update-seed also writes the times of the
//   files run (passed ones only: a failure's time says little) into the committed seed,
//   test/test-times.json, and drops its entries for files that no longer exist. Each file's line gives its wall time and
//   its CPU time, and the closing line the sums.
import { Buffer } from 'node:buffer';
import { spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { clearInterval, clearTimeout, setInterval, setTimeout } from 'node:timers';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { tapTotals } from './tap-totals.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const built = join(root, 'var', 'test-build');
const timesFile = join(root, 'var', 'test-times.json');
// Committed so that a fresh clone also starts its slowest files first.
const seedTimesFile = join(root, 'test', 'test-times.json');

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    jobs: { type: 'string', default: process.env['TEST_JOBS'] ?? '3' },
    'max-jobs': { type: 'string', default: process.env['TEST_MAX_JOBS'] ?? '5' },
    save: { type: 'string' },
    out: { type: 'string' },
    'source-maps': { type: 'boolean', default: false },
    'update-seed': { type: 'boolean', default: false },
  },
});
// Three on two cores: the longest files spend most of their wall time waiting (sipp scenarios,
// gather and ring windows, rate windows: 10–25 % of a core each), so a third file fills the idle
// core time. Measured on the same 11 files, with other work on the machine (load 12 and 20): 220 s
// at 2 at a time, 152 s at 3, CPU 70 s and 62 s, no failures.
const jobs = Math.max(1, Number(values.jobs) || 3);
// Beyond `jobs`, up to `maxJobs` run while the cores sit idle: most of the suite's wall time is
// waiting (the 274 files took 1,474 s of wall and 569 s of CPU, three at a time in 492 s), and
// which files wait is known only while they run. A file is added only after two idle readings
// in a row, so a busy stretch never gets more than it had.
const maxJobs = Math.max(jobs, Number(values['max-jobs']) || jobs);
const nodeArgs = values['source-maps'] ? ['--enable-source-maps'] : [];
const timeoutSeconds = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).tap?.timeout ?? 180;
// The tests' temporary files (each daemon's state directory, the embedded PostgreSQL clusters of
// the tests of `make run`'s path, sipp's scenarios) go to tmpfs, in a directory of this run's, open
// to all as /tmp is, removed at the end. On the machine's ext4 (no journal), files created soon after
// many were deleted cost kernel CPU (the allocator skips each recently deleted inode): measured on
// test/main/first-start.test.ts and test/db/embedded-root.test.ts, 7.1–10.0 and 12.4–17.0 s of CPU
// with /tmp, 6.1–6.3 and 7.4–9.5 s on tmpfs.
// A run that was killed leaves its directory behind: removed by the next run once its process is gone.
function tmpfsDir() {
  try {
    for (const entry of readdirSync('/dev/shm')) {
      const pid = /^svc-test-tmp-(\d+)-/.exec(entry)?.[1];
      if (pid && !alive(Number(pid))) rmSync(join('/dev/shm', entry), { recursive: true, force: true });
    }
    const dir = mkdtempSync(`/dev/shm/svc-test-tmp-${process.pid}-`);
    chmodSync(dir, 0o1777);
    return dir;
  } catch {
    return null;
  }
}
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}
const tmp = tmpfsDir();

function testFiles(dir) {
  const found = [];
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (path !== join('test', 'helpers') && path !== join('test', 'fixtures')) found.push(...testFiles(path));
    } else if (entry.name.endsWith('.test.ts')) found.push(path);
  }
  return found;
}

function readTimes(file) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return {};
  }
}

const files = (positionals.length ? positionals.map((f) => relative(root, resolve(f))) : testFiles('test')).sort();
const previous = { ...readTimes(seedTimesFile), ...readTimes(timesFile) };
// A file never timed (new since the times were saved) starts first: it may be long, and a long
// file started last leaves one job running alone while the others have finished.
const queue = [...files].sort((a, b) => (previous[b] ?? Infinity) - (previous[a] ?? Infinity) || a.localeCompare(b));

/**
 * CPU seconds (user + system) of this process's children reaped so far, from /proc (Linux; null
 * elsewhere). A test's CPU, its daemons', sipp's and its other waited-for children's included,
 * is what this grows by when its process is reaped: the figure to compare builds by on a machine
 * whose load makes wall times noisy (PostgreSQL's share is not in it).
 */
// USER_HZ, which Linux fixes at 100 for what /proc reports whatever the kernel's own tick.
const clockTicks = 100;
function childrenCpu() {
  try {
    const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
    // Fields 16 and 17 (cutime, cstime), counted from the state field, which is field 3.
    return (Number(fields[13]) + Number(fields[14])) / clockTicks;
  } catch {
    return null;
  }
}
let lastCpu = childrenCpu();

function runFile(file) {
  const script = join(built, file.replace(/\.ts$/, '.js'));
  const started = performance.now();
  return new Promise((done) => {
    // A process group of its own, so a test that hangs is stopped with the peers it started.
    const child = spawn(process.execPath, [...nodeArgs, script], {
      cwd: root,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, TAP: '1', TAP_TIMEOUT: String(timeoutSeconds), ...(tmp ? { TMPDIR: tmp } : {}) },
    });
    const chunks = [];
    child.stdout.on('data', (c) => chunks.push(c));
    child.stderr.on('data', (c) => chunks.push(c));
    let timedOut = false;
    const kill = (signal) => {
      try {
        process.kill(-child.pid, signal);
      } catch {
        // already gone
      }
    };
    // tap ends a test that outlives TAP_TIMEOUT itself; this is for a process that does not exit.
    const timer = setTimeout(
      () => {
        timedOut = true;
        kill('SIGTERM');
        setTimeout(() => kill('SIGKILL'), 5_000).unref();
      },
      (timeoutSeconds + 30) * 1000,
    );
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const output = Buffer.concat(chunks).toString('utf8');
      const totals = tapTotals(output);
      // A file whose every test is skipped may print no totals; its exit code still tells.
      const ok = code === 0 && !timedOut && !totals?.fail;
      const cpuNow = childrenCpu();
      const cpu = cpuNow === null || lastCpu === null ? null : cpuNow - lastCpu;
      lastCpu = cpuNow;
      done({ file, ok, code, signal, timedOut, output, totals, cpu, seconds: (performance.now() - started) / 1000 });
    });
  });
}

const results = [];
function report(r) {
  results.push(r);
  const asserts = r.totals ? `${r.totals.pass ?? 0}/${r.totals.total ?? 0} asserts` : 'no totals';
  const why = r.ok ? '' : r.timedOut ? ' (timed out)' : ` (exit ${r.code ?? r.signal})`;
  const cpu = r.cpu === null ? '' : `, ${r.cpu.toFixed(1)} s CPU`;
  console.log(`${r.ok ? 'ok  ' : 'FAIL'} ${r.file}  ${asserts}  ${r.seconds.toFixed(1)} s${cpu}${why}`);
}

/** The machine's idle share since the last call, from /proc/stat (null where there is none). */
function idleMeter() {
  const read = () => {
    try {
      const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
      // idle and iowait against every field up to steal (guest time is already in user).
      return { idle: cpu[3] + cpu[4], total: cpu.slice(0, 8).reduce((a, b) => a + b, 0) };
    } catch {
      return null;
    }
  };
  let last = read();
  return () => {
    const now = read();
    if (!now || !last) return null;
    const share = now.total > last.total ? (now.idle - last.idle) / (now.total - last.total) : 0;
    last = now;
    return share;
  };
}

const IDLE_TO_ADD = 0.35;
const wallStarted = performance.now();
let running = 0;
let mostRunning = 0;
await new Promise((allDone) => {
  const start = () => {
    const file = queue.shift();
    if (!file) return false;
    running += 1;
    mostRunning = Math.max(mostRunning, running);
    void runFile(file).then((r) => {
      running -= 1;
      report(r);
      while (running < jobs) if (!start()) break;
      if (running === 0 && queue.length === 0) {
        clearInterval(meter);
        allDone();
      }
    });
    return true;
  };
  const idle = idleMeter();
  let idleReadings = 0;
  const meter = setInterval(() => {
    const share = idle();
    idleReadings = share !== null && share > IDLE_TO_ADD ? idleReadings + 1 : 0;
    if (idleReadings >= 2 && running < maxJobs && start()) idleReadings = 0;
  }, 1000);
  for (let i = 0; i < Math.min(jobs, files.length); i++) start();
  if (files.length === 0) {
    clearInterval(meter);
    allDone();
  }
});

if (tmp) rmSync(tmp, { recursive: true, force: true });
const failed = results.filter((r) => !r.ok).sort((a, b) => a.file.localeCompare(b.file));
for (const r of failed) {
  console.log(`\n==== ${r.file} failed; its output follows`);
  console.log(r.output.trimEnd());
}
const sum = { total: 0, pass: 0, fail: 0, skip: 0, todo: 0 };
for (const r of results) {
  for (const k of Object.keys(sum)) sum[k] += r.totals?.[k] ?? 0;
  // A file that died without totals or exited non-zero counts as at least one failure.
  if (!r.ok && !(r.totals?.fail > 0)) sum.fail += 1;
}
const totalsLine = `# { ${Object.entries(sum)
  .map(([k, v]) => `${k}: ${v}`)
  .join(', ')} }`;
const cpuTotal = results.every((r) => r.cpu !== null) ? results.reduce((sum, r) => sum + r.cpu, 0) : null;
console.log(
  `\n${results.length} files, ${failed.length} failed, ${((performance.now() - wallStarted) / 1000).toFixed(0)} s wall` +
    `${cpuTotal === null ? '' : `, ${cpuTotal.toFixed(0)} s CPU`} with ${jobs} at a time (up to ${mostRunning} while idle)`,
);
console.log(totalsLine);

mkdirSync(join(root, 'var'), { recursive: true });
if (values.out) {
  writeFileSync(values.out, `${results.map((r) => `# file: ${r.file}\n${r.output}`).join('\n')}\n${totalsLine}\n`);
}
if (values.save) writeFileSync(values.save, failed.map((r) => `${r.file}\n`).join(''));
const times = existsSync(timesFile) ? readTimes(timesFile) : {};
for (const r of results) times[r.file] = Math.round(r.seconds * 10) / 10;
writeFileSync(timesFile, `${JSON.stringify(times, null, 1)}\n`);
if (values['update-seed']) {
  const seed = readTimes(seedTimesFile);
  for (const r of results) if (r.ok) seed[r.file] = Math.round(r.seconds * 10) / 10;
  const kept = Object.keys(seed)
    .filter((f) => existsSync(join(root, f)))
    .sort();
  writeFileSync(seedTimesFile, `${JSON.stringify(Object.fromEntries(kept.map((f) => [f, seed[f]])), null, 1)}\n`);
}
process.exit(failed.length ? 1 : 0);
