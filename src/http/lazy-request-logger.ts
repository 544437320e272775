import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, Level, LogFn, Logger } from 'pino';

/**
 * Fastify gives every request a child logger bound to its request id. Requests are logged only
 * when refused or failed (the onResponse hook), so most never write a line, yet each paid for a
 * pino child (its bindings serialised) on the API's hottest path. This one makes the child on its
 * first enabled line; a line below the level is dropped without making it.
 */
export function lazyRequestLogger(
  parent: FastifyBaseLogger,
  bindings: Bindings,
  opts: ChildLoggerOptions,
): FastifyBaseLogger {
  // A route's own log level changes what is enabled: such a request gets its child at once.
  if (opts.level !== undefined) return parent.child(bindings, opts);
  return new LazyRequestLogger(parent, bindings, opts) as unknown as FastifyBaseLogger;
}

class LazyRequestLogger {
  #parent: FastifyBaseLogger;
  #bindings: Bindings;
  #opts: ChildLoggerOptions;
  #child: FastifyBaseLogger | undefined;

  constructor(parent: FastifyBaseLogger, bindings: Bindings, opts: ChildLoggerOptions) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#opts = opts;
  }

  get #real(): FastifyBaseLogger {
    return (this.#child ??= this.#parent.child(this.#bindings, this.#opts));
  }

  get level(): string {
    return this.#parent.level;
  }

  set level(level: string) {
    this.#real.level = level;
  }

  isLevelEnabled(level: Level): boolean {
    return ((this.#child ?? this.#parent) as Logger).isLevelEnabled(level);
  }

  #write(level: Level, args: Parameters<LogFn>): void {
    if (!this.isLevelEnabled(level)) return;
    (this.#real[level] as (...a: Parameters<LogFn>) => void)(...args);
  }

  fatal(...args: Parameters<LogFn>): void {
    this.#write('fatal', args);
  }
  error(...args: Parameters<LogFn>): void {
    this.#write('error', args);
  }
  warn(...args: Parameters<LogFn>): void {
    this.#write('warn', args);
  }
  info(...args: Parameters<LogFn>): void {
    this.#write('info', args);
  }
  debug(...args: Parameters<LogFn>): void {
    this.#write('debug', args);
  }
  trace(...args: Parameters<LogFn>): void {
    this.#write('trace', args);
  }
  silent(): void {}

  child(bindings: Bindings, opts?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#real.child(bindings, opts);
  }

  bindings(): Bindings {
    return { ...(this.#parent as Logger).bindings(), ...this.#bindings };
  }
}
