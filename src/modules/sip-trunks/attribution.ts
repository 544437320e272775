import type { Clock } from '../../platform/clock.js';
import { createTtlCache } from '../../platform/ttl-cache.js';
import type { PlanCallInput, TrunkPolicy } from '../../telephony/sip/b2bua/index.js';
import { computeHa1 } from '../../telephony/sip/index.js';
import type { ApplicationService } from '../application/service.js';
import type { CallsRepo, ConnectionGate } from './repo.js';

/**
 * Who a trunk call belongs to: a whitelisted source IP, or the digest user (a sub-account's SIP
 * credentials or a route purchase's). Answers are reused for `credentialMs`.
 */
export function createAttribution(deps: {
  repo: CallsRepo;
  application: ApplicationService;
  clock: Clock;
  credentialMs: number;
  /** The digest realm the HA1 of purchase credentials is computed over. */
  realm: string;
}) {
  const { repo } = deps;
  const sipUsers = createTtlCache<string, Awaited<ReturnType<TrunkPolicy['lookupSipUser']>>>(
    deps.credentialMs,
    deps.clock,
  );

  const resolveByIp: TrunkPolicy['resolveByIp'] = async (ip) => {
    const accountId = await repo.accountByIp(ip.replace(/^::ffff:/, ''));
    return accountId ? { accountId } : null;
  };

  const lookupSipUser: TrunkPolicy['lookupSipUser'] = async (username) => {
    const cached = sipUsers.get(username);
    if (cached !== undefined) return cached;
    const found = await (async () => {
      const sub = await deps.application.lookupSipUser(username);
      if (sub)
        return {
          ha1: sub.ha1,
          accountId: sub.parentId ?? sub.accountId,
          ...(sub.parentId ? { subAccountId: sub.accountId } : {}),
        };
      const purchase = await repo.trunkCredential(username);
      if (purchase) return { ha1: purchase.ha1, accountId: purchase.accountId, purchaseId: purchase.purchaseId };
      return null;
    })();
    sipUsers.set(username, found);
    return found;
  };

  /** SIP credentials for a route purchase: username `pur_…`, password shown once, HA1 kept. */
  async function purchaseCredentials(accountId: string, purchaseId: string, password: string, username: string) {
    await repo.upsertTrunkCredential({
      username,
      accountId,
      purchaseId,
      ha1: computeHa1(username, deps.realm, password),
    });
    sipUsers.delete(username);
  }

  /**
   * The connection point a call came through, with its limits: the purchase's credentials, or the
   * whitelisted source address (a digest user is a sub-account or a purchase, so a call with
   * neither was attributed by its address). A sub-account's own credentials are not one.
   */
  async function pointOf(input: PlanCallInput): Promise<ConnectionGate | null> {
    if (input.subAccountId) return null;
    if (input.purchaseId) return repo.trunkCredentialPoint(input.purchaseId);
    return repo.trunkIpPoint(input.sourceIp.replace(/^::ffff:/, ''));
  }

  /** Drops every cached answer: a connection point changed here or on another daemon. */
  function forget(): void {
    sipUsers.clear();
    repo.forgetPoints();
  }

  return { resolveByIp, lookupSipUser, purchaseCredentials, pointOf, forget };
}

export type Attribution = ReturnType<typeof createAttribution>;
