import type { AccountsService } from '../modules/accounts/service.js';
import type { KeysService, VerifiedKey } from '../modules/keys/service.js';
import type { AccountRow } from '../modules/accounts/repo.js';
import type { Principal } from './access.js';
import { unauthorized } from './errors.js';

export interface Authenticator {
  /**
   * The principal for an `Authorization` header from `ip`; null when absent; UNAUTHORIZED when
   * invalid. A member session must also pass its team's security settings from `ip`.
   */
  authenticate(header: string | undefined, ip: string): Promise<Principal | null>;
  /**
   * `authenticate` answered at once when an API key and its account are cached (the common case
   * for traffic); undefined when it must be awaited (a session, a key not yet loaded).
   */
  authenticateNow(header: string | undefined): Principal | null | undefined;
}

/** The team's rules for each request of a member session (`team/session-rules.ts`). */
export type MemberRequestCheck = (accountId: string, loginId: string, ip: string) => Promise<void>;

const BEARER = /^Bearer\s+(\S+)\s*$/i;
const BAD_KEY = 'API key is invalid or revoked';

const WHITESPACE = /\s/;

function bearerToken(header: string): string {
  // The usual spelling, read without a match array; anything else goes through the full pattern.
  if (header.startsWith('Bearer ')) {
    const token = header.slice(7);
    if (token !== '' && !WHITESPACE.test(token)) return token;
  }
  const m = BEARER.exec(header);
  if (!m) throw unauthorized('Authorization must be "Bearer <session token or API key>"');
  return m[1]!;
}

/**
 * A key's principal, made once per pair of cached key verdict and account row. Both are replaced,
 * never changed, when their rows change (or are dropped from their caches on revocation), so the
 * pair identifies what the principal was made from. Frozen: every request of the key shares it.
 */
const keyPrincipals = new WeakMap<Readonly<VerifiedKey>, { account: AccountRow; principal: Readonly<Principal> }>();

function keyPrincipal(key: Readonly<VerifiedKey> | null, account: AccountRow | null): Principal {
  if (!key || !account || account.status === 'closed') throw unauthorized(BAD_KEY);
  const made = keyPrincipals.get(key);
  if (made !== undefined && made.account === account) return made.principal;
  const principal: Readonly<Principal> = Object.freeze({
    accountId: key.accountId,
    parentId: account.parentId,
    role: account.role,
    kind: 'key',
    credentialId: key.keyId,
    mode: key.mode,
    scopes: key.scopes,
    webhooksWrite: key.webhooksWrite,
  });
  keyPrincipals.set(key, { account, principal });
  return principal;
}

export function createAuthenticator(deps: {
  accounts: AccountsService;
  keys: KeysService;
  checkMemberRequest?: MemberRequestCheck;
}): Authenticator {
  return {
    authenticateNow(header) {
      if (header === undefined || header === '') return null;
      const token = bearerToken(header);
      if (!token.startsWith('svc_')) return undefined;
      const key = deps.keys.verifyNow(token);
      if (key === undefined) return undefined;
      if (key === null) throw unauthorized(BAD_KEY);
      const account = deps.accounts.accountForAuthNow(key.accountId);
      return account === undefined ? undefined : keyPrincipal(key, account.value);
    },
    async authenticate(header, ip) {
      if (header === undefined || header === '') return null;
      const token = bearerToken(header);
      if (token.startsWith('svc_')) {
        const key = await deps.keys.verify(token);
        if (!key) throw unauthorized(BAD_KEY);
        return keyPrincipal(key, await deps.accounts.accountForAuth(key.accountId));
      }
      const claims = await deps.accounts.verifyAccessToken(token);
      if (!claims) throw unauthorized('Session token is invalid, expired or revoked');
      const account = await deps.accounts.accountForAuth(claims.accountId);
      if (!account || account.status === 'closed') throw unauthorized('Session token is invalid, expired or revoked');
      if (claims.member) await deps.checkMemberRequest?.(claims.accountId, claims.member.id, ip);
      return {
        accountId: claims.accountId,
        parentId: account.parentId,
        role: account.role,
        kind: 'session',
        credentialId: claims.sessionId,
        mode: 'live',
        scopes: null,
        webhooksWrite: true,
        ...(claims.member ? { member: claims.member } : {}),
        mustChangePassword: account.mustChangePassword,
      };
    },
  };
}
