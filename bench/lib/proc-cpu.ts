import { readFileSync } from 'node:fs';

/** CPU seconds (utime + stime from /proc/<pid>/stat) of these processes; one that is gone or elsewhere counts 0. */
export function procCpuSeconds(pids: readonly number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const x = f.slice(f.lastIndexOf(')') + 2).split(' ');
      ticks += Number(x[11]) + Number(x[12]);
    } catch {
      /* gone, or a server on another host */
    }
  }
  return ticks / 100;
}

/** The machine's CPU time so far from /proc/stat's first line, in ticks: all of it, and the idle part (idle + iowait). */
export function machineTicks(): { total: number; idle: number } {
  const f = readFileSync('/proc/stat', 'utf8');
  const x = f.slice(0, f.indexOf('\n')).split(/\s+/).slice(1, 9).map(Number);
  return { total: x.reduce((a, b) => a + b, 0), idle: x[3]! + x[4]! };
}

/** The share of the machine's CPU left idle since `before` (0 to 1). */
export function idleShareSince(before: { total: number; idle: number }): number {
  const after = machineTicks();
  return (after.idle - before.idle) / Math.max(1, after.total - before.total);
}
