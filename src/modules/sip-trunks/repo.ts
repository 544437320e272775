import { conflict } from '../../http/errors.js';
import type { Db, Sql } from '../../db/connection.js';
import { holdManyItem, isRefusal, type Refusal } from '../../ledger/ledger.js';
import { createTtlCache } from '../../platform/ttl-cache.js';

export interface OrphanPricing {
  markupPct: string;
  /** `mediaMode` absent in rows written before it was kept. */
  routes: Record<
    string,
    {
      price: string;
      sellerRate: string;
      increment: string;
      sellerId: string;
      mediaMode?: 'direct' | 'proxy';
      /** The payer's own markup on this route (a sub-account's route markup), when it has one. */
      markupPct?: string;
      /** The interconnection whose terms priced the route. */
      interconnectionId?: string;
      /** An AI agent's fee per minute inside `price`: billed only to `agentLeftAt` when the agent transferred. */
      agentFee?: string;
      /** A forward's backup number this entry (keyed `route>number`) dials; the call row's `to_number` once answered. */
      to?: string;
    }
  >;
  /** `inbound`: a call delivered to a rented number's own target (its CDRs say so). */
  direction?: 'inbound';
  /** A Switch customer's sell rate for the number, which replaces the markup on every route. */
  sell?: { rate: string; increment: string };
  /** The rented number the call arrived for (delivered or forwarded). */
  didId?: string;
  /**
   * A forwarded number call's inbound minutes, billed to the payer beside the answered route for
   * the same seconds from the same hold (its own CDR, `direction: inbound`, route the DID).
   */
  inbound?: {
    didId: string;
    number: string;
    price: string;
    sellerRate: string;
    increment: string;
    sellerId: string;
    markupPct?: string;
  };
}

/**
 * `ipCacheMs`: how long a source address's whitelist answer is reused (every trunk INVITE asks);
 * changes made through this repo clear it at once, others (another daemon, svcctl) show within it.
 */
