import { fileURLToPath } from 'node:url';
import { siblingModule } from '../../src/telephony/media/start-worker.js';

/**
 * The node arguments that run a script beside the caller in a child process: the `.ts` source
 * under tsx when the caller runs from the sources (`npx tap test/x.test.ts`), the transpiled `.js`
 * as plain node when it runs from `make test`'s built tree.
 */
export function nodeScriptArgs(callerUrl: string, baseName: string): string[] {
  const script = siblingModule(callerUrl, baseName);
  const path = fileURLToPath(script);
  return path.endsWith('.ts') ? ['--import', 'tsx', path] : [path];
}
