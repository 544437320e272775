// Prints tap's closing totals as one plain line, "N passed, N failed", so a run that
// executed nothing is visible. Reads tap's output from the file named on the command line.
import { readFileSync } from 'node:fs';

const text = readFileSync(process.argv[2], 'utf8');
const m = [...text.matchAll(/^# \{ (total: .*) \}$/gm)].pop();
if (!m) {
  console.log('0 passed, 1 failed');
  process.exit(1);
}
const counts = Object.fromEntries(m[1].split(', ').map((kv) => kv.split(': ')).map(([k, v]) => [k, Number(v)]));
const line = `${counts.pass ?? 0} passed, ${counts.fail ?? 0} failed`;
console.log(counts.skip ? `${line}, ${counts.skip} skipped` : line);
