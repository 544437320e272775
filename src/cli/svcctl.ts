import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config/load.js';
import type { Config } from '../config/schema.js';
import { createLogger } from '../platform/logger.js';
import { AppError } from '../http/errors.js';
import { CliUsageError, commands, type CommandSpec } from './commands.js';
import { openContext } from './context.js';
import './extra-commands.js';
import './check-commands.js';
import './number-commands.js';
import './money-commands.js';

function usage(): string {
  const lines = commands.map((c) => {
    const opts = Object.entries(c.options)
      .map(([k, v]) =>
        v.required ? `--${k}${v.type === 'string' ? ' X' : ''}` : `[--${k}${v.type === 'string' ? ' X' : ''}]`,
      )
      .join(' ');
    return `  svcctl ${c.words.join(' ')} ${opts}\n      ${c.summary}`;
  });
  return `usage: svcctl <command> [--config PATH] [--json]\n\n${lines.join('\n')}\n`;
}

interface Output {
  write(text: string): unknown;
}

export interface SvcctlOptions {
  /** Settings to use as they are; without them, `--config`/SVC_CONFIG and the SVC_* environment. */
  config?: Readonly<Config>;
  env?: NodeJS.ProcessEnv;
  stdout?: Output;
  stderr?: Output;
}

/** The operator command line: same settings as the daemon, straight to the database. */
export async function svcctl(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return runSvcctl(argv, { env });
}

/**
 * svcctl without a process of its own: the exit status is returned and the output written to
 * `stdout` and `stderr`, so callers in the same process (the tests) skip loading the program.
 */
export async function runSvcctl(argv: string[], opts: SvcctlOptions = {}): Promise<number> {
  const env = opts.env ?? process.env;
  const stdout = opts.stdout ?? process.stdout;
  const stderr = opts.stderr ?? process.stderr;
  const words = argv.filter(
    (a, i) =>
      !a.startsWith('-') &&
      !(i > 0 && argv[i - 1]!.startsWith('--') && !argv[i - 1]!.includes('=') && isValueFlag(argv[i - 1]!)),
  );
  const spec = findCommand(words);
  const json = argv.includes('--json');
  if (!spec) {
    stderr.write(usage());
    return argv.includes('--help') || argv.length === 0 ? 0 : 2;
  }
  const options: Record<string, { type: 'string' | 'boolean' }> = {
    config: { type: 'string' },
    json: { type: 'boolean' },
  };
  for (const [k, v] of Object.entries(spec.options)) options[k] = { type: v.type };
  try {
    const { values } = parseArgs({ args: argv, options, allowPositionals: true });
    for (const [k, v] of Object.entries(spec.options)) {
      if (v.required && values[k] === undefined) throw new CliUsageError(`--${k} is required (${v.description})`);
    }
    const config =
      opts.config ?? loadConfig({ file: (values['config'] as string | undefined) ?? env['SVC_CONFIG'], env });
    const ctx = await openContext(config, createLogger(env['SVCCTL_LOG'] ?? 'warn'));
    try {
      const result = await spec.run(ctx, values as Record<string, string | boolean | undefined>);
      stdout.write(
        json
          ? `${JSON.stringify({ ok: true, ...result })}\n`
          : `${spec.render ? spec.render(result) : JSON.stringify(result, null, 2)}\n`,
      );
      return 0;
    } finally {
      await ctx.close();
    }
  } catch (err) {
    const message =
      err instanceof ConfigError
        ? err.problems.join('; ')
        : err instanceof CliUsageError || err instanceof AppError
          ? err.message
          : (err as Error).message;
    stderr.write(json ? `${JSON.stringify({ ok: false, error: message })}\n` : `svcctl: ${message}\n`);
    return err instanceof CliUsageError || (err as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? 2 : 1;
  }
}

const VALUE_FLAGS = new Set<string>();
function isValueFlag(flag: string): boolean {
  if (VALUE_FLAGS.size === 0) {
    VALUE_FLAGS.add('--config');
    for (const c of commands)
      for (const [k, v] of Object.entries(c.options)) if (v.type === 'string') VALUE_FLAGS.add(`--${k}`);
  }
  return VALUE_FLAGS.has(flag);
}

function findCommand(words: string[]): CommandSpec | undefined {
  return commands.find((c) => c.words.length === words.length && c.words.every((w, i) => w === words[i]));
}
