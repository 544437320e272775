import type { CliContext } from './context.js';

export interface CommandSpec {
  /** Words that name the command, e.g. ['account', 'create']. */
  words: string[];
  summary: string;
  options: Record<string, { type: 'string' | 'boolean'; required?: boolean; description: string }>;
  run(ctx: CliContext, opts: Record<string, string | boolean | undefined>): Promise<Record<string, unknown>>;
  /** Plain-text rendering of the result; JSON is printed with --json. */
  render?(result: Record<string, unknown>): string;
}

export class CliUsageError extends Error {
  override name = 'CliUsageError';
}

export const commands: CommandSpec[] = [
  {
    words: ['account', 'create'],
    summary: 'create an account (an operator with --operator)',
    options: {
      email: { type: 'string', required: true, description: 'sign-in e-mail' },
      password: { type: 'string', required: true, description: 'password, at least 10 characters' },
      operator: { type: 'boolean', description: 'platform operator (admin) account' },
    },
    async run(ctx, o) {
      const password = String(o['password']);
      if (password.length < 10) throw new CliUsageError('--password must be at least 10 characters');
      const a = await ctx.services.accounts.createAccount({
        email: String(o['email']),
        password,
        role: o['operator'] ? 'admin' : 'customer',
      });
      return { id: a.id, email: a.email, role: a.role };
    },
    render: (r) => `created ${String(r['role'])} account ${String(r['email'])} (${String(r['id'])})`,
  },
  {
    words: ['key', 'create'],
    summary: 'create an API key for an account; the secret is printed once',
    options: {
      email: { type: 'string', required: true, description: 'account e-mail' },
      test: { type: 'boolean', description: 'a test key (svc_test_sk_)' },
      scopes: { type: 'string', description: 'comma-separated scopes (default: full access)' },
      name: { type: 'string', description: 'label' },
    },
    async run(ctx, o) {
      const account = await ctx.services.accounts.repo.byEmail(String(o['email']));
      if (!account) throw new CliUsageError(`no account with e-mail ${String(o['email'])}`);
      const scopes =
        typeof o['scopes'] === 'string'
          ? o['scopes']
              .split(',')
              .map((s) => s.trim())
              .filter(Boolean)
          : undefined;
      const { key, secret } = await ctx.services.keys.create(account.id, {
        mode: o['test'] ? 'test' : 'live',
        ...(scopes ? { scopes } : {}),
        ...(typeof o['name'] === 'string' ? { name: o['name'] } : {}),
      });
      return { id: key.id, keyPrefix: key.keyPrefix, mode: key.mode, scopes: key.scopes, key: secret };
    },
    render: (r) => `${String(r['key'])}\n(shown once; prefix ${String(r['keyPrefix'])})`,
  },
  {
    words: ['status'],
    summary: 'database reachability, migrations and account counts',
    options: {},
    async run(ctx) {
      const [m] = await ctx.sql<
        { version: number; n: string }[]
      >`select max(version) as version, count(*) as n from schema_migrations`;
      const [a] = await ctx.sql<{ n: string }[]>`select count(*) as n from accounts`;
      return {
        database: 'ok',
        migrations: Number(m?.n ?? 0),
        latestMigration: m?.version ?? null,
        accounts: Number(a?.n ?? 0),
      };
    },
    render: (r) =>
      `database ok; ${String(r['migrations'])} migrations (latest ${String(r['latestMigration'])}); ${String(r['accounts'])} accounts`,
  },
];

/** Other modules add their operator commands here (top-ups, invite codes, trunks…). */
export function registerCommand(spec: CommandSpec) {
  commands.push(spec);
}
