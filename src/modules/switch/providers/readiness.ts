import type { Sql } from '../../../db/connection.js';
import { notFound } from '../../../http/errors.js';
import { Money } from '../../../ledger/money.js';
import type { Clock } from '../../../platform/clock.js';
import { selectEndpoints, selectTrunks } from './views.js';

type Fix =
  'supplier' | 'contacts' | 'endpoints' | 'configuration' | 'cost_deck' | 'diagnostics' | 'settings' | 'routing';

export interface ReadinessCheck {
  id: string;
  /** The rule checked, in words a reader can verify against the trunk. */
  spec: string;
  title: string;
  status: 'pass' | 'warn' | 'fail';
  evidence: string;
  fix: Fix;
}

/**
 * Whether a supplier trunk is ready to carry traffic (spec "Readiness"): a pure read. Failing checks
 * block activation (`blockingEnabled`); warnings never block. Marketplace (bundle carriage) trunks and trunks marked exempt have no checks.
 */
export function createReadiness(deps: { sql: Sql; clock: Clock }) {
  const { sql } = deps;

  async function evaluate(accountId: string, trunkId: string) {
    const [trunk] = await selectTrunks(sql, accountId, { id: trunkId });
    if (!trunk) throw notFound('Supplier trunk');
    // Failing checks always block activation of an external trunk (the field says so to clients
    // that also read trunks whose checks do not block: exempt and marketplace ones).
    const blockingEnabled = true;
    const exempt = trunk.source === 'marketplace' || trunk['readinessExempt'] === true;
    const base = { trunkId, blockingEnabled };
    if (exempt) {
      const exemptReason =
        trunk.source === 'marketplace'
          ? 'bundle carriage: a marketplace trunk'
          : ((trunk['exemptReason'] as string | null) ?? 'exempt');
      return {
        ...base,
        blockingEnabled: false,
        exempt: true,
        exemptReason,
        state: 'exempt' as const,
        checks: [],
        failing: 0,
        warning: 0,
        grandfathered: false,
      };
    }

    const endpoints = await selectEndpoints(sql, [trunkId]);
    const [provider] = trunk.supplierId
      ? await sql<{ status: string; contacts: number }[]>`
          select status, (select count(*)::int from switch_provider_contacts c
            where c.provider_id = p.id and c.role in ('noc', 'technical')) as contacts
          from switch_providers p where id = ${trunk.supplierId}`
      : [];
    const [deck] = await sql<{ n: number }[]>`
      select count(*)::int as n from switch_trunk_rates
      where trunk_id = ${trunkId} and status = 'active' and effective_from <= ${deps.clock.now()}`;

    const checks: ReadinessCheck[] = [];
    const add = (c: Omit<ReadinessCheck, 'status'>, status: ReadinessCheck['status']) => checks.push({ ...c, status });

    const supplier = {
      id: 'supplier',
      spec: 'the trunk belongs to a provider that is testing or active',
      title: 'Provider',
      fix: 'supplier' as const,
    };
    if (!provider) add({ ...supplier, evidence: 'no provider (ungrouped trunk)' }, 'warn');
    else if (provider.status === 'suspended' || provider.status === 'terminated')
      add({ ...supplier, evidence: `provider is ${provider.status}` }, 'fail');
    else
      add(
        { ...supplier, evidence: `provider is ${provider.status}` },
        provider.status === 'testing' || provider.status === 'active' ? 'pass' : 'warn',
      );

    const contacts = {
      id: 'noc_contact',
      spec: 'the provider has a NOC or technical contact',
      title: 'NOC contact',
      fix: 'contacts' as const,
    };
    add(
      { ...contacts, evidence: `${provider?.contacts ?? 0} NOC or technical contacts` },
      (provider?.contacts ?? 0) > 0 ? 'pass' : 'warn',
    );

    const enabled = endpoints.filter((e) => e.enabled).length;
    // A trunk with an address and no endpoint rows has it adopted as endpoint 1 on first endpoints read.
    const adoptable = endpoints.length === 0 && typeof trunk['sipHost'] === 'string';
    add(
      {
        id: 'endpoints',
        spec: 'at least one enabled SIP endpoint',
        title: 'SIP endpoints',
        evidence: adoptable
          ? 'sipHost set, adopted as endpoint 1 on first read'
          : `${enabled} of ${endpoints.length} enabled`,
        fix: 'endpoints',
      },
      enabled > 0 || adoptable ? 'pass' : 'fail',
    );

    const user = trunk['sipAuthUsername'] !== null;
    const pass = trunk['sipAuthPasswordSet'] === true;
    add(
      {
        id: 'sip_auth',
        spec: 'SIP digest username and password are both set or both empty',
        title: 'SIP authentication',
        evidence: user
          ? pass
            ? 'username and password set'
            : 'username without a password'
          : pass
            ? 'password without a username'
            : 'IP authentication',
        fix: 'configuration',
      },
      user === pass ? 'pass' : 'fail',
    );

    add(
      {
        id: 'capacity',
        spec: 'capacity (max concurrent channels) above 0',
        title: 'Capacity',
        evidence: `capacity ${trunk.capacity}`,
        fix: 'configuration',
      },
      trunk.capacity > 0 ? 'pass' : 'fail',
    );

    const fallback = Money.parse(trunk['defaultRatePerUnit'] as string).isPositive();
    add(
      {
        id: 'cost_deck',
        spec: 'an active cost-deck row or a default rate above 0',
        title: 'Cost deck',
        evidence: `${deck?.n ?? 0} active rows, default rate ${String(trunk['defaultRatePerUnit'])}`,
        fix: 'cost_deck',
      },
      (deck?.n ?? 0) > 0 || fallback ? 'pass' : 'fail',
    );

    const reach = trunk['reachable'] as boolean | null;
    add(
      {
        id: 'reachability',
        spec: 'an enabled endpoint answered the last SIP OPTIONS check',
        title: 'Reachability',
        evidence:
          reach === null
            ? 'never checked'
            : `${reach ? 'reachable' : 'unreachable'} at ${(trunk['reachCheckedAt'] as Date).toISOString()}`,
        fix: 'diagnostics',
      },
      reach === null ? 'warn' : reach ? 'pass' : 'fail',
    );

    const method = trunk['smsDeliveryMethod'] as string | null;
    const smsMissing =
      method === 'smpp'
        ? (['smppHost', 'smppSystemId'] as const)
            .filter((k) => trunk[k] === null)
            .concat(trunk['smppPasswordSet'] ? [] : ['smppPassword' as never])
        : method === 'http' && trunk['smsDeliveryUrl'] === null
          ? ['smsDeliveryUrl']
          : [];
    add(
      {
        id: 'sms_delivery',
        spec: 'SMS delivery details complete for the chosen method',
        title: 'SMS delivery',
        evidence:
          method === null
            ? 'no SMS delivery'
            : smsMissing.length
              ? `missing ${smsMissing.join(', ')}`
              : `${method} details complete`,
        fix: 'settings',
      },
      smsMissing.length ? 'fail' : 'pass',
    );

    const failing = checks.filter((c) => c.status === 'fail').length;
    return {
      ...base,
      exempt: false,
      exemptReason: null,
      state: failing ? ('not_ready' as const) : ('ready' as const),
      checks,
      failing,
      warning: checks.filter((c) => c.status === 'warn').length,
      grandfathered: failing > 0 && trunk.status === 'active',
    };
  }

  return {
    evaluate,
    /** What activation checks: the failing checks, and whether they block. */
    async blockers(accountId: string, trunkId: string) {
      const r = await evaluate(accountId, trunkId);
      return {
        blocking: !r.exempt,
        blockers: r.checks
          .filter((c) => c.status === 'fail')
          .map(({ id, title, evidence, fix }) => ({ id, title, evidence, fix })),
      };
    },
  };
}

export type Readiness = ReturnType<typeof createReadiness>;
