/** The counts of the last `# { total: N, pass: N, … }` line of a TAP text (tap's totals), or null. */
export function tapTotals(text) {
  const m = [...text.matchAll(/^# \{ (total: .*) \}$/gm)].pop();
  if (!m) return null;
  return Object.fromEntries(
    m[1]
      .split(', ')
      .map((kv) => kv.split(': '))
      .map(([k, v]) => [k, Number(v)]),
  );
}
