import { isDeepStrictEqual } from 'node:util';
import type { Sql } from '../../db/connection.js';
import { validationError } from '../../http/errors.js';
import { Money } from '../../ledger/money.js';
import type { Clock } from '../../platform/clock.js';
import { writeAuditEntry, type AuditActor } from './audit.js';

export interface Address {
  line1: string;
  line2?: string | undefined;
  city: string;
  postalCode?: string | undefined;
  region?: string | undefined;
  country: string;
}

interface ProfileRow {
  accountId: string;
  displayName: string | null;
  timeZone: string;
  currencyDisplay: string;
  locale: string;
  companyName: string | null;
  taxId: string | null;
  billingEmail: string | null;
  address: Address | null;
  lowBalanceThreshold: string | null;
  updatedAt: Date | null;
}

export type Actor = AuditActor;

const DEFAULTS = { timeZone: 'UTC', currencyDisplay: 'USD', locale: 'en' };

/** IANA zone names as the runtime knows them (Intl rejects an unknown one). */
function validZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/**
 * The account's own settings: profile and display preferences, company and billing details, and
 * the audit log of every change (what changed, from and to, by whom).
 */
export function createAccountProfile(deps: { sql: Sql; clock: Clock; defaultLowBalance: string }) {
  const { sql, clock } = deps;

  async function row(accountId: string): Promise<ProfileRow> {
    const [r] = await sql<ProfileRow[]>`
      select account_id, display_name, time_zone, currency_display, locale, company_name, tax_id, billing_email, address,
             low_balance_threshold::text, updated_at
      from account_profiles where account_id = ${accountId}`;
    return (
      r ?? {
        accountId,
        displayName: null,
        ...DEFAULTS,
        companyName: null,
        taxId: null,
        billingEmail: null,
        address: null,
        lowBalanceThreshold: null,
        updatedAt: null,
      }
    );
  }

  /** Writes the changed fields and their audit entry in one transaction; unchanged fields are not logged. */
  async function change(accountId: string, actor: Actor, action: string, patch: Partial<ProfileRow>) {
    const before = await row(accountId);
    const changes: Record<string, { from: unknown; to: unknown }> = {};
    for (const [k, v] of Object.entries(patch)) {
      const old = before[k as keyof ProfileRow];
      // Deep comparison: jsonb hands the address back with its keys in its own order.
      if (v !== undefined && !isDeepStrictEqual(old, v)) changes[k] = { from: old, to: v };
    }
    if (Object.keys(changes).length === 0) return;
    const next = { ...before, ...Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) };
    const now = clock.now();
    await sql.begin(async (tx) => {
      await tx`
        insert into account_profiles (account_id, display_name, time_zone, currency_display, locale, company_name, tax_id,
                                      billing_email, address, low_balance_threshold, updated_at)
        values (${accountId}, ${next.displayName}, ${next.timeZone}, ${next.currencyDisplay}, ${next.locale}, ${next.companyName},
                ${next.taxId}, ${next.billingEmail}, ${next.address ? tx.json(next.address as never) : null},
                ${next.lowBalanceThreshold}::numeric, ${now})
        on conflict (account_id) do update set display_name = excluded.display_name, time_zone = excluded.time_zone,
          currency_display = excluded.currency_display, locale = excluded.locale, company_name = excluded.company_name,
          tax_id = excluded.tax_id, billing_email = excluded.billing_email, address = excluded.address,
          low_balance_threshold = excluded.low_balance_threshold, updated_at = excluded.updated_at`;
      await writeAuditEntry(tx, { accountId, actor, action, changes, at: now });
    });
  }

  const profile = (r: ProfileRow) => ({
    displayName: r.displayName,
    timeZone: r.timeZone,
    currencyDisplay: r.currencyDisplay,
    locale: r.locale,
    updatedAt: r.updatedAt?.toISOString() ?? null,
  });
  const billing = (r: ProfileRow) => ({
    companyName: r.companyName,
    taxId: r.taxId,
    billingEmail: r.billingEmail,
    address: r.address,
    updatedAt: r.updatedAt?.toISOString() ?? null,
  });

  return {
    profile: async (accountId: string) => profile(await row(accountId)),

    async updateProfile(
      accountId: string,
      actor: Actor,
      p: { displayName?: string | null; timeZone?: string; currencyDisplay?: string; locale?: string },
    ) {
      if (p.timeZone !== undefined && !validZone(p.timeZone))
        throw validationError([{ path: 'timeZone', message: 'is not an IANA time zone' }]);
      await change(accountId, actor, 'profile.updated', p);
      return profile(await row(accountId));
    },

    billingDetails: async (accountId: string) => billing(await row(accountId)),

    /** The balance.low line: the account's own, else the exchange's default. */
    async lowBalance(accountId: string) {
      const r = await row(accountId);
      return {
        threshold: r.lowBalanceThreshold === null ? null : Money.parse(r.lowBalanceThreshold).toString(),
        default: Money.parse(deps.defaultLowBalance).toString(),
        effective: Money.parse(r.lowBalanceThreshold ?? deps.defaultLowBalance).toString(),
      };
    },

    async setLowBalance(accountId: string, actor: Actor, threshold: string | null) {
      const v = threshold === null ? null : Money.parse(threshold).toString();
      await change(accountId, actor, 'low_balance_threshold.updated', { lowBalanceThreshold: v });
      return this.lowBalance(accountId);
    },

    async putBillingDetails(
      accountId: string,
      actor: Actor,
      p: { companyName: string | null; taxId: string | null; billingEmail: string | null; address: Address | null },
    ) {
      await change(accountId, actor, 'billing_details.updated', p);
      return billing(await row(accountId));
    },

    /** What receipts and invoices freeze when a top-up is credited. */
    async identity(accountId: string, base: { email: string | null; name: string | null }) {
      const r = await row(accountId);
      return {
        accountId,
        email: r.billingEmail ?? base.email,
        name: r.displayName ?? base.name,
        companyName: r.companyName,
        taxId: r.taxId,
        address: r.address,
      };
    },

    async auditLog(accountId: string, cursor: string | undefined, max: number) {
      const rows = await sql<
        {
          id: string;
          actorId: string | null;
          credential: string;
          action: string;
          changes: Record<string, unknown>;
          ip: string | null;
          createdAt: Date;
        }[]
      >`
        select id, actor_id, credential, action, changes, ip, created_at from account_audit_log
        where account_id = ${accountId} ${cursor ? sql`and id < ${cursor}` : sql``}
        order by id desc limit ${max}`;
      return rows.map((r) => ({ ...r, createdAt: r.createdAt.toISOString() }));
    },
  };
}

export type AccountProfile = ReturnType<typeof createAccountProfile>;
