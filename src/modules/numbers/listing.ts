import type { Logger } from 'pino';
import type { Sql } from '../../db/connection.js';
import { conflict, notFound, ruleError } from '../../http/errors.js';
import type { Clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import { emit } from '../../webhooks/emit.js';
import type { AccountsService } from '../accounts/service.js';
import * as inv from './inventory-repo.js';
import * as repo from './listing-repo.js';
import type { ListingInput, ListingRequestRow } from './listing-repo.js';

const presentRequest = (r: ListingRequestRow) => ({
  id: r.id,
  status: r.status,
  selectedDids: r.selectedDidIds,
  didCount: r.didCount,
  submittedAt: r.submittedAt.toISOString(),
  reviewedAt: r.reviewedAt === null ? null : r.reviewedAt.toISOString(),
});

/** The operator's view of a request: everything the seller sent. */
const presentForReview = (r: ListingRequestRow) => ({
  ...presentRequest(r),
  accountId: r.accountId,
  companyName: r.companyName,
  contactName: r.contactName,
  contactEmail: r.contactEmail,
  contactPhone: r.contactPhone,
  countries: r.countries,
  numberTypes: r.numberTypes,
  monthlyVolume: r.monthlyVolume,
  targetPrice: r.targetPrice,
  notes: r.notes,
  reviewNote: r.reviewNote,
});

/** A seller asks to list numbers; the operator approves (the account becomes a seller) or rejects. */
export function createListingRequests(deps: { sql: Sql; clock: Clock; log: Logger; accounts: AccountsService }) {
  const { sql, clock, log } = deps;
  return {
    async current(accountId: string) {
      const [owned] = await sql<{ n: number }[]>`
        select count(*)::int as n from dids where account_id = ${accountId} and status = 'active'`;
      const latest = await repo.latest(sql, accountId);
      const account = await deps.accounts.getAccount(accountId);
      return {
        ownedActiveDids: owned?.n ?? 0,
        request: latest ? presentRequest(latest) : null,
        prefill: {
          companyName: latest?.companyName ?? null,
          contactName: latest?.contactName ?? null,
          contactEmail: latest?.contactEmail ?? account?.email ?? null,
          contactPhone: latest?.contactPhone ?? null,
        },
      };
    },

    async submit(accountId: string, input: ListingInput) {
      const bad = input.selectedDidIds.length
        ? await sql<{ id: string }[]>`
            select x.id from unnest(${input.selectedDidIds}::uuid[]) as x(id)
            where not exists (select 1 from dids d where d.id = x.id and d.account_id = ${accountId})`
        : [];
      if (bad.length > 0) throw ruleError(`Not your number: ${bad.map((b) => b.id).join(', ')}`);
      const id = newId();
      const at = clock.now();
      if (!(await repo.insert(sql, id, accountId, input, at)))
        throw conflict('A listing request is already open; wait for its review');
      log.info({ accountId, requestId: id }, 'number listing request submitted');
      return { id, status: 'pending' as const, submittedAt: at.toISOString() };
    },

    async list(q: { status?: repo.ListingStatus | undefined; cursor?: string | undefined; limit: number }) {
      return (await repo.list(sql, q)).map(presentForReview);
    },

    /** Approving makes the account a seller; the seller hears of the outcome through its outbox. */
    async review(reviewerId: string, id: string, decision: 'approved' | 'rejected', note: string | null) {
      const at = clock.now();
      const row = await sql.begin(async (tx) => {
        const r = await repo.byId(tx, id, { forUpdate: true });
        if (!r) throw notFound('Listing request');
        if (r.status !== 'pending') throw conflict(`The request is already ${r.status}`);
        await repo.review(tx, id, { status: decision, reviewer: reviewerId, note, at });
        if (decision === 'approved') await inv.addSeller(tx, r.accountId, id, at);
        await emit(tx, {
          accountId: r.accountId,
          event: 'number.listing_request.reviewed',
          data: { requestId: id, status: decision, note },
          at,
        });
        return (await repo.byId(tx, id))!;
      });
      log.info({ requestId: id, decision }, 'number listing request reviewed');
      return presentForReview(row);
    },
  };
}

export type ListingRequests = ReturnType<typeof createListingRequests>;
