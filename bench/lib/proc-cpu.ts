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
