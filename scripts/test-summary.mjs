// Closes `make test` with tap's totals. The last line is plain, "N passed, N failed", so a run
// that executed nothing is visible and CI can read it; the line before it names every test file
// that failed on its first run, so a re-run that passes never hides a defect.
//
// usage: test-summary.mjs FIRST_OUTPUT FIRST_FAILED_LIST [RERUN_OUTPUT RERUN_FAILED_LIST]
// The lists are tap's --save files (one test file a line). Passed counts the first run's passes;
// failed counts what still fails after the re-run, or the first run's failures without one.
import { existsSync, readFileSync } from 'node:fs';
import { tapTotals } from './tap-totals.mjs';

function totals(file) {
  if (!file || !existsSync(file)) return null;
  return tapTotals(readFileSync(file, 'utf8'));
}

function fileList(file) {
  if (!file || !existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
}

// Why tests were skipped, counted by reason (tap's `# SKIP <reason>`), so no skip goes unseen: a
// machine without Asterisk says so here instead of passing with the engine untested.
function skipReasons(file) {
  const counts = new Map();
  for (const m of readFileSync(file, 'utf8').matchAll(/# SKIP\b ?(.*)$/gm)) {
    const reason = m[1].trim() || 'no reason given';
    if (reason.startsWith('filter:')) continue;
    counts.set(reason, (counts.get(reason) ?? 0) + 1);
  }
  if (counts.size === 0) return 'reasons not reported';
  return [...counts].map(([reason, n]) => `${n} × ${reason}`).join('; ');
}

const [firstOut, firstFailedList, rerunOut, rerunFailedList] = process.argv.slice(2);
const first = totals(firstOut);
if (!first) {
  console.log('flaky: unknown (the first run printed no totals)');
  console.log('0 passed, 1 failed');
  process.exit(1);
}
const firstFailed = fileList(firstFailedList);
const reran = rerunOut !== undefined && existsSync(rerunOut);
let failed = first.fail ?? 0;
let named = firstFailed.map((f) => `${f} (failed)`);
if (reran) {
  const rerun = totals(rerunOut);
  const still = new Set(fileList(rerunFailedList));
  // A re-run without totals (it crashed) leaves every file it ran as failing.
  const stillFailing = (f) => !rerun || still.has(f);
  failed = rerun ? (rerun.fail ?? 0) : Math.max(1, failed);
  named = firstFailed.map((f) => `${f} (${stillFailing(f) ? 'failed twice' : 'failed, then passed on re-run'})`);
  console.log(
    `first run: ${first.pass ?? 0} passed and ${first.fail ?? 0} failed in ${firstFailed.length} file(s); ` +
      `re-run of those files: ${rerun?.pass ?? 0} passed and ${rerun ? (rerun.fail ?? 0) : 'no totals,'} failed`,
  );
}
if (first.skip) console.log(`${first.skip} skipped: ${skipReasons(firstOut)}`);
console.log(
  named.length ? `flaky: ${named.length} file(s) failed on their first run: ${named.join(', ')}` : 'flaky: none',
);
console.log(`${first.pass ?? 0} passed, ${failed} failed`);
