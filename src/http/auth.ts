import type { AccountsService } from '../modules/accounts/service.js';
import type { KeysService } from '../modules/keys/service.js';
import type { Principal } from './access.js';
import { unauthorized } from './errors.js';

export interface Authenticator {
  /**
   * The principal for an `Authorization` header from `ip`; null when absent; UNAUTHORIZED when
   * invalid. A member session must also pass its team's security settings from `ip`.
   */
  authenticate(header: string | undefined, ip: string): Promise<Principal | null>;
}

/** The team's rules for each request of a member session (`team/session-rules.ts`). */
export type MemberRequestCheck = (accountId: string, loginId: string, ip: string) => Promise<void>;

export function createAuthenticator(deps: {
  accounts: AccountsService;
  keys: KeysService;
  checkMemberRequest?: MemberRequestCheck;
}): Authenticator {
  return {
    async authenticate(header, ip) {
      if (header === undefined || header === '') return null;
      const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
      if (!m) throw unauthorized('Authorization must be "Bearer <session token or API key>"');
      const token = m[1]!;
      if (token.startsWith('svc_')) {
        const key = await deps.keys.verify(token);
        if (!key) throw unauthorized('API key is invalid or revoked');
        const account = await deps.accounts.accountForAuth(key.accountId);
        if (!account || account.status === 'closed') throw unauthorized('API key is invalid or revoked');
        return {
          accountId: key.accountId,
          parentId: account.parentId,
          role: account.role,
          kind: 'key',
          credentialId: key.keyId,
          mode: key.mode,
          scopes: key.scopes,
          webhooksWrite: key.webhooksWrite,
        };
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
