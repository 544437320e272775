/**
 * The crash protocol of revenue share calls (docs/revenue-share.md "Crash"): an answered call is
 * written to `revshare_live_calls` (migration 281) with this daemon's node id, kept fresh by a
 * heartbeat, and removed by the transaction that records the call. A row nobody refreshes belongs to
 * a daemon that died: the reconcile records it as ended at its last heartbeat (cause `crash`),
 * through the same path as any ended call, so it is credited once and its live row goes with it.
 */
import type { Logger } from 'pino';
import type { Db, Sql } from '../../db/connection.js';
import type { Clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import type { EndedCall } from './traffic.js';

/** A call's identity on the SIP side: one number, one Call-ID. */
export interface LiveKey {
  numberId: string;
  sipCallId: string;
}

export interface AnsweredCall extends LiveKey {
  from: string;
  sourceIp: string;
  startedAt: Date;
  answeredAt: Date;
}

/** Heartbeats a live call outlives before another daemon takes it for an orphan (trunk calls wait as long). */
export const STALE_AFTER_MS = 90_000;

export function createRevshareCrash(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  node: string;
  /** Records an ended call inside `tx` (traffic's one recording path). */
  recordIn(tx: Db, call: EndedCall): Promise<string | null>;
}) {
  const { sql, clock, log, node } = deps;

  return {
    /** Marks an answered call live on this daemon. */
    async answered(c: AnsweredCall): Promise<void> {
      const now = clock.now();
      await sql`
        insert into revshare_live_calls ${sql({
          id: newId(),
          numberId: c.numberId,
          sipCallId: c.sipCallId,
          fromNumber: c.from,
          sourceIp: c.sourceIp,
          startedAt: c.startedAt,
          answeredAt: c.answeredAt,
          node,
          lastSeenAt: now,
        } as never)}
        on conflict (number_id, sip_call_id) do nothing`;
    },

    /** The heartbeat: this daemon's calls still up were seen now. */
    async heartbeat(live: readonly LiveKey[]): Promise<void> {
      if (live.length === 0) return;
      const now = clock.now();
      await sql`
        update revshare_live_calls l set last_seen_at = ${now}
        from unnest(${sql.array(live.map((k) => k.numberId))}::uuid[], ${sql.array(live.map((k) => k.sipCallId))}::text[])
          as k(number_id, sip_call_id)
        where l.node = ${node} and l.number_id = k.number_id and l.sip_call_id = k.sip_call_id`;
    },

    /**
     * Records the calls dead daemons left live, each ended at its last heartbeat. `atStart`: this
     * daemon's own rows too, however fresh (it has no call up yet, so they are its previous life's).
     * Whoever deletes the row records the call, in that transaction: exactly once across daemons.
     */
    async reconcile(opts: { atStart?: boolean } = {}): Promise<number> {
      const staleBefore = new Date(clock.now().getTime() - STALE_AFTER_MS);
      const rows = await sql<{ id: string }[]>`
        select id from revshare_live_calls
        where last_seen_at < ${staleBefore} ${opts.atStart ? sql`or node = ${node}` : sql``}`;
      let n = 0;
      for (const r of rows) {
        const done = await sql
          .begin(async (tx) => {
            const [o] = await tx<
              {
                numberId: string;
                sipCallId: string;
                fromNumber: string;
                sourceIp: string;
                startedAt: Date;
                answeredAt: Date;
                lastSeenAt: Date;
              }[]
            >`
              delete from revshare_live_calls where id = ${r.id}
              returning number_id, sip_call_id, from_number, source_ip, started_at, answered_at, last_seen_at`;
            if (!o) return false;
            await deps.recordIn(tx, {
              numberId: o.numberId,
              sipCallId: o.sipCallId,
              from: o.fromNumber,
              sourceIp: o.sourceIp,
              startedAt: o.startedAt,
              answeredAt: o.answeredAt,
              endedAt: o.lastSeenAt,
              sipCode: 200,
              hangupCause: 'crash',
            });
            return true;
          })
          .catch((err: unknown) => {
            // One call that cannot be recorded must not hold back the others.
            log.error({ err, liveCallId: r.id }, 'revenue share orphan call not reconciled');
            return false;
          });
        if (done) n++;
      }
      if (n) log.warn({ calls: n }, 'reconciled revenue share calls left live by a stopped daemon');
      return n;
    },
  };
}

export type RevshareCrash = ReturnType<typeof createRevshareCrash>;
