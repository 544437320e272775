import { Decimal } from 'decimal.js';
import type { Sql } from '../../db/connection.js';
import { createNotifiedCache } from '../../db/cache-listener.js';
import type { Clock } from '../../platform/clock.js';
import type { PeeringSource, PeeringTerm } from '../marketplace/index.js';

export const INTERCONNECTIONS_CHANNEL = 'svc_interconnections';

type Terms = ReadonlyMap<string, PeeringTerm>;
type Service = 'voice' | 'sms';
const NONE: Terms = new Map();

/**
 * Each account's interconnection terms in force, by the other side's account, kept in process for
 * the rating path (an account without any costs one map look-up): discount, agreed rates by
 * prefix, and the caps its side has reached this period. The table's trigger notifies every daemon
 * on commit (migration 246), and so does the CDR that crosses a cap (migration 290); a reached cap
 * lapses by itself at the period's end. Until LISTEN is up the cache reads through. Built before
 * the marketplace, which prices with it, from this module's own table only.
 */
export function createPeeringTerms(deps: { sql: Sql; clock: Clock }): PeeringSource & {
  changed(accountId: string): void;
  start(): Promise<void>;
  stop(): Promise<void>;
} {
  const { sql, clock } = deps;

  const load = async (accountId: string): Promise<Terms> => {
    const now = clock.now();
    // Usage of the caller's side in the running period decides whether a cap is reached now.
    const rows = await sql<
      {
        id: string;
        otherId: string;
        side: 'requester' | 'peer';
        discountPct: string;
        services: string[];
        validUntil: Date;
        overCap: 'list_price' | 'refuse';
        periodEnd: Date;
        minutesReached: boolean;
        messagesReached: boolean;
        amountReached: boolean;
      }[]
    >`
      select i.id, s.other_id, s.side, s.discount_pct::text as discount_pct, i.services, i.valid_until, i.over_cap,
             svc_interconnection_period_end(i.period, ${now}) as period_end,
             coalesce(u.seconds >= i.cap_minutes * 60, false) as minutes_reached,
             coalesce(u.messages >= i.cap_messages, false) as messages_reached,
             coalesce(u.amount >= i.cap_amount, false) as amount_reached
      from interconnections i
      cross join lateral (
        select case when i.requester_id = ${accountId} then 'requester' else 'peer' end as side,
               case when i.requester_id = ${accountId} then i.peer_id else i.requester_id end as other_id,
               case when i.requester_id = ${accountId} then i.requester_discount_pct else i.peer_discount_pct end
                 as discount_pct
      ) s
      left join interconnection_usage u
        on u.interconnection_id = i.id and u.payer = s.side
       and u.period_start = svc_interconnection_period_start(i.period, ${now})
      where (i.requester_id = ${accountId} or i.peer_id = ${accountId})
        and i.status = 'active' and i.valid_until > ${now}`;
    if (rows.length === 0) return NONE;
    const agreed = await sql<{ interconnectionId: string; service: Service; prefix: string; rate: string }[]>`
      select r.interconnection_id, r.service, r.prefix, r.rate::text as rate
      from interconnection_rates r join interconnections i on i.id = r.interconnection_id
      where r.interconnection_id = any(${rows.map((r) => r.id)}::uuid[])
        and r.payer = case when i.requester_id = ${accountId} then 'requester' else 'peer' end`;
    const ratesOf = new Map<string, Map<Service, Map<string, Decimal>>>();
    for (const a of agreed) {
      const byService = ratesOf.get(a.interconnectionId) ?? new Map<Service, Map<string, Decimal>>();
      ratesOf.set(a.interconnectionId, byService);
      const byPrefix = byService.get(a.service) ?? new Map<string, Decimal>();
      byService.set(a.service, byPrefix);
      byPrefix.set(a.prefix, new Decimal(a.rate));
    }
    return new Map(
      rows.map((r): [string, PeeringTerm] => {
        const voice = r.minutesReached || r.amountReached;
        const sms = r.messagesReached || r.amountReached;
        const rates = ratesOf.get(r.id);
        return [
          r.otherId,
          {
            interconnectionId: r.id,
            discountPct: new Decimal(r.discountPct),
            services: new Set(r.services as Service[]),
            validUntil: r.validUntil,
            ...(rates === undefined ? {} : { rates }),
            ...(voice || sms ? { overCap: { voice, sms, until: r.periodEnd, action: r.overCap } } : {}),
          },
        ];
      }),
    );
  };
  const cache = createNotifiedCache(sql, INTERCONNECTIONS_CHANNEL, load);
  return {
    forBuyer: (accountId) => cache.get(accountId),
    changed: cache.changed,
    start: () => cache.start(),
    stop: () => cache.stop(),
  };
}