export function createCallsRepo(db: Db, opts: { ipCacheMs?: number; now?: () => number } = {}) {
  const ipCacheMs = opts.ipCacheMs ?? 0;
  const now = opts.now ?? Date.now;
  // Bounded against a flood of distinct sources; null caches "not whitelisted" too.
  const byIp = createTtlCache<string, TrunkIpPoint | null>(ipCacheMs, { now: () => new Date(now()) }, 10_000);
  const byPurchase = createTtlCache<string, ConnectionGate | null>(ipCacheMs, { now: () => new Date(now()) }, 10_000);
  /** The approved claim of a source address with its limits, or null when none attributes calls. */
  async function trunkIpPoint(ip: string): Promise<TrunkIpPoint | null> {
    const hit = byIp.get(ip);
    if (hit !== undefined) return hit;
    // Only an approved claim attributes calls: a pending one is someone's unconfirmed word.
    const [r] = await db<(ConnectionGate & { accountId: string })[]>`
      select id, account_id, max_concurrent_calls, max_cps, disabled_at is not null as disabled
      from trunk_ips where ip = ${ip}::inet and status = 'approved'`;
    byIp.set(ip, r ?? null);
    return r ?? null;
  }
  return {
    /** Drops every cached whitelist and credential answer (a connection point changed, here or on another daemon). */
    forgetPoints(): void {
      byIp.clear();
      byPurchase.clear();
    },
    // Status, operator and call terms of a paying account in one round trip (accounts, sub-account
    // and operator settings tables, read only): the trunk call path runs it for every call.
    async payerTerms(accountId: string) {
      const [r] = await db<
        {
          status: string;
          parentId: string | null;
          markupPct: string | null;
          maxConcurrentCalls: number | null;
          defaultMarkupPct: string | null;
          routeMarkups: { routeId: string; markupPct: string }[] | null;
        }[]
      >`
        select a.status, a.parent_id, s.markup_pct::text, s.max_concurrent_calls, st.default_markup_pct::text,
               (select json_agg(json_build_object('routeId', m.route_id, 'markupPct', m.markup_pct::text))
                from sub_account_route_markups m where m.sub_account_id = a.id) as route_markups
        from accounts a
        left join sub_accounts s on s.account_id = a.id
        left join application_settings st on st.operator_id = a.parent_id
        where a.id = ${accountId}`;
      return r ?? null;
    },

    // Supplier endpoints of active voice routes, for the OPTIONS health checks (marketplace tables, read only).
    probeTargets: () =>
      db<{ host: string; port: number; transport: string }[]>`
        select distinct e.host, e.port, e.transport from route_endpoints e join routes r on r.id = e.route_id
        where r.type = 'voice' and r.status = 'active'
        limit 10000`,

    async insertCall(
      c: {
        id: string;
        accountId: string;
        operatorId: string | null;
        source: string;
        mode: string;
        status: string;
        toNumber: string;
        fromNumber: string;
        callGroupId: string;
        holdId: string | null;
        maxDurationSeconds: number;
        pricing: unknown;
        ownerNode: string;
        now: Date;
        simulated?: boolean;
        actions?: unknown;
      },
      tx: Db = db,
    ) {
      await tx`
        insert into calls (id, account_id, operator_id, source, mode, status, to_number, from_number, call_group_id, hold_id,
                           max_duration_seconds, pricing, owner_node, last_seen_at, created_at, simulated, actions)
        values (${c.id}, ${c.accountId}, ${c.operatorId}, ${c.source}, ${c.mode}, ${c.status}, ${c.toNumber}, ${c.fromNumber},
                ${c.callGroupId}, ${c.holdId}, ${c.maxDurationSeconds}, ${tx.json(c.pricing as never)}, ${c.ownerNode}, ${c.now},
                ${c.now}, ${c.simulated ?? false}, ${c.actions === undefined ? null : tx.json(c.actions as never)})`;
    },
    /**
     * A trunk call's hold (ledger_hold, the ledger's own function) and its call row in one statement:
     * one round trip and one commit, so the payer's balance row, which every call of that payer
     * waits on, is locked no longer than the statement. Returns the hold id and the available balance it left; SVC01 when unaffordable, SVC04 past the payer's daily cap.
     */
    async insertCallWithHold(c: TrunkCallInsert, hold: TrunkHoldInput): Promise<TrunkHeld> {
      const [r] = await db<TrunkHeld[]>`
        with h as (
          select ledger_hold(${hold.postingKey}, ${c.accountId}::uuid, ${hold.amount}::numeric, false, ${new Date(c.now.getTime() + hold.ttlSeconds * 1000)}, ${hold.reference},
                             'sip_call', ${c.id}::text, ${c.id}::text, ${c.now}) as r
        )
        insert into calls (id, account_id, operator_id, source, mode, status, to_number, from_number, call_group_id, hold_id,
                           max_duration_seconds, pricing, owner_node, last_seen_at, created_at)
        values (${c.id}, ${c.accountId}, ${c.operatorId}, 'trunk', 'trunk', 'ringing', ${c.toNumber}, ${c.fromNumber},
                ${c.id}, (select (h.r ->> 'holdId')::uuid from h), ${c.maxDurationSeconds}, ${db.json(c.pricing as never)}, ${c.ownerNode},
                ${c.now}, ${c.now})
        returning hold_id, (select h.r ->> 'available' from h) as available`;
      return r!;
    },
    /**
     * The holds of many calls (ledger_hold_many, migration 016: each payer's row locked once) and
     * the rows of the calls granted one, in one statement: atomic on its own, so one round trip
     * where BEGIN, the holds, the rows and COMMIT took four, and never a hold without its call row.
     * Results in item order: the hold granted, or the ledger's refusal (no row written for it).
     */
    async insertCallsWithHolds(
      items: readonly { call: TrunkCallInsert; hold: TrunkHoldInput }[],
      at: Date,
    ): Promise<(TrunkHeld | Refusal)[]> {
      // Each hold expires from its own call's start.
      const holds = items.map(({ call: c, hold: h }) =>
        holdManyItem(
          {
            postingKey: h.postingKey,
            accountId: c.accountId,
            amount: h.amount,
            ttlSeconds: h.ttlSeconds,
            reference: h.reference,
            relatedEntityType: 'sip_call',
            relatedEntityId: c.id,
            callId: c.id,
          },
          c.now,
        ),
      );
      const rows = items.map(({ call: c }, i) => ({
        i: i + 1,
        id: c.id,
        account_id: c.accountId,
        operator_id: c.operatorId,
        to_number: c.toNumber,
        from_number: c.fromNumber,
        max_duration_seconds: c.maxDurationSeconds,
        pricing: c.pricing,
        owner_node: c.ownerNode,
        at: c.now.toISOString(),
      }));
      // The insert is a data-modifying CTE: it runs whether or not the final select reads it.
      const [r] = await db<{ r: (TrunkHeld | Refusal)[] }[]>`
        with h as materialized (select ledger_hold_many(${db.json(holds as never)}, ${at}) as r),
        held as (select e.r, e.i from h cross join lateral jsonb_array_elements(h.r) with ordinality as e(r, i)),
        rows as (
          insert into calls (id, account_id, operator_id, source, mode, status, to_number, from_number, call_group_id, hold_id,
                             max_duration_seconds, pricing, owner_node, last_seen_at, created_at)
          select c.id, c.account_id, c.operator_id, 'trunk', 'trunk', 'ringing', c.to_number, c.from_number, c.id,
                 (held.r ->> 'holdId')::uuid, c.max_duration_seconds, c.pricing, c.owner_node, c.at, c.at
          from jsonb_to_recordset(${db.json(rows as never)}) as c(i bigint, id uuid, account_id uuid, operator_id uuid, to_number text,
                 from_number text, max_duration_seconds integer, pricing jsonb, owner_node text, at timestamptz)
          join held on held.i = c.i
          where held.r ->> 'holdId' is not null
          returning 1
        )
        select h.r from h`;
      return r!.r.map((x) => (isRefusal(x) ? x : { holdId: x.holdId, available: x.available }));
    },
    /**
     * The rows of trunk calls whose holds a batch was granted (ledger.holdMany in the same
     * transaction): never a hold without its call row.
     */
    async insertTrunkCalls(tx: Db, rows: readonly { call: TrunkCallInsert; holdId: string | null }[]) {
      if (rows.length === 0) return;
      await tx`insert into calls ${tx(
        rows.map(({ call: c, holdId }) => ({
          id: c.id,
          account_id: c.accountId,
          operator_id: c.operatorId,
          source: 'trunk',
          mode: 'trunk',
          status: 'ringing',
          to_number: c.toNumber,
          from_number: c.fromNumber,
          call_group_id: c.id,
          hold_id: holdId,
          max_duration_seconds: c.maxDurationSeconds,
          pricing: tx.json(c.pricing as never),
          owner_node: c.ownerNode,
          last_seen_at: c.now,
          created_at: c.now,
        })),
      )}`;
    },
    async markCall(
      id: string,
      patch: { status: string; routeId?: string | null; ringingAt?: Date; answeredAt?: Date },
      tx: Db = db,
    ) {
      await tx`
        update calls set status = ${patch.status},
          route_id = coalesce(${patch.routeId ?? null}::uuid, route_id),
          ringing_at = coalesce(ringing_at, ${patch.ringingAt ?? null}::timestamptz),
          answered_at = coalesce(answered_at, ${patch.answeredAt ?? null}::timestamptz),
          -- A sign of life: a crash before the next heartbeat bills from here, not from the INVITE.
          last_seen_at = greatest(last_seen_at, ${patch.answeredAt ?? patch.ringingAt ?? null}::timestamptz)
        where id = ${id} and ended_at is null`;
    },
    /** The moment an AI agent answering the call transferred the caller (its fee ends there). */
    async markAgentLeft(id: string, at: Date) {
      await db`update calls set agent_left_at = ${at} where id = ${id} and ended_at is null`;
    },
    /** Answered marks of many trunk calls in one statement (ids sorted: row locks always taken in one order). */
    async markAnsweredMany(
      marks: readonly { id: string; routeId: string; answeredAt: Date; toNumber?: string | undefined }[],
    ) {
      const sorted = [...marks].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      await db`
        update calls c set status = 'answered', route_id = v.route_id,
          -- A forward's backup answered: the row names the number reached (the crash reconcile prices by it).
          to_number = coalesce(v.to_number, c.to_number),
          answered_at = coalesce(c.answered_at, v.at),
          -- A sign of life: a crash before the next heartbeat bills from here, not from the INVITE.
          last_seen_at = greatest(c.last_seen_at, v.at)
        from unnest(${db.array(sorted.map((m) => m.id))}::uuid[], ${db.array(sorted.map((m) => m.routeId))}::uuid[],
                    ${db.array(sorted.map((m) => m.answeredAt.toISOString()))}::timestamptz[],
                    ${db.array(sorted.map((m) => m.toNumber ?? null) as string[])}::text[]) as v(id, route_id, at, to_number)
        where c.id = v.id and c.ended_at is null`;
    },
    /**
     * The final state of many calls in one statement; returns the ids it ended. A call another
     * daemon's reconcile ended meanwhile is left out (that one settled it); a row a heartbeat has
     * locked is waited for.
     */
    async finishCalls(tx: Db, rows: readonly FinishRow[]): Promise<Set<string>> {
      const ended = await tx<{ id: string }[]>`
        update calls c set status = v.status, route_id = v.route_id, to_number = coalesce(v.to_number, c.to_number),
          sip_response_code = v.sip_code, hangup_cause = v.hangup_cause,
          hangup_reason = v.hangup_reason, duration_seconds = v.duration_seconds, billable_seconds = v.billable_seconds,
          cost = v.cost, billing_increment = v.billing_increment, rate_per_minute = v.rate_per_minute,
          attempts = v.attempts, answered_at = v.answered_at, ended_at = v.ended_at, error = null, gathered = null
        from jsonb_to_recordset(${tx.json(
          rows.map((r) => ({
            id: r.id,
            status: r.status,
            route_id: r.routeId,
            to_number: r.toNumber ?? null,
            sip_code: r.sipCode,
            hangup_cause: r.hangupCause,
            hangup_reason: r.hangupReason,
            duration_seconds: r.durationSeconds,
            billable_seconds: r.billableSeconds,
            cost: r.cost,
            billing_increment: r.billingIncrement,
            rate_per_minute: r.ratePerMinute,
            attempts: r.attempts,
            answered_at: r.answeredAt?.toISOString() ?? null,
            ended_at: r.endedAt.toISOString(),
          })) as never,
        )}) as v(id uuid, status text, route_id uuid, to_number text, sip_code integer, hangup_cause text, hangup_reason text, duration_seconds integer,
             billable_seconds integer, cost numeric, billing_increment text, rate_per_minute numeric, attempts jsonb, answered_at timestamptz,
             ended_at timestamptz)
        where c.id = v.id and c.ended_at is null
          -- As an array too: the planner reaches the rows by the primary key, never by a scan of calls.
          and c.id = any(${tx.array(rows.map((r) => r.id))}::uuid[])
        returning c.id`;
      return new Set(ended.map((r) => r.id));
    },
    async finishCall(
      tx: Db,
      id: string,
      f: {
        status: string;
        routeId: string | null;
        sipCode: number | null;
        hangupCause: string;
        hangupReason: string;
        durationSeconds: number;
        billableSeconds: number;
        cost: string;
        billingIncrement: string | null;
        ratePerMinute: string | null;
        attempts: unknown;
        answeredAt: Date | null;
        endedAt: Date;
        error?: string | null;
        gathered?: unknown;
      },
    ) {
      await tx`
        update calls set status = ${f.status}, route_id = ${f.routeId}, sip_response_code = ${f.sipCode}, hangup_cause = ${f.hangupCause},
          hangup_reason = ${f.hangupReason}, duration_seconds = ${f.durationSeconds}, billable_seconds = ${f.billableSeconds},
          cost = ${f.cost}::numeric, billing_increment = ${f.billingIncrement}, rate_per_minute = ${f.ratePerMinute}::numeric,
          attempts = ${tx.json(f.attempts as never)}, answered_at = ${f.answeredAt}, ended_at = ${f.endedAt},
          error = ${f.error ?? null}, gathered = ${f.gathered === undefined ? null : tx.json(f.gathered as never)}
        where id = ${id} and ended_at is null`;
    },
    /** Calls of the account (trunk or API, any daemon) not yet ended. */
    async openCallCount(accountId: string): Promise<number> {
      const [r] = await db<{ n: number }[]>`
        select count(*)::int as n from calls where account_id = ${accountId} and ended_at is null`;
      return r!.n;
    },
    /** Locks a still-open call; false when already ended, or (without `wait`) locked by another daemon. */
    async lockOpenCall(tx: Db, id: string, opts: { wait?: boolean } = {}): Promise<boolean> {
      const rows = opts.wait
        ? await tx`select id from calls where id = ${id} and ended_at is null for update`
        : await tx`select id from calls where id = ${id} and ended_at is null for update skip locked`;
      return rows.length > 0;
    },
    async heartbeat(ids: readonly string[], now: Date) {
      if (ids.length)
        await db`update calls set last_seen_at = ${now} where id = any(${ids as string[]}::uuid[]) and ended_at is null`;
    },
    /** Calls still open whose daemon is gone: this node's from before a restart, or anyone's silent too long. */
    orphans: (owners: readonly string[], staleBefore: Date) =>
      db<
        {
          id: string;
          accountId: string;
          operatorId: string | null;
          source: string;
          toNumber: string;
          fromNumber: string;
          callGroupId: string;
          routeId: string | null;
          holdId: string | null;
          pricing: OrphanPricing | null;
          answeredAt: Date | null;
          lastSeenAt: Date;
          createdAt: Date;
          maxDurationSeconds: number | null;
          agentLeftAt: Date | null;
        }[]
      >`
        select id, account_id, operator_id, source, to_number, from_number, call_group_id, route_id, hold_id, pricing,
               answered_at, coalesce(last_seen_at, created_at) as last_seen_at, created_at, max_duration_seconds,
               agent_left_at
        from calls where ended_at is null and (owner_node = any(${owners as string[]}) or last_seen_at < ${staleBefore})
        limit 500`,

    /**
     * Claims an address for an account: approved when no other account holds it, else pending the
     * operator's decision. A claim the account already has is a CONFLICT.
     */
    async addTrunkIp(row: { id: string; accountId: string; ip: string; label: string | null }) {
      byIp.clear();
      const insert = (status: 'approved' | 'pending') => db<TrunkIpRow[]>`
        insert into trunk_ips (id, account_id, ip, label, status) values (${row.id}, ${row.accountId}, ${row.ip}::inet, ${row.label}, ${status})
        returning ${trunkIpColumns(db)}`;
      try {
        return (await insert('approved'))[0]!;
      } catch (err) {
        const e = err as { code?: string; constraint_name?: string };
        if (e.code === '23505' && e.constraint_name === 'trunk_ips_approved_ip_idx') {
          try {
            return (await insert('pending'))[0]!;
          } catch (again) {
            throw duplicateClaim(again);
          }
        }
        throw duplicateClaim(err);
      }
    },
    listTrunkIps: (accountId: string) =>
      db<TrunkIpRow[]>`
        select ${trunkIpColumns(db)} from trunk_ips where account_id = ${accountId} order by id desc`,
    /** Claims waiting for the operator, each with the account that holds the address now. */
    pendingTrunkIps: () =>
      db<(TrunkIpRow & { accountId: string; heldBy: string | null })[]>`
        select p.id, host(p.ip) as ip, p.label, p.status, p.created_at, p.max_concurrent_calls, p.max_cps,
               p.disabled_at, p.updated_at, p.account_id, a.account_id as held_by
        from trunk_ips p left join trunk_ips a on a.ip = p.ip and a.status = 'approved'
        where p.status = 'pending' order by p.id`,
    /**
     * Gives the address to a pending claim; the account that held it keeps its claim as pending
     * (the operator can approve it back). False when there is no such pending claim.
     */
    async approveTrunkIp(sql: Sql, id: string): Promise<boolean> {
      byIp.clear();
      const done = await sql.begin(async (tx) => {
        const [claim] = await tx<
          { ip: string }[]
        >`select host(ip) as ip from trunk_ips where id = ${id} and status = 'pending' for update`;
        if (!claim) return false;
        await tx`update trunk_ips set status = 'pending' where ip = ${claim.ip}::inet and status = 'approved'`;
        await tx`update trunk_ips set status = 'approved' where id = ${id}`;
        return true;
      });
      byIp.clear();
      return done;
    },
    /** Drops a pending claim; false when there is no such pending claim. */
    async rejectTrunkIp(id: string): Promise<boolean> {
      const rows = await db`delete from trunk_ips where id = ${id} and status = 'pending' returning id`;
      return rows.length > 0;
    },
    async removeTrunkIp(accountId: string, id: string): Promise<boolean> {
      byIp.clear();
      const rows = await db`delete from trunk_ips where id = ${id} and account_id = ${accountId} returning id`;
      return rows.length > 0;
    },
    async accountByIp(ip: string): Promise<string | null> {
      return (await trunkIpPoint(ip))?.accountId ?? null;
    },
    trunkIpPoint,
    /** A purchase's SIP credentials as a connection point (its limits), or null when it has none. */
    async trunkCredentialPoint(purchaseId: string): Promise<ConnectionGate | null> {
      const hit = byPurchase.get(purchaseId);
      if (hit !== undefined) return hit;
      const [r] = await db<ConnectionGate[]>`
        select purchase_id as id, max_concurrent_calls, max_cps, disabled_at is not null as disabled
        from trunk_credentials where purchase_id = ${purchaseId}`;
      byPurchase.set(purchaseId, r ?? null);
      return r ?? null;
    },
    /**
     * Sets an address's limits or disabled state (only the fields given; null lifts a limit).
     * Undefined when the account has no such address.
     */
    async updateTrunkIp(accountId: string, id: string, patch: PointPatch, at: Date): Promise<TrunkIpRow | undefined> {
      const [r] = await db<TrunkIpRow[]>`
        update trunk_ips set ${db(pointSet(patch, at))}
        where id = ${id} and account_id = ${accountId} returning ${trunkIpColumns(db)}`;
      byIp.clear();
      return r;
    },
    /** The same for a purchase's SIP credentials, by purchase. */
    async updateTrunkCredential(
      accountId: string,
      purchaseId: string,
      patch: PointPatch,
      at: Date,
    ): Promise<TrunkCredentialRow | undefined> {
      const [r] = await db<TrunkCredentialRow[]>`
        with c as (
          update trunk_credentials set ${db(pointSet(patch, at))}
          where purchase_id = ${purchaseId} and account_id = ${accountId} returning *
        )
        select ${credentialColumns(db)} from c join purchases p on p.id = c.purchase_id`;
      byPurchase.clear();
      return r;
    },

    async upsertTrunkCredential(row: { username: string; accountId: string; purchaseId: string; ha1: string }) {
      await db`
        insert into trunk_credentials (username, account_id, purchase_id, ha1) values (${row.username}, ${row.accountId}, ${row.purchaseId}, ${row.ha1})
        on conflict (purchase_id) do update set username = excluded.username, ha1 = excluded.ha1, rotated_at = now()`;
    },
    /** The account's purchase SIP credentials (no secrets), newest first. */
    listTrunkCredentials: (accountId: string) =>
      db<TrunkCredentialRow[]>`
        select ${credentialColumns(db)} from trunk_credentials c join purchases p on p.id = c.purchase_id
        where c.account_id = ${accountId} order by c.created_at desc`,
    async trunkCredential(username: string) {
      const [r] = await db<{ accountId: string; purchaseId: string; ha1: string }[]>`
        select c.account_id, c.purchase_id, c.ha1 from trunk_credentials c
        join purchases p on p.id = c.purchase_id and p.status = 'active'
        where c.username = ${username}`;
      return r ?? null;
    },
  };
}

