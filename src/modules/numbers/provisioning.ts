import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { Db, Sql } from '../../db/connection.js';
import type { Clock } from '../../platform/clock.js';
import { emit } from '../../webhooks/emit.js';
import * as dids from './did-repo.js';
import type { EmergencyAddress } from './did-repo.js';
import type { ProviderRef, ProvisioningProvider, ProvisionOutcome } from './telnyx-provisioning.js';

export type ProvisionKind = 'cnam' | 'emergency';
export type ProvisionStatus = 'not_provisioned' | 'pending' | 'provisioned' | 'failed';

export const NO_PROVIDER = 'No provisioning provider is configured ([numbers] provisioning_url)';
const MAX_BACKOFF_MS = 3_600_000;

interface Row {
  didId: string;
  kind: ProvisionKind;
  status: ProvisionStatus;
  desired: unknown;
  providerRef: ProviderRef;
  error: string | null;
  attempts: number;
  nextAttemptAt: Date | null;
  provisionedAt: Date | null;
  updatedAt: Date;
}

export interface ProvisionView {
  status: ProvisionStatus;
  error: string | null;
  attempts: number;
  nextAttemptAt: string | null;
  provisionedAt: string | null;
  updatedAt: string;
}

const present = (r: Row): ProvisionView => ({
  status: r.status,
  error: r.error,
  attempts: r.attempts,
  nextAttemptAt: r.status === 'pending' && r.nextAttemptAt ? r.nextAttemptAt.toISOString() : null,
  provisionedAt: r.provisionedAt?.toISOString() ?? null,
  updatedAt: r.updatedAt.toISOString(),
});

const canonical = (v: unknown): string =>
  v !== null && typeof v === 'object' && !Array.isArray(v)
    ? `{${Object.keys(v)
        .sort()
        .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
        .join(',')}}`
    : JSON.stringify(v);

/**
 * CNAM listings and emergency addresses sent to the provisioning provider (docs/numbers.md
 * "Provisioning"). The owner's change marks the number's row `pending` in the change's
 * transaction; the job sends it, outside any transaction, and records the outcome only if the
 * owner has not changed the setting meanwhile (the row's `desired` is compared), with
 * `number.provisioning.updated` when the status moves. With no provider the row says
 * `not_provisioned` and why: nothing is reported done that was not.
 */
