import { Worker } from 'node:worker_threads';

/**
 * Starts a worker from a module next to the caller. Under tsx (tests, benchmarks) the module is
 * a `.ts` file and worker threads do not inherit tsx's loader hooks, so the worker first
 * registers tsx and then imports the module; a built `.js` module is started directly.
 */
export function startWorker(moduleUrl: URL, workerData: unknown): Worker {
  if (moduleUrl.pathname.endsWith('.ts')) {
    const tsxApi = import.meta.resolve('tsx/esm/api');
    const bootstrap = `import { register } from ${JSON.stringify(tsxApi)}; register(); await import(${JSON.stringify(moduleUrl.href)});`;
    return new Worker(bootstrap, { eval: true, workerData });
  }
  return new Worker(moduleUrl, { workerData });
}

/** The URL of a sibling module, keeping the caller's extension (.ts under tsx, .js when built). */
export function siblingModule(callerUrl: string, baseName: string): URL {
  const ext = callerUrl.endsWith('.ts') ? '.ts' : '.js';
  return new URL(`./${baseName}${ext}`, callerUrl);
}
