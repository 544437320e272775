import type { ApiModule } from '../http/app.js';
import type { TlsMaterial } from '../http/tls.js';

/**
 * A built module: its routes, and background work started and stopped by the daemon. Kept apart
 * from the composition root (`src/modules/index.ts`) so a module never imports the file that builds it.
 */
export interface Module extends ApiModule {
  name: string;
  start?(): Promise<void> | void;
  stop?(): Promise<void> | void;
  /** Ports a listener of the module bound (known after start). */
  ports?(): Record<string, number>;
  /** Takes new TLS material and re-reads the module's own files (SIGHUP); live work is kept. */
  reload?(tls: TlsMaterial | null): Promise<void> | void;
}