export function createProvisioning(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  provider: ProvisioningProvider | null;
  intervalSeconds: number;
}) {
  const { sql, clock, log, provider } = deps;
  const backoff = (attempts: number) =>
    Math.min(deps.intervalSeconds * 1000 * 2 ** Math.max(0, attempts - 1), MAX_BACKOFF_MS);

  async function changed(
    tx: Db,
    r: { didId: string; kind: ProvisionKind },
    status: ProvisionStatus,
    error: string | null,
    at: Date,
  ) {
    const [d] = await tx<{ accountId: string; number: string | null }[]>`
      select account_id, number from dids where id = ${r.didId}`;
    if (!d) return;
    await dids.event(tx, {
      didId: r.didId,
      accountId: d.accountId,
      kind: 'provisioning_changed',
      at,
      data: { what: r.kind, status, error },
    });
    await emit(tx, {
      accountId: d.accountId,
      event: 'number.provisioning.updated',
      data: { didId: r.didId, number: d.number, kind: r.kind, status, error },
      at,
    });
  }

  return {
    configured: provider !== null,

    /**
     * The owner set (or cleared: null) a number's caller name or emergency address: in the
     * change's transaction, the row becomes `pending` (or `not_provisioned` without a provider).
     * A cleared setting never sent anywhere is simply forgotten.
     */
    async request(tx: Db, didId: string, kind: ProvisionKind, desired: unknown, at: Date): Promise<void> {
      const [prior] = await tx<Row[]>`
        select * from did_provisioning where did_id = ${didId} and kind = ${kind} for update`;
      if (
        desired === null &&
        (!prior || prior.status === 'not_provisioned' || prior.providerRef.phoneNumberId === undefined)
      ) {
        if (prior) await tx`delete from did_provisioning where did_id = ${didId} and kind = ${kind}`;
        return;
      }
      const status: ProvisionStatus = provider ? 'pending' : 'not_provisioned';
      const error = provider ? null : NO_PROVIDER;
      // The number's provider id stays; an address edited is a new provider record.
      const ref: ProviderRef = prior?.providerRef.phoneNumberId
        ? { phoneNumberId: prior.providerRef.phoneNumberId }
        : {};
      await tx`
        insert into did_provisioning (did_id, kind, status, desired, provider_ref, error, attempts, next_attempt_at, updated_at)
        values (${didId}, ${kind}, ${status}, ${desired === null ? null : tx.json(desired as never)}, ${tx.json(ref as never)},
                ${error}, 0, ${provider ? at : null}, ${at})
        on conflict (did_id, kind) do update set status = excluded.status, desired = excluded.desired,
          provider_ref = excluded.provider_ref, error = excluded.error, attempts = 0,
          next_attempt_at = excluded.next_attempt_at, updated_at = excluded.updated_at`;
      if (prior?.status !== status) await changed(tx, { didId, kind }, status, error, at);
    },

    /** A number's provisioning state per kind; kinds never set are absent. */
    async of(didId: string): Promise<Partial<Record<ProvisionKind, ProvisionView>>> {
      const rows = await sql<Row[]>`select * from did_provisioning where did_id = ${didId}`;
      return Object.fromEntries(rows.map((r) => [r.kind, present(r)]));
    },

    /** With a provider now configured, numbers left `not_provisioned` (set while none was) are queued. */
    async queueUnsent(): Promise<number> {
      if (!provider) return 0;
      const at = clock.now();
      const rows = await sql`
        update did_provisioning set status = 'pending', error = null, next_attempt_at = ${at}, updated_at = ${at}
        where status = 'not_provisioned' returning did_id`;
      return rows.length;
    },

    /** Sends every due `pending` row once; each claimed for a lease so another daemon skips it. */
    async run(): Promise<{ provisioned: number; failed: number; retried: number }> {
      const out = { provisioned: 0, failed: 0, retried: 0 };
      if (!provider) return out;
      for (;;) {
        const now = clock.now();
        const lease = new Date(now.getTime() + 5 * 60_000);
        const [job] = await sql<(Row & { number: string | null; accountId: string })[]>`
          update did_provisioning p set next_attempt_at = ${lease}
          from (select did_id, kind from did_provisioning where status = 'pending' and next_attempt_at <= ${now}
                order by next_attempt_at limit 1 for update skip locked) due, dids d
          where p.did_id = due.did_id and p.kind = due.kind and d.id = p.did_id
          returning p.*, d.number, d.account_id`;
        if (!job) break;
        const outcome = await send(job);
        await record(job, outcome);
        if (outcome.status === 'provisioned') out.provisioned++;
        else if (outcome.status === 'failed') out.failed++;
        else out.retried++;
      }
      if (out.provisioned + out.failed + out.retried > 0) log.info(out, 'number provisioning run');
      return out;
    },
  };

  async function send(job: Row & { number: string | null; accountId: string }): Promise<ProvisionOutcome> {
    if (job.number === null) return { status: 'failed', ref: job.providerRef, error: 'the number has no digits yet' };
    if (job.kind === 'cnam')
      return provider!.callerName(job.number, (job.desired as string | null) ?? null, job.providerRef);
    const address = (job.desired as EmergencyAddress | null) ?? null;
    const ref = { ...job.providerRef };
    const hash = address ? createHash('sha256').update(canonical(address)).digest('hex') : null;
    if (hash && !ref.addressId) {
      // The account registered this very address for another number: the provider's record is reused.
      const [known] = await sql<{ providerAddressId: string }[]>`
        select provider_address_id from number_provider_addresses where account_id = ${job.accountId} and address_hash = ${hash}`;
      if (known) ref.addressId = known.providerAddressId;
    }
    const outcome = await provider!.emergency(job.number, address, ref);
    if (hash && outcome.ref.addressId)
      await sql`
        insert into number_provider_addresses (account_id, address_hash, provider_address_id, created_at)
        values (${job.accountId}, ${hash}, ${outcome.ref.addressId}, ${clock.now()})
        on conflict do nothing`;
    return outcome;
  }

  /** Writes the outcome unless the owner changed the setting since it was sent (then the new one is due). */
  async function record(job: Row, o: ProvisionOutcome): Promise<void> {
    const at = clock.now();
    const status: ProvisionStatus = o.status === 'retry' ? 'pending' : o.status;
    const error = o.status === 'failed' || o.status === 'retry' ? o.error : null;
    const attempts = job.attempts + 1;
    const next = status === 'pending' ? new Date(at.getTime() + backoff(attempts)) : null;
    await sql.begin(async (tx) => {
      const [row] = await tx<Row[]>`
        update did_provisioning set status = ${status}, error = ${error}, provider_ref = ${tx.json(o.ref as never)},
          attempts = ${attempts}, next_attempt_at = ${next},
          provisioned_at = ${status === 'provisioned' ? at : tx`provisioned_at`}, updated_at = ${at}
        where did_id = ${job.didId} and kind = ${job.kind}
          and desired is not distinct from ${job.desired === null ? null : tx.json(job.desired as never)}
        returning *`;
      if (!row) return;
      if (status !== job.status) await changed(tx, job, status, error, at);
    });
    if (o.status === 'failed') log.warn({ didId: job.didId, kind: job.kind, error }, 'number provisioning refused');
  }
}

export type Provisioning = ReturnType<typeof createProvisioning>;
