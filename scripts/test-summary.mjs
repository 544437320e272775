// Prints tap's closing totals as one plain line, "N passed, N failed", so a run that executed
// nothing is visible. Reads tap's output of the run and, when test files were re-run once, of
// the re-run: then the failures counted are the re-run's.
import { existsSync, readFileSync } from 'node:fs';

function totals(file) {
  const text = readFileSync(file, 'utf8');
  const m = [...text.matchAll(/^# \{ (total: .*) \}$/gm)].pop();
  if (!m) return null;
  return Object.fromEntries(m[1].split(', ').map((kv) => kv.split(': ')).map(([k, v]) => [k, Number(v)]));
}

const first = totals(process.argv[2]);
if (!first) {
  console.log('0 passed, 1 failed');
  process.exit(1);
}
let failed = first.fail ?? 0;
const rerunFile = process.argv[3];
if (rerunFile && existsSync(rerunFile)) {
  const rerun = totals(rerunFile);
  console.log(`first run: ${first.pass ?? 0} passed and ${first.fail ?? 0} failed; re-run of the failed files: ${rerun?.pass ?? 0} passed and ${rerun ? (rerun.fail ?? 0) : "no"} failed`);
  failed = rerun ? (rerun.fail ?? 0) : 1;
}
const line = `${first.pass ?? 0} passed, ${failed} failed`;
console.log(first.skip ? `${line}, ${first.skip} skipped` : line);
