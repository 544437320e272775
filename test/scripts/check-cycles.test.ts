import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';

const script = join(import.meta.dirname, '../../scripts/check-cycles.mjs');
const run = (dir: string) => spawnSync(process.execPath, [script, dir], { encoding: 'utf8' });

function tree(t: { teardown(fn: () => void): void }, files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'cycles-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

t.test('a type-only import that closes a loop through a folder index is a cycle', async (t) => {
  const dir = tree(t, {
    'modules/index.ts':
      "import { buildCalls } from './calls/index.js';\nexport interface Module { name: string }\nexport const all = [buildCalls()];\n",
    'modules/calls/index.ts':
      "import type { Module } from '../index.js';\nexport const buildCalls = (): Module => ({ name: 'calls' });\n",
    'modules/sms/index.ts': "export * from '../calls/index.js';\n",
  });
  const r = run(dir);
  t.equal(r.status, 1);
  t.match(r.stderr, /import cycle among 2 file\(s\)/);
  t.match(r.stderr, /modules\/calls\/index\.ts/);
  t.match(r.stderr, /modules\/index\.ts/);
  t.notMatch(r.stderr, /sms/, 'a file that only reaches the loop is not in it');
});

t.test('a file importing itself and an `export … from` loop are cycles; a chain is not', async (t) => {
  const loops = tree(t, {
    'self.ts': "export const a = 1;\nexport { a as b } from './self.js';\n",
    'x.ts': "export { y } from './y.js';\nexport const x = 1;\n",
    'y.ts': "export { x } from './x.js';\nexport const y = 2;\n",
  });
  const r = run(loops);
  t.equal(r.status, 1);
  t.match(r.stderr, /2 import cycle\(s\)/);

  const chain = tree(t, {
    'a.ts': "import type { B } from './b.js';\nexport type A = B;\n",
    'b.ts': "import { c } from './c/index.js';\nexport type B = typeof c;\n",
    'c/index.ts': "export const c = await import('node:os');\n",
  });
  const ok = run(chain);
  t.equal(ok.status, 0, ok.stderr);
  t.match(ok.stdout, /no import cycles among 3 files/);
});

t.test('src has no import cycle', async (t) => {
  const r = run(join(import.meta.dirname, '../../src'));
  t.equal(r.status, 0, r.stderr);
});