/** What a call through a connection point is held to: its limits, or refused while disabled. */
export interface ConnectionGate {
  /** The address's id, or the purchase of the credentials. */
  id: string;
  maxConcurrentCalls: number | null;
  maxCps: number | null;
  disabled: boolean;
}

export type TrunkIpPoint = ConnectionGate & { accountId: string };

/** Limits and state of a connection point, as changed by its account (only the fields given). */
export interface PointPatch {
  maxConcurrentCalls?: number | null;
  maxCps?: number | null;
  disabled?: boolean;
}

const pointSet = (patch: PointPatch, at: Date) => ({
  ...(patch.maxConcurrentCalls === undefined ? {} : { max_concurrent_calls: patch.maxConcurrentCalls }),
  ...(patch.maxCps === undefined ? {} : { max_cps: patch.maxCps }),
  ...(patch.disabled === undefined ? {} : { disabled_at: patch.disabled ? at : null }),
  updated_at: at,
});

const trunkIpColumns = (db: Db) => db`
  id, host(ip) as ip, label, status, created_at, max_concurrent_calls, max_cps, disabled_at, updated_at`;
const credentialColumns = (db: Db) => db`
  c.username, c.purchase_id, p.status as purchase_status, c.created_at, c.rotated_at, c.max_concurrent_calls,
  c.max_cps, c.disabled_at, c.updated_at`;

