// Fails (exit 1) when the relative imports of src/**/*.ts form a cycle, type-only imports included:
// a type cycle through a composition root is still a loop the next runtime import closes.
// Usage: node scripts/check-cycles.mjs [root-dir]
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

const root = resolve(process.argv[2] ?? 'src');

function listTs(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...listTs(path));
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

function isFile(path) {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

// NodeNext specifiers name the emitted file (`./x.js`); the source is `./x.ts` (or `./x/index.ts`).
function resolveSpecifier(from, spec) {
  const base = resolve(dirname(from), spec);
  const candidates = [base.replace(/\.(m|c)?js$/, '.$1ts'), base, `${base}.ts`, join(base, 'index.ts')];
  return candidates.find(isFile) ?? null;
}

function importGraph(files) {
  const graph = new Map();
  for (const file of files) {
    // preProcessFile lists `import`, `import type`, `export … from` and `import()` specifiers alike.
    const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const edges = new Set();
    for (const { fileName } of info.importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const target = resolveSpecifier(file, fileName);
      if (target && target.startsWith(root)) edges.add(target);
    }
    graph.set(file, [...edges].sort());
  }
  return graph;
}

// Tarjan's strongly connected components, iterative so a deep import chain cannot overflow the stack.
function stronglyConnected(graph) {
  const index = new Map();
  const low = new Map();
  const onStack = new Set();
  const stack = [];
  const components = [];
  let next = 0;
  for (const start of graph.keys()) {
    if (index.has(start)) continue;
    const work = [{ node: start, edge: 0 }];
    index.set(start, next);
    low.set(start, next++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1];
      const edges = graph.get(frame.node) ?? [];
      if (frame.edge < edges.length) {
        const to = edges[frame.edge++];
        if (!index.has(to)) {
          index.set(to, next);
          low.set(to, next++);
          stack.push(to);
          onStack.add(to);
          work.push({ node: to, edge: 0 });
        } else if (onStack.has(to)) {
          low.set(frame.node, Math.min(low.get(frame.node), index.get(to)));
        }
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1].node;
        low.set(parent, Math.min(low.get(parent), low.get(frame.node)));
      }
      if (low.get(frame.node) === index.get(frame.node)) {
        const component = [];
        let member;
        do {
          member = stack.pop();
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        const selfLoop = component.length === 1 && (graph.get(member) ?? []).includes(member);
        if (component.length > 1 || selfLoop) components.push(component.sort());
      }
    }
  }
  return components;
}

// One concrete loop through the component's first file, found breadth-first, so the report names a path to cut.
function sampleCycle(graph, component) {
  const members = new Set(component);
  const start = component[0];
  const previous = new Map([[start, null]]);
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift();
    for (const to of graph.get(node) ?? []) {
      if (!members.has(to)) continue;
      if (to === start) {
        const path = [start];
        for (let at = node; at !== start; at = previous.get(at)) path.splice(1, 0, at);
        return [...path, start];
      }
      if (!previous.has(to)) {
        previous.set(to, node);
        queue.push(to);
      }
    }
  }
  return [start];
}

const graph = importGraph(listTs(root));
const components = stronglyConnected(graph);
const show = (file) => relative(process.cwd(), file);
for (const component of components) {
  console.error(`import cycle among ${component.length} file(s):`);
  for (const file of component) console.error(`  ${show(file)}`);
  console.error(`  e.g. ${sampleCycle(graph, component).map(show).join(' -> ')}`);
}
if (components.length > 0) {
  console.error(`${components.length} import cycle(s) in ${show(root)}`);
  process.exit(1);
}
console.log(`no import cycles among ${graph.size} files in ${show(root)}`);
