import { Decimal } from 'decimal.js';
import type { Logger } from 'pino';
import type { Config } from '../../config/schema.js';
import type { Db } from '../../db/connection.js';
import { AppError, fromSqlState, InsufficientBalanceError } from '../../http/errors.js';
import type { Clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import { emit } from '../../webhooks/emit.js';
import { pickCallerIds } from './caller-ids.js';
import type { CampaignRow, DialerRepo, NumberClaim } from './repo.js';
import { inWindow, localDate, startOfLocalDay } from './window.js';

/** The paying side of a campaign's traffic, as the call and SMS planes take it. */
export interface Payer {
  accountId: string;
  parentId: string | null;
  mode: 'live' | 'test';
}

/** How one attempt ended, read from the call record or the send result. */
export interface Outcome {
  /** Call: completed, no_answer, busy, failed; SMS: sent, failed. */
  status: string;
  callId: string | null;
  sipCode: number | null;
  cause: string | null;
  durationSeconds: number;
  cost: string;
  endedAt: Date | null;
}

export interface RunnerDeps {
  repo: DialerRepo;
  clock: Clock;
  log: Logger;
  config: Readonly<Config>;
  /** This daemon's id: a campaign is run by one daemon at a time. */
  node: string;
  /**
   * The numbers of a due batch not to dial: the campaign account's own do-not-call list and, for a
   * Switch customer's campaign, its operator's list when honored for it (docs/switch.md "DNC").
   */
  blockedAmong(c: CampaignRow, numbers: string[]): Promise<Set<string>>;
  /** Places an asynchronous call (POST /comms/calls semantics); a test payer's call is simulated and final at once. */
  placeCall(
    payer: Payer,
    input: {
      to: string;
      from: string;
      routeId: string;
      maxDuration: number;
      language: string;
      actions: unknown[];
      /** The agent that holds answered calls instead of actions. */
      aiAgentId?: string | undefined;
      /** The id the call gets: the claim stored it on the number before placing. */
      callId?: string | undefined;
    },
  ): Promise<{
    callId: string;
    final: Outcome | null;
    /**
     * Resolves with the call's outcome once its record is final (a call live in this daemon), or
     * null when it must be read; polling covers the rest.
     */
    finished?: Promise<Outcome | null> | null;
  }>;
  /** The call's outcome once it ended, else null; `never_placed` when no such call was stored. */
  callOutcome(accountId: string, callId: string): Promise<Outcome | null | 'never_placed'>;
  sendSms(payer: Payer, input: { to: string; from: string; message: string; routeId: string }): Promise<Outcome>;
  /** The most one attempt to `number` can cost on the campaign's route (null: no rate covers it). */
  worstCase(c: CampaignRow, number: string): Promise<Decimal | null>;
  /** The account's holidays (`YYYY-MM-DD`): no call or message starts on one, in the campaign's `windowTz`. */
  holidays(accountId: string): Promise<Set<string>>;
  /** Caller IDs (E.164 digits) the account took out of rotation. */
  pausedClis(accountId: string): Promise<Set<string>>;
  /** Charges the campaign's per-call platform fee (idempotent on `key`); false when the balance refused it. */
  chargeFee(c: CampaignRow, key: string, callId: string | null): Promise<boolean>;
}

interface InFlight {
  claim: NumberClaim;
  /** The call's id as the claim stored it (voice), before the call is placed. */
  plannedCallId: string | null;
  cli: string | null;
  reserve: Decimal;
  callId: string | null;
  startedAt: Date;
  pollAt: number;
}

/**
 * A campaign whose call a shared limit refused (the account's campaign calls, a route's capacity or
 * calls per second): its number was given back, and it waits for a slot.
 */
interface Limited {
  /** The first refusal in a row (Date.now() ms): of two waiting campaigns, the earlier goes first. */
  since: number;
  /** Not before this (Date.now() ms), unless a call of the account ends first. */
  retryAt: number;
  /**
   * Until then the account's other campaigns start no call, so that the next slot one of their calls
   * frees is this campaign's: without it they refill every slot at once and it never gets one.
   */
  heldUntil: number;
  /** The pending try was made on a freed slot: refused again, the limit is not one these calls free. */
  freedTry: boolean;
}

interface Running {
  id: string;
  accountId: string | null;
  inFlight: Map<string, InFlight>;
  lastStart: number;
  recovered: boolean;
  limited: Limited | null;
}

/** Outcomes worth another attempt after `retryDelayMinutes` (spec: no-answer, busy, failure). */
/** A refusal's own code in its details (e.g. SELL_RATE_BELOW_COST), kept as the attempt's cause. */
const refusalCode = (err: AppError): string | null => {
  const d = err.details;
  return d && !Array.isArray(d) && typeof d['code'] === 'string' ? d['code'] : null;
};

const RETRYABLE: ReadonlySet<string> = new Set(['no_answer', 'busy', 'failed']);
const CLAIM_SECONDS = 30;
const CLAIM_EVERY_MS = 5000;
/**
 * A limit said "not now" (capacity, CPS, the account's concurrent calls): the campaign tries again
 * after this long, or as soon as a call of its account ends on this runner.
 */
const LIMIT_RETRY_MS = 3000;
/** A call followed live is read after its maximum duration plus this (setup, ringing, settlement). */
const FOLLOWED_POLL_GRACE_MS = 120_000;
/** How long the other campaigns of the account hold back for a refused one (renewed by each refusal). */
const LIMIT_HOLD_MS = 2 * LIMIT_RETRY_MS;

/**
 * Runs the campaigns of the account base: claims running campaigns for this daemon, places calls
 * and sends within windows, pacing, caller-ID caps and budget, records each attempt's outcome
 * with the campaign counters in one transaction, and picks up after a crash from what the
 * database holds (numbers in `dialing` carry the call they placed).
 */
export function createCampaignRunner(deps: RunnerDeps) {
  const { repo, clock, log } = deps;
  const { sql } = repo;
  const running = new Map<string, Running>();
  let timer: NodeJS.Timeout | null = null;
  let busy = false;
  /** A tick was asked for while one ran: it runs again at once rather than at the next interval. */
  let again = false;
  let stopped = true;
  let lastClaim = 0;
  const tasks = new Set<Promise<unknown>>();

  const track = (p: Promise<unknown>) => {
    tasks.add(p);
    void p.finally(() => tasks.delete(p));
  };

  /** Calls in flight per caller ID across this daemon's campaigns of an account (they count toward caps). */
  function inFlightClis(accountId: string, campaigns: Map<string, CampaignRow>): Map<string, number> {
    const m = new Map<string, number>();
    for (const r of running.values()) {
      if (campaigns.get(r.id)?.accountId !== accountId) continue;
      for (const f of r.inFlight.values()) if (f.cli) m.set(f.cli, (m.get(f.cli) ?? 0) + 1);
    }
    return m;
  }

  async function record(c: CampaignRow, r: Running, f: InFlight, o: Outcome): Promise<void> {
    const now = clock.now();
    const answered = o.status === 'completed' || o.status === 'sent';
    let fee = new Decimal(0);
    let refused = false;
    if (answered && new Decimal(c.platformFeePerCall).gt(0)) {
      if (await deps.chargeFee(c, `dialer:${c.id}:${f.claim.id}:${f.claim.attempts}:fee`, o.callId)) {
        fee = new Decimal(c.platformFeePerCall);
      } else refused = true;
    }
    const retry = !answered && RETRYABLE.has(o.status) && f.claim.attempts < c.maxAttempts;
    const spent = new Decimal(o.cost).plus(fee);
    await repo.recordAttempt(
      {
        id: newId(),
        campaignId: c.id,
        accountId: c.accountId,
        number: f.claim.number,
        attempt: f.claim.attempts,
        callId: o.callId,
        cli: f.cli,
        status: o.status,
        sipCode: o.sipCode,
        cause: o.cause,
        durationSeconds: o.durationSeconds,
        cost: o.cost,
        fee: fee.toFixed(6),
        startedAt: f.startedAt,
        endedAt: o.endedAt ?? now,
      },
      f.claim.id,
      {
        state: answered ? 'answered' : retry ? 'pending' : 'failed',
        nextAt: retry ? new Date(now.getTime() + c.retryDelayMinutes * 60_000) : null,
        spent: spent.toFixed(6),
        now,
        pauseReason: refused ? 'insufficient_balance' : null,
      },
    );
    r.inFlight.delete(f.claim.id);
    slotFreed(c.accountId);
  }

  /** A call of the account ended: a campaign that a limit refused and that holds the others back tries now. */
  function slotFreed(accountId: string): void {
    const now = Date.now();
    for (const o of running.values()) {
      if (o.accountId !== accountId || !o.limited || o.limited.heldUntil <= now) continue;
      o.limited.retryAt = 0;
      o.limited.freedTry = true;
    }
  }

  /** A shared limit refused `r`'s call: it waits, and holds the account's other campaigns back unless a freed slot did not help. */
  function refused(r: Running): void {
    const now = Date.now();
    const freedTry = r.limited?.freedTry ?? false;
    r.limited = {
      since: r.limited?.since ?? now,
      retryAt: now + LIMIT_RETRY_MS,
      heldUntil: freedTry ? 0 : now + LIMIT_HOLD_MS,
      freedTry: false,
    };
  }

  /** Whether `r` leaves the next slot of its account to another campaign that a limit refused earlier. */
  function yields(r: Running): boolean {
    const now = Date.now();
    for (const o of running.values()) {
      if (o === r || o.accountId !== r.accountId || !o.limited || o.limited.heldUntil <= now) continue;
      if (!r.limited || o.limited.since < r.limited.since || (o.limited.since === r.limited.since && o.id < r.id)) {
        return true;
      }
    }
    return false;
  }

  async function pause(db: Db, id: string, reason: string, now: Date) {
    await db`update dialer_campaigns set status = 'paused', status_reason = ${reason}, updated_at = ${now}
             where id = ${id} and status = 'running'`;
  }

  /** Numbers a stopped or dead daemon left dialling: follow their calls, or count the attempt as lost. */
  async function recover(c: CampaignRow, r: Running): Promise<void> {
    for (const n of await repo.dialing(c.id)) {
      if (r.inFlight.has(n.id)) continue;
      const f: InFlight = {
        claim: n,
        plannedCallId: n.lastCallId,
        cli: null,
        reserve: new Decimal(0),
        callId: n.lastCallId,
        startedAt: clock.now(),
        pollAt: 0,
      };
      r.inFlight.set(n.id, f);
      // No call id: an SMS (or a call claimed before claims stored its id) whose end was not
      // recorded; whether it went out is unknown.
      if (!n.lastCallId) await record(c, r, f, interrupted());
    }
  }

  /**
   * An attempt whose fate a stop left unknown: it counts, so the number is never called beyond
   * maxAttempts, and it cost nothing the campaign knows of.
   */
  function interrupted(): Outcome {
    return {
      status: 'failed',
      callId: null,
      sipCode: null,
      cause: 'INTERRUPTED',
      durationSeconds: 0,
      cost: '0.000000',
      endedAt: null,
    };
  }

  async function launch(c: CampaignRow, r: Running, f: InFlight): Promise<void> {
    const payer: Payer = { accountId: c.accountId, parentId: c.parentId, mode: c.environment };
    const to = `+${f.claim.number}`;
    try {
      if (c.kind === 'sms') {
        const o = await deps.sendSms(payer, { to, from: c.senderId!, message: c.messageBody!, routeId: c.routeId });
        r.limited = null;
        await record(c, r, f, o);
        return;
      }
      const placed = await deps.placeCall(payer, {
        to,
        from: `+${f.cli!}`,
        routeId: c.routeId,
        maxDuration: c.maxCallDuration,
        language: c.language,
        actions: c.aiAgentId ? [] : c.actions,
        ...(c.aiAgentId ? { aiAgentId: c.aiAgentId } : {}),
        ...(f.plannedCallId ? { callId: f.plannedCallId } : {}),
      });
      f.callId = placed.callId;
      r.limited = null;
      if (placed.final) await record(c, r, f, placed.final);
      else {
        // A call this daemon follows live is recorded as it ends (below): reading its record every
        // call_poll_ms as well cost one query per call in flight per poll, for nothing. It is read
        // once its longest duration has passed, in case the end was missed.
        f.pollAt = placed.finished
          ? Date.now() + c.maxCallDuration * 1000 + FOLLOWED_POLL_GRACE_MS
          : Date.now() + deps.config.dialer.call_poll_ms;
        // Recorded as the call ends, beside the other calls' records, rather than one by one in the
        // tick: the tick keeps placing calls meanwhile, and the slot is free at once. After a stop
        // the call is left to the restart's recovery, as one placed by a dead daemon is.
        void placed.finished?.then((o) => {
          if (!stopped) {
            track(
              settle(c, r, f, o).catch((err: unknown) =>
                log.error({ err, campaignId: c.id }, 'campaign attempt not recorded'),
              ),
            );
          }
        });
      }
    } catch (caught) {
      const now = clock.now();
      // Ledger refusals arrive as database errors (SQLSTATE); the HTTP layer maps them the same way.
      const code = (caught as { code?: unknown } | null)?.code;
      const err =
        caught instanceof AppError
          ? caught
          : typeof code === 'string'
            ? (fromSqlState(code, caught instanceof Error ? caught.message : '') ?? caught)
            : caught;
      if (err instanceof AppError && (err.code === 'RATE_LIMITED' || err.code === 'SERVICE_UNAVAILABLE')) {
        // Due again at once in the database; the runner paces the next try (`limited`).
        refused(r);
        await repo.unclaim(c.id, f.claim, now);
        r.inFlight.delete(f.claim.id);
        return;
      }
      r.limited = null;
      if (err instanceof InsufficientBalanceError) {
        await repo.unclaim(c.id, f.claim, now);
        r.inFlight.delete(f.claim.id);
        await pause(sql, c.id, 'insufficient_balance', now);
        return;
      }
      if (!(err instanceof AppError)) log.error({ err, campaignId: c.id }, 'campaign attempt failed');
      else log.info({ campaignId: c.id, code: err.code, message: err.message }, 'campaign attempt refused');
      await record(c, r, f, {
        status: 'failed',
        callId: f.callId,
        sipCode: null,
        cause: err instanceof AppError ? (refusalCode(err) ?? 'ROUTE_UNAVAILABLE') : 'INTERNAL_ERROR',
        durationSeconds: 0,
        cost: '0.000000',
        endedAt: now,
      });
    }
  }

  /** A call followed live ended: recorded with the outcome the call plane handed over, else as read. */
  async function settle(c: CampaignRow, r: Running, f: InFlight, known: Outcome | null): Promise<void> {
    f.pollAt = Number.POSITIVE_INFINITY;
    const o = known ?? (await outcomeOf(c, f));
    if (o) await record(c, r, f, o);
    else f.pollAt = 0;
    kick();
  }

  async function outcomeOf(c: CampaignRow, f: InFlight): Promise<Outcome | null> {
    const o = await deps.callOutcome(c.accountId, f.callId!);
    return o === 'never_placed' ? interrupted() : o;
  }

  /** Calls this daemon does not follow live (placed before a restart, or on another node). */
  async function poll(c: CampaignRow, r: Running): Promise<void> {
    const t = Date.now();
    const due = [...r.inFlight.values()].filter((f) => f.callId && f.pollAt <= t);
    await Promise.all(
      due.map(async (f) => {
        f.pollAt = t + deps.config.dialer.call_poll_ms;
        const o = await outcomeOf(c, f);
        if (o) await record(c, r, f, o);
      }),
    );
  }

  async function complete(c: CampaignRow, now: Date): Promise<void> {
    await sql.begin(async (tx) => {
      const done = await tx`
        update dialer_campaigns set status = 'completed', status_reason = 'all_numbers_done', completed_at = ${now}, updated_at = ${now}
        where id = ${c.id} and status = 'running'
          and not exists (select 1 from dialer_numbers where campaign_id = ${c.id} and state in ('pending', 'dialing'))`;
      if (done.count === 0) return;
      const fresh = (await repo.campaign(tx, null, c.id))!;
      await emit(tx, {
        accountId: c.accountId,
        event: 'campaign.completed',
        data: {
          campaignId: c.id,
          name: c.name,
          stopped: false,
          numbersDialed: fresh.numbersDialed,
          numbersAnswered: fresh.numbersAnswered,
          numbersFailed: fresh.numbersFailed,
          spent: fresh.spent,
        },
        at: now,
      });
    });
  }

  async function step(r: Running, campaigns: Map<string, CampaignRow>): Promise<void> {
    let c = campaigns.get(r.id);
    if (!c) {
      running.delete(r.id);
      return;
    }
    const now = clock.now();
    r.accountId = c.accountId;
    if (!r.recovered) {
      r.recovered = true;
      await recover(c, r);
    }
    await poll(c, r);
    if (c.status === 'ready') {
      if (c.scheduleAt && c.scheduleAt > now) return;
      await sql.begin(async (tx) => {
        const moved =
          await tx`update dialer_campaigns set status = 'running', started_at = coalesce(started_at, ${now}), updated_at = ${now}
                               where id = ${r.id} and status = 'ready'`;
        if (moved.count > 0) {
          await emit(tx, {
            accountId: c!.accountId,
            event: 'campaign.started',
            data: {
              campaignId: c!.id,
              name: c!.name,
              kind: c!.kind,
              resumed: false,
              environment: c!.environment,
              scheduled: true,
            },
            at: now,
          });
        }
      });
      c = (await repo.campaign(sql, null, r.id))!;
      campaigns.set(r.id, c);
    }
    if (c.status !== 'running') {
      if (r.inFlight.size === 0) {
        running.delete(r.id);
        await repo.releaseRunner(r.id, deps.node);
      }
      return;
    }
    if (c.windowStartHour !== null && c.windowEndHour !== null) {
      const w = { startHour: c.windowStartHour, endHour: c.windowEndHour, tz: c.windowTz ?? 'UTC' };
      if (!inWindow(now, w)) return;
    }
    if ((await deps.holidays(c.accountId)).has(localDate(now, c.windowTz ?? 'UTC'))) return;
    let free = c.concurrency - r.inFlight.size;
    if (free <= 0) return;
    if (r.limited) {
      if (Date.now() < r.limited.retryAt) return;
      // One call tries the limit; the rest follow once it is through.
      free = 1;
    }
    if (yields(r)) return;
    if (c.callInterval > 0) {
      if (now.getTime() - r.lastStart < c.callInterval) return;
      free = 1;
    }
    const due = await repo.due(c.id, now, free);
    if (due.length === 0) {
      if (r.inFlight.size === 0) await complete(c, now);
      return;
    }
    // Checked at dial time, so an entry added while the campaign runs applies to its next call.
    const blocked = await deps.blockedAmong(
      c,
      due.map((d) => d.number),
    );
    await repo.block(
      c.id,
      due.filter((d) => blocked.has(d.number)).map((d) => d.id),
      now,
    );
    let candidates = due.filter((d) => !blocked.has(d.number));
    if (candidates.length === 0) return;

    // The budget: settled spend plus the most every call in flight can still cost, never above maxSpend.
    const reserves = new Map<string, Decimal>();
    if (c.maxSpend !== null) {
      const limit = new Decimal(c.maxSpend);
      let committed = new Decimal(0);
      for (const f of r.inFlight.values()) committed = committed.plus(f.reserve);
      // Whether calls were in flight when their reserves were summed: one recorded during the read
      // below is counted twice (its reserve and its spend), so nothing fitting then says only "wait
      // for it", never "the budget is spent" (the campaign paused with most of it unspent).
      const flying = r.inFlight.size;
      // Read after the reserves: calls are recorded beside the tick, and one recorded since the
      // campaign row was read has left the flights but is in this figure, so none is left out.
      committed = committed.plus(await repo.spent(c.id));
      const fee = new Decimal(c.platformFeePerCall);
      const fits: typeof candidates = [];
      for (const d of candidates) {
        const worst = ((await deps.worstCase(c, d.number)) ?? new Decimal(0)).plus(fee);
        if (committed.plus(worst).gt(limit)) break;
        committed = committed.plus(worst);
        reserves.set(d.id, worst);
        fits.push(d);
      }
      if (fits.length === 0) {
        if (flying === 0) await pause(sql, c.id, 'max_spend_reached', now);
        return;
      }
      candidates = fits;
    }

    let clis: (string | null)[] = candidates.map(() => null);
    if (c.kind === 'voice') {
      const set = c.cliSetId ? await repo.cliSet(c.accountId, c.cliSetId) : null;
      const paused = await deps.pausedClis(c.accountId);
      const active = (set?.clis ?? []).map((x) => x.replace(/^\+/, '')).filter((x) => !paused.has(x));
      if (active.length === 0) {
        await pause(sql, c.id, 'no_caller_ids', now);
        return;
      }
      // A daily cap counts the caller ID's calls (every campaign of the account) since midnight in
      // this campaign's zone: the day its calling window and holidays are read in.
      const strategy = c.cliStrategy as Parameters<typeof pickCallerIds>[2];
      const kind = strategy?.strategy ?? 'round_robin';
      // Round-robin and random picks read no counts: without a daily cap the day's count is not needed.
      const counted = (strategy?.dailyCap ?? 0) > 0 || (kind !== 'round_robin' && kind !== 'random');
      // Calls in flight are read before the recorded ones: an attempt is committed before it leaves
      // the in-flight set, so a call ending during the read is counted once or twice, never missed
      // (read after, it could be in neither, and a daily cap would be passed).
      const flying = inFlightClis(c.accountId, campaigns);
      const used = counted
        ? await repo.cliUsage(c.accountId, startOfLocalDay(now, c.windowTz ?? 'UTC'))
        : new Map<string, number>();
      for (const [cli, n] of flying) used.set(cli, (used.get(cli) ?? 0) + n);
      const cursor = kind === 'round_robin' ? await repo.takeCliCursor(c.id, candidates.length) : 0;
      clis = pickCallerIds(
        active,
        candidates.map((d) => d.number),
        strategy,
        used,
        cursor,
      );
      const withCli = candidates.map((d, i) => ({ d, cli: clis[i] ?? null })).filter((x) => x.cli !== null);
      candidates = withCli.map((x) => x.d);
      clis = withCli.map((x) => x.cli);
      if (candidates.length === 0) return; // every caller ID is at its daily cap: wait for the next local day
    }
    const cliOf = new Map(candidates.map((d, i) => [d.id, clis[i] ?? null]));
    // A voice call's id is stored with the claim, so a restart finds the call without a write
    // between placing it and its end; one not stored by then was never dialled.
    const callIdOf = new Map(candidates.map((d) => [d.id, c.kind === 'voice' ? newId() : null]));
    // Stamped now, not at the start of the step: the slots were counted after the awaits above.
    const claimedAt = clock.now();
    const claims = await repo.claim(
      c.id,
      candidates.map((d) => ({ id: d.id, callId: callIdOf.get(d.id) ?? null })),
      claimedAt,
    );
    // The try is out: no other until its answer (refused again, or through).
    if (r.limited && claims.length > 0) r.limited.retryAt = Number.POSITIVE_INFINITY;
    for (const claim of claims) {
      const f: InFlight = {
        claim,
        plannedCallId: callIdOf.get(claim.id) ?? null,
        cli: cliOf.get(claim.id) ?? null,
        reserve: reserves.get(claim.id) ?? new Decimal(0),
        callId: null,
        startedAt: claimedAt,
        pollAt: Number.POSITIVE_INFINITY,
      };
      r.inFlight.set(claim.id, f);
      // Paced: the next start waits `callInterval` from this one's actual start (docs/dialer.md, Pacing).
      r.lastStart = claimedAt.getTime();
      const camp = c;
      track(
        launch(camp, r, f).catch((err: unknown) =>
          log.error({ err, campaignId: camp.id }, 'campaign attempt not recorded'),
        ),
      );
    }
  }

  /** A tick now, or right after the running one: a slot freed or a campaign started must not wait for the timer. */
  function kick(): void {
    if (busy) again = true;
    else void tick();
  }

  async function tick(): Promise<void> {
    if (busy || stopped) return;
    busy = true;
    again = false;
    try {
      const now = clock.now();
      if (Date.now() - lastClaim >= CLAIM_EVERY_MS) {
        lastClaim = Date.now();
        for (const id of await repo.claimRunnable(deps.node, now, CLAIM_SECONDS)) {
          if (!running.has(id)) {
            running.set(id, {
              id,
              accountId: null,
              inFlight: new Map(),
              lastStart: 0,
              recovered: false,
              limited: null,
            });
          }
        }
      }
      if (running.size === 0) return;
      const rows = await Promise.all([...running.keys()].map((id) => repo.campaign(sql, null, id)));
      const campaigns = new Map(rows.filter((x): x is CampaignRow => x !== null).map((c) => [c.id, c]));
      // Campaigns a limit refused first, longest waiting first: a slot freed since is theirs.
      const waited = (r: Running) => r.limited?.since ?? Number.MAX_SAFE_INTEGER;
      const order = [...running.values()].sort((a, b) => waited(a) - waited(b));
      for (const r of order) {
        if (stopped) break;
        try {
          await step(r, campaigns);
        } catch (err) {
          log.error({ err, campaignId: r.id }, 'campaign step failed');
        }
      }
    } finally {
      busy = false;
      // A call that ended (or a wake) during this tick asked for another: its freed slot is refilled now.
      if (again && !stopped) setImmediate(kick);
    }
  }

  return {
    start() {
      stopped = false;
      timer = setInterval(() => void tick(), deps.config.dialer.tick_ms);
      timer.unref();
    },
    /** A campaign was started: look for it now rather than at the next claim round. */
    wake() {
      lastClaim = 0;
      kick();
    },
    /** Stops placing calls; attempts being recorded finish. Calls in flight are followed again after a restart. */
    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      await Promise.allSettled([...tasks]);
    },
    /** For tests: campaigns this daemon runs and their calls in flight. */
    snapshot: () => [...running.values()].map((r) => ({ id: r.id, inFlight: r.inFlight.size })),
  };
}

export type CampaignRunner = ReturnType<typeof createCampaignRunner>;