/** The limits and state every connection point row carries. */
interface PointColumns {
  maxConcurrentCalls: number | null;
  maxCps: number | null;
  disabledAt: Date | null;
  updatedAt: Date | null;
}

/** A whitelisted (or claimed) trunk source address. */
export interface TrunkIpRow extends PointColumns {
  id: string;
  ip: string;
  label: string | null;
  status: 'approved' | 'pending';
  createdAt: Date;
}

/** A purchase's SIP credentials (no secret). */
export interface TrunkCredentialRow extends PointColumns {
  username: string;
  purchaseId: string;
  purchaseStatus: string;
  createdAt: Date;
  rotatedAt: Date | null;
}

/** The account's second claim of one address (23505 on the per-account index). */
function duplicateClaim(err: unknown): unknown {
  const e = err as { code?: string; constraint_name?: string };
  return e.code === '23505' ? conflict('This address is already whitelisted for the account') : err;
}

/** A call's final state as `finishCall` writes it, with its id (batched finishes). */
/** A trunk call's row as its hold creates it. */
export interface TrunkCallInsert {
  id: string;
  accountId: string;
  operatorId: string | null;
  toNumber: string;
  fromNumber: string;
  maxDurationSeconds: number;
  pricing: unknown;
  ownerNode: string;
  now: Date;
}
export interface TrunkHoldInput {
  postingKey: string;
  amount: string;
  ttlSeconds: number;
  reference: string;
}
export interface TrunkHeld {
  holdId: string;
  available: string;
}

export interface FinishRow {
  id: string;
  status: string;
  routeId: string | null;
  /** The number reached when it is not the one the call row names (a forward's backup); absent, unchanged. */
  toNumber?: string | null;
  sipCode: number | null;
  hangupCause: string;
  hangupReason: string;
  durationSeconds: number;
  billableSeconds: number;
  cost: string;
  billingIncrement: string | null;
  ratePerMinute: string | null;
  attempts: unknown;
  answeredAt: Date | null;
  endedAt: Date;
}

export type CallsRepo = ReturnType<typeof createCallsRepo>;
