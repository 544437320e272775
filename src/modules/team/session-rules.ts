import { BlockList, isIPv4 } from 'node:net';
import type { CoreDeps } from '../../platform/core.js';
import { createTtlCache } from '../../platform/ttl-cache.js';
import { forbidden, unauthorized } from '../../http/errors.js';
import type { AccountsService } from '../accounts/service.js';
import type { TeamRepo } from './repo.js';

interface Rules {
  requireTwoFactor: boolean;
  /** null: any network. */
  networks: BlockList | null;
}

/** PostgreSQL hands the CIDRs back normalised (`10.0.0.0/8`, `2001:db8::/32`). */
function blockList(cidrs: readonly string[]): BlockList | null {
  if (cidrs.length === 0) return null;
  const list = new BlockList();
  for (const c of cidrs) {
    const [net, bits] = c.split('/') as [string, string | undefined];
    const type = isIPv4(net) ? 'ipv4' : 'ipv6';
    list.addSubnet(net, Number(bits ?? (type === 'ipv4' ? 32 : 128)), type);
  }
  return list;
}

/** Node reports IPv4 peers of a dual-stack socket as `::ffff:a.b.c.d`; the rules name them as IPv4. */
function inside(list: BlockList, ip: string): boolean {
  const bare = ip.startsWith('::ffff:') && isIPv4(ip.slice(7)) ? ip.slice(7) : ip;
  return list.check(bare, isIPv4(bare) ? 'ipv4' : 'ipv6');
}

/**
 * The team's security settings (`requireTwoFactor`, `allowedLoginCidrs`) on every request of a
 * member session, not only when one is made: a request from outside the allowed networks is
 * refused (403) and the session stays for use from inside them; a session of a login without
 * two-factor sign-in, on a team that requires it, is ended (401). The settings and each login's
 * two-factor state are remembered for `[auth] credential_cache_seconds`, the same delay a member's
 * role change has on other daemons; this daemon forgets an account's settings when they change.
 */
export function createMemberSessionRules(
  deps: Pick<CoreDeps, 'config' | 'clock' | 'log'> & { repo: TeamRepo; accounts: AccountsService },
) {
  const { repo, accounts, clock, log } = deps;
  const ttl = deps.config.auth.credential_cache_seconds * 1000;
  const rulesCache = createTtlCache<string, Rules>(ttl, clock);
  const twoFactorCache = createTtlCache<string, boolean>(ttl, clock);

  async function rules(accountId: string, fresh: boolean): Promise<Rules> {
    const cached = fresh ? undefined : rulesCache.get(accountId);
    if (cached) return cached;
    const s = await repo.securitySettings(accountId);
    const r = { requireTwoFactor: s.requireTwoFactor, networks: blockList(s.allowedLoginCidrs) };
    rulesCache.set(accountId, r);
    return r;
  }

  async function twoFactor(loginId: string, fresh: boolean): Promise<boolean> {
    const cached = fresh ? undefined : twoFactorCache.get(loginId);
    if (cached !== undefined) return cached;
    const on = await accounts.twoFactorEnabled(loginId);
    twoFactorCache.set(loginId, on);
    return on;
  }

  return {
    /** Before a member session is made (accepting an invitation, switching): read afresh. */
    async admit(accountId: string, loginId: string, ip: string | undefined) {
      const r = await rules(accountId, true);
      if (r.requireTwoFactor && !(await twoFactor(loginId, true)))
        throw forbidden('This account requires its members to sign in with two-factor authentication; enable it first');
      if (r.networks && (!ip || !inside(r.networks, ip)))
        throw forbidden("This account's members may sign in only from its allowed networks");
    },

    /** Each request of a member session. */
    async check(accountId: string, loginId: string, ip: string) {
      const r = await rules(accountId, false);
      if (r.requireTwoFactor && !(await twoFactor(loginId, false))) {
        const ended = await repo.endSessions(repo.sql, accountId, [loginId], clock.now());
        accounts.forget(accountId, ended);
        log.info(
          { accountId, memberId: loginId, endedSessions: ended.length },
          'member sessions ended: two-factor required',
        );
        throw unauthorized('This account now requires two-factor sign-in of its members; the session has ended');
      }
      if (r.networks && !inside(r.networks, ip))
        throw forbidden("This account's members may use it only from its allowed networks");
    },

    /** The account's settings changed on this daemon. */
    changed(accountId: string) {
      rulesCache.delete(accountId);
    },

    /** Members lacking two-factor sign-in, read afresh: whose sessions end when it becomes required. */
    async withoutTwoFactor(memberIds: readonly string[]): Promise<string[]> {
      const lacking: string[] = [];
      for (const id of memberIds) if (!(await twoFactor(id, true))) lacking.push(id);
      return lacking;
    },
  };
}

export type MemberSessionRules = ReturnType<typeof createMemberSessionRules>;
