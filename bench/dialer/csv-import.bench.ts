/**
 * The streamed CSV reader of the contact and do-not-call imports (`csvBatches`), alone: a file of
 * `rows` contact rows (`name,number,city`, as the import test sends) cut in 64 KiB chunks that
 * arrive one per event-loop turn (as a socket's would), read `runs` times. Prints the median and best time per run, rows per second, the longest event-loop
 * stall seen by a 10 ms timer while it reads, and `uptime` (the machine is shared).
 *
 * Usage: node --import tsx bench/dialer/csv-import.bench.ts [rows=1000000] [runs=5]
 */
import { execFileSync } from 'node:child_process';
import { Readable } from 'node:stream';
import { setImmediate as turn } from 'node:timers/promises';
import { csvBatches } from '../../src/http/csv-body.js';

const [rows = 1_000_000, runs = 5] = process.argv.slice(2).map(Number);
const uptime = () => execFileSync('uptime', { encoding: 'utf8' }).trim();

function file(): Buffer[] {
  const text: string[] = ['name,number,city\n'];
  for (let i = 0; i < rows; i++) text.push(`Person ${i},+447${String(i).padStart(9, '0')},Leeds\n`);
  const all = Buffer.from(text.join(''));
  const chunks: Buffer[] = [];
  for (let at = 0; at < all.length; at += 65_536) chunks.push(all.subarray(at, at + 65_536));
  return chunks;
}

/** The chunks, one per turn of the event loop. */
async function* arriving(chunks: Buffer[]) {
  for (const c of chunks) {
    await turn();
    yield c;
  }
}

async function main() {
  console.log(`# ${uptime()}`);
  const chunks = file();
  const times: number[] = [];
  const cpu: number[] = [];
  let stall = 0;
  for (let run = 0; run < runs; run++) {
    let last = performance.now();
    const probe = setInterval(() => {
      const now = performance.now();
      stall = Math.max(stall, now - last - 10);
      last = now;
    }, 10);
    const started = performance.now();
    const cpuAt = process.cpuUsage();
    let n = 0;
    let lastRow = 0;
    for await (const batch of csvBatches(Readable.from(arriving(chunks)))) {
      n += batch.length;
      lastRow = batch[batch.length - 1]!.row;
    }
    times.push(performance.now() - started);
    const used = process.cpuUsage(cpuAt);
    cpu.push((used.user + used.system) / 1000);
    clearInterval(probe);
    stall = Math.max(stall, performance.now() - last - 10);
    if (n !== rows + 1 || lastRow !== rows + 1) throw new Error(`read ${n} rows, last line ${lastRow}`);
  }
  times.sort((a, b) => a - b);
  cpu.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)]!;
  console.log(
    `csv read: rows=${rows} runs=${runs} median_ms=${median.toFixed(0)} best_ms=${times[0]!.toFixed(0)} ` +
      `cpu_median_ms=${cpu[Math.floor(cpu.length / 2)]!.toFixed(0)} ` +
      `rows_per_s=${Math.round((rows / median) * 1000)} max_stall_ms=${stall.toFixed(0)}`,
  );
  console.log(`# ${uptime()}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
