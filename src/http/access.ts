/** Scope names of the spec ("Authentication" 3). */
export const Scopes = [
  'voice:send',
  'sms:send',
  'dialer:write',
  'routes:read',
  'account:read',
  'purchases:write',
  'offers:write',
  'billing:write',
  'numbers:read',
  'numbers:write',
  'account:write',
  'routes:write',
  'cdr:numbers',
  'accelerator:read',
  'accelerator:write',
  'application:write',
  'switch:manage',
  'verify:write',
  'webhooks:write',
] as const;

export type Scope = (typeof Scopes)[number];

/** Roles of a team member (docs/account.md "Team members and roles"). */
export type TeamRole = 'owner' | 'admin' | 'billing' | 'developer' | 'read_only';

const READS: readonly Scope[] = Scopes.filter((s) => s.endsWith(':read'));

/** The scopes a member's session holds on the team account, as a key's scopes limit it. */
export const RoleScopes: Readonly<Record<TeamRole, ReadonlySet<Scope>>> = {
  owner: new Set(Scopes),
  admin: new Set(Scopes),
  billing: new Set([...READS, 'account:write', 'billing:write']),
  developer: new Set([
    ...READS,
    'voice:send',
    'sms:send',
    'dialer:write',
    'verify:write',
    'webhooks:write',
    'cdr:numbers',
  ]),
  read_only: new Set(READS),
};

/**
 * What a route admits, declared beside its schema and shown in the OpenAPI description.
 * - `public`: no credential; `optional`: a credential personalises the answer when given.
 * - `required`: a session, or an API key holding `scope` when one is named.
 * - `session`: a dashboard session only; API keys get 403.
 * `fullAccessOnly` refuses scoped keys; `denyTestKeys` refuses test keys with TEST_KEY_NOT_ALLOWED.
 * `testKeys`: what a test key may do on a write (POST, PUT, PATCH, DELETE). Unset, the write is
 * refused with TEST_KEY_NOT_ALLOWED, so a new route cannot let test keys change live state by
 * omission; `simulate`: the handler simulates against test credit (sends, calls, test
 * sub-accounts); `allow`: the write changes nothing that live traffic or another account sees.
 * `grants`: scopes the credential the route makes carries, which a key must hold as well.
 */
export interface Access {
  auth: 'public' | 'optional' | 'required' | 'session';
  scope?: Scope;
  fullAccessOnly?: boolean;
  denyTestKeys?: boolean;
  testKeys?: 'simulate' | 'allow';
  /**
   * What the credential the route makes can do (SIP or SMPP credentials, a whitelisted IP, a
   * sub-account's SIP password): a key must hold these scopes too, so no key makes a credential
   * broader than itself.
   */
  grants?: readonly Scope[];
  /** Open to a session whose account must change its password (change-password, logout). */
  whilePasswordChangeRequired?: boolean;
  /**
   * Member roles whose sessions may use the route. A member's session is limited to its role's
   * scopes (`RoleScopes`); a route that names no scope acts on the login or on powers no scope
   * covers (passwords, API keys, payouts), so it admits member sessions only when it lists them here.
   */
  roles?: readonly TeamRole[];
}

const READ_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/** How a test key fares on a route: reads are served, writes refused unless the route opts in. */
export function testKeyPolicy(a: Access, method: string): 'served' | 'simulated' | 'refused' {
  if (a.denyTestKeys) return 'refused';
  if (READ_METHODS.has(method.toUpperCase()) || a.testKeys === 'allow') return 'served';
  return a.testKeys === 'simulate' ? 'simulated' : 'refused';
}

export interface Principal {
  accountId: string;
  parentId: string | null;
  role: 'customer' | 'admin';
  kind: 'session' | 'key';
  /** Session id or API key id: the rate-limit and usage identity. */
  credentialId: string;
  mode: 'live' | 'test';
  /** null: full access (every scope except webhooks:write). */
  scopes: ReadonlySet<Scope> | null;
  webhooksWrite: boolean;
  /** A session of a team member: its login and role on `accountId`. */
  member?: { id: string; role: TeamRole };
  /** A session of an account signed in with a one-time password: it may only change it. */
  mustChangePassword?: boolean;
}

/**
 * Sessions hold every scope (a member's session those of its role); full-access keys every scope
 * but `webhooks:write`, which must be chosen.
 */
export function hasScope(p: Principal, scope: Scope): boolean {
  if (p.member) return RoleScopes[p.member.role].has(scope);
  if (p.kind === 'session') return true;
  if (scope === 'webhooks:write') return p.webhooksWrite;
  return p.scopes === null || p.scopes.has(scope);
}

export function describeAccess(a: Access, method = 'GET'): string {
  const parts: string[] = [];
  switch (a.auth) {
    case 'public':
      parts.push('Public: no credential.');
      break;
    case 'optional':
      parts.push('Credential optional: a session or API key personalises the answer.');
      break;
    case 'session':
      parts.push('Session only: a dashboard session token; API keys are refused with 403.');
      break;
    case 'required':
      parts.push('Session or API key.');
  }
  if (a.scope) parts.push(`Scoped keys need \`${a.scope}\`.`);
  if (a.grants?.length) {
    parts.push(
      `The credential it makes can use ${a.grants.map((s) => `\`${s}\``).join(', ')}: scoped keys need that too.`,
    );
  }
  if (a.fullAccessOnly) parts.push('Full-access only: scoped keys are refused with 403.');
  if (a.auth !== 'public' && a.auth !== 'session') {
    const policy = testKeyPolicy(a, method);
    if (policy === 'refused') parts.push('Test keys are refused with 403 TEST_KEY_NOT_ALLOWED.');
    if (policy === 'simulated')
      parts.push('Test keys are simulated against test credit: no live traffic, no live balance.');
  }
  if (a.roles?.length) parts.push(`Team members' sessions need the role ${a.roles.map((r) => `\`${r}\``).join(', ')}.`);
  else if ((a.auth === 'required' || a.auth === 'session' || method !== 'GET') && a.auth !== 'public' && !a.scope)
    parts.push("Team members' sessions are refused.");
  if (a.whilePasswordChangeRequired)
    parts.push('Open to a session that must change its password (elsewhere it gets 403 PASSWORD_CHANGE_REQUIRED).');
  return parts.join(' ');
}
