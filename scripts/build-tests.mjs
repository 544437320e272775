// Builds the tree `make test` runs: a copy of the project under var/test-build with every
// TypeScript file of src/, test/ and bench/ transpiled to JavaScript beside it, and then each test
// file (and each script a test or the daemon starts as a process or worker thread) replaced by a
// bundle of everything it imports, packages included.
//
// Why transpile: under `--import tsx` every test process sends each of its module loads through
// tsx's loader thread, which costs about as much CPU as the imports themselves (measured: 3.2 s
// against 1.5 s to import the daemon), and the suite starts close to 200 such processes. Types
// are checked by `make typecheck`.
// Why bundle: even transpiled, a test that starts the daemon loads about 3,100 files (2,700 of
// them from node_modules: typebox alone is 680), and resolving, reading and linking them was most
// of a short test's CPU. A bundled test loads its entry and a few dozen shared chunks.
// The copy keeps each file's neighbours (fixtures, migrations, configs, the .ts sources that tests
// start with `--import tsx`), and the bundler writes each module's own location where it used
// `import.meta.url`/`dirname`/`filename` or CommonJS `__dirname`/`__filename`, so paths taken from
// them find what they find in the tree. Source maps are linked: under `node --enable-source-maps`
// (scripts/run-tests.mjs --source-maps) stacks name lines of the sources.
import { cpSync, mkdirSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'var', 'test-build');
const SKIP_AT_ROOT = new Set(['node_modules', '.git', 'var', 'dist', '.tap', '.ci']);
const TRANSPILED = ['src', 'test', 'bench'];
// Scripts started as processes (by nodeScriptArgs: the programs of src/bin, the tests' children)
// or worker threads (by startWorker); bundled like the tests, since each start loads them afresh.
const SCRIPT = /^src\/bin\/[a-z0-9-]+\.ts$|(^|\/)(?!start-)[a-z0-9-]+-(child|worker)\.ts$/;
// Packages left to Node at run time: they rely on sloppy mode (swagger-client, under ari-client,
// assigns undeclared globals), which a bundle, being an ES module, does not allow.
const EXTERNAL = ['ari-client'];

function typeScriptFiles(dir) {
  const found = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...typeScriptFiles(path));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) found.push(path);
  }
  return found;
}

/** Where the running code is: the transpiled copy for the tree's files, the package's own file for the rest. */
function runLocation(path) {
  const rel = relative(root, path);
  return rel.startsWith('..') || rel.startsWith('node_modules') ? path : join(out, rel.replace(/\.ts$/, '.js'));
}

const LOCATION_USE = /import\.meta\.(url|dirname|filename)\b|\b__(dirname|filename)\b/;

/** Writes each module's own location where it asks for it: in a bundle, those would name the bundle. */
const ownLocation = {
  name: 'own-location',
  setup(b) {
    b.onLoad({ filter: /\.(ts|mts|cts|js|mjs|cjs)$/ }, async (args) => {
      const text = await readFile(args.path, 'utf8');
      if (!LOCATION_USE.test(text)) return undefined;
      const file = runLocation(args.path);
      const url = JSON.stringify(pathToFileURL(file).href);
      const dir = JSON.stringify(dirname(file));
      const contents = text
        .replace(/import\.meta\.url\b/g, url)
        .replace(/import\.meta\.dirname\b/g, dir)
        .replace(/import\.meta\.filename\b/g, JSON.stringify(file))
        .replace(/(?<![.\w$])__dirname\b/g, dir)
        .replace(/(?<![.\w$])__filename\b/g, JSON.stringify(file));
      const ext = args.path.slice(args.path.lastIndexOf('.') + 1);
      const loader = ext.endsWith('ts') ? 'ts' : 'js';
      return { contents, loader, resolveDir: dirname(args.path) };
    });
  },
};

// Packages the daemon (src/) imports only when it needs them, and only for their default export
// (which esbuild and Node give alike): bundled all the same, each into a chunk of its own that a
// test loads when the daemon asks for it. From node_modules, their many files cost a test that
// uses them about three times the CPU of the bundled chunk. A test's own import('ioredis') takes
// named exports, so it is still left to Node.
const BUNDLED_LATER = new Set(['ioredis', 'nodemailer', 'pdfkit', 'stripe']);
const daemonSources = join(root, 'src') + sep;

/**
 * Leaves `import('some-package')` to Node: esbuild gives a CommonJS package imported that way only
 * a default export when it splits chunks, where Node also gives its named exports.
 */
const packagesImportedLater = {
  name: 'packages-imported-later',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) =>
      args.kind === 'dynamic-import' && !(BUNDLED_LATER.has(args.path) && args.importer.startsWith(daemonSources))
        ? { path: args.path, external: true }
        : undefined,
    );
  },
};

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
for (const entry of readdirSync(root, { withFileTypes: true })) {
  if (SKIP_AT_ROOT.has(entry.name)) continue;
  cpSync(join(root, entry.name), join(out, entry.name), { recursive: true });
}
symlinkSync(join(root, 'node_modules'), join(out, 'node_modules'), 'dir');

const common = {
  outdir: out,
  outbase: root,
  format: 'esm',
  platform: 'node',
  target: 'node20.11',
  // Node 20.11 reads `with { type: 'json' }`; esbuild would otherwise refuse it for node20.
  supported: { 'import-attributes': true },
  sourcemap: 'linked',
  logLevel: 'warning',
};
const entryPoints = TRANSPILED.flatMap((dir) => typeScriptFiles(join(root, dir)));
const bundled = entryPoints.filter((f) => f.endsWith('.test.ts') || SCRIPT.test(relative(root, f)));
const transpiled = entryPoints.filter((f) => !bundled.includes(f));
await Promise.all([
  build({ ...common, entryPoints: transpiled }),
  build({
    ...common,
    entryPoints: bundled,
    bundle: true,
    splitting: true,
    chunkNames: 'test-chunks/[name]-[hash]',
    external: EXTERNAL,
    plugins: [ownLocation, packagesImportedLater],
    // CommonJS packages inside an ES module bundle still call `require` for Node's own modules.
    banner: {
      js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
    },
  }),
]);
console.log(
  `test build: ${transpiled.length} files transpiled and ${bundled.length} bundled into ${relative(root, out)}`,
);
