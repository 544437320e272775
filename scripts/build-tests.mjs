// Builds the tree `make test` runs: a copy of the project under var/test-build with every
// TypeScript file of src/, test/ and bench/ transpiled to JavaScript beside it.
//
// Why: under `--import tsx` every test process sends each of its ~1,000 module loads through
// tsx's loader thread, which costs about as much CPU as the imports themselves (measured: 3.2 s
// against 1.5 s to import the daemon), and the suite starts close to 200 such processes.
// esbuild transpiles the whole tree in about a second; types are checked by `make typecheck`.
// The copy keeps each file's neighbours (fixtures, migrations, configs, the .ts sources that tests
// start with `--import tsx`), so paths taken from `import.meta.url` find what they find in the tree.
import { cpSync, mkdirSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'var', 'test-build');
const SKIP_AT_ROOT = new Set(['node_modules', '.git', 'var', 'dist', '.tap', '.ci']);
const TRANSPILED = ['src', 'test', 'bench'];

function typeScriptFiles(dir) {
  const found = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...typeScriptFiles(path));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) found.push(path);
  }
  return found;
}

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
for (const entry of readdirSync(root, { withFileTypes: true })) {
  if (SKIP_AT_ROOT.has(entry.name)) continue;
  cpSync(join(root, entry.name), join(out, entry.name), { recursive: true });
}
symlinkSync(join(root, 'node_modules'), join(out, 'node_modules'), 'dir');

const entryPoints = TRANSPILED.flatMap((dir) => typeScriptFiles(join(root, dir)));
await build({
  entryPoints,
  outdir: out,
  outbase: root,
  format: 'esm',
  platform: 'node',
  target: 'node20.11',
  // Node 20.11 reads `with { type: 'json' }`; esbuild would otherwise refuse it for node20.
  supported: { 'import-attributes': true },
  sourcemap: 'linked',
  logLevel: 'warning',
});
console.log(`test build: ${entryPoints.length} files transpiled into ${relative(root, out)}`);
