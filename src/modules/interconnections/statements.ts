import { Decimal } from 'decimal.js';
import type { Db, Sql } from '../../db/connection.js';
import { notFound } from '../../http/errors.js';
import type { Clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import { toMoney } from '../../rating/index.js';
import { emit } from '../../webhooks/emit.js';
import * as repo from './repo.js';
import type { InterconnectionRow, Side } from './repo.js';

/** One line: the traffic one side bought on one of the other's routes at one agreed rate. */
export interface StatementLine {
  payer: Side;
  seller: Side;
  service: 'voice' | 'sms';
  routeId: string | null;
  routeName: string | null;
  agreedRate: string;
  /** Calls (voice) or messages (SMS). */
  count: number;
  billedSeconds: number;
  minutes: string;
  /** Billed segments (SMS; 0 for voice). */
  segments: number;
  /** The agreed value: what the payer's traffic credited the seller. */
  amount: string;
  /** What the payer was charged, the platform fee included. */
  buyerCost: string;
}

export interface StatementSide {
  accountId: string;
  /** The agreed value of what this side sent over the other's routes (it paid that). */
  sent: string;
  /** The agreed value of what the other side sent over this side's routes (it was credited that). */
  received: string;
  calls: number;
  minutes: string;
  messages: number;
}

export interface Statement {
  id: string;
  interconnectionId: string;
  periodStart: string;
  periodEnd: string;
  /** The period had closed when the statement was made: it does not change again. */
  final: boolean;
  generatedBy: 'job' | 'request';
  generatedAt: string;
  lines: StatementLine[];
  requester: StatementSide;
  peer: StatementSide;
  /** Who owes whom the difference of the two sides' agreed values (null payer when even). */
  net: { payer: Side | null; payee: Side | null; amount: string };
}

const minutesOf = (seconds: number) => new Decimal(seconds).div(60).toFixed(2);

/** The CSV of a statement: its lines, then one total row per side and the net. */
export const STATEMENT_CSV_COLUMNS = [
  'row',
  'payer',
  'seller',
  'service',
  'route_id',
  'route_name',
  'agreed_rate',
  'count',
  'billed_seconds',
  'minutes',
  'segments',
  'amount',
  'buyer_cost',
] as const;
// Every column from the agreed rate on is a number our code formatted.
export const STATEMENT_CSV_NUMERIC = STATEMENT_CSV_COLUMNS.slice(STATEMENT_CSV_COLUMNS.indexOf('agreed_rate'));
type CsvRow = Record<(typeof STATEMENT_CSV_COLUMNS)[number], string>;

export function statementCsvRows(s: Statement): CsvRow[] {
  const blank = { route_id: '', route_name: '', agreed_rate: '', billed_seconds: '', segments: '', buyer_cost: '' };
  return [
    ...s.lines.map((l) => ({
      row: 'line',
      payer: l.payer,
      seller: l.seller,
      service: l.service,
      route_id: l.routeId ?? '',
      route_name: l.routeName ?? '',
      agreed_rate: l.agreedRate,
      count: String(l.count),
      billed_seconds: String(l.billedSeconds),
      minutes: l.minutes,
      segments: String(l.segments),
      amount: l.amount,
      buyer_cost: l.buyerCost,
    })),
    ...(['requester', 'peer'] as const).map((side) => ({
      ...blank,
      row: 'sent',
      payer: side,
      seller: side === 'requester' ? 'peer' : 'requester',
      service: '',
      count: String(s[side].calls + s[side].messages),
      minutes: s[side].minutes,
      amount: s[side].sent,
    })),
    {
      ...blank,
      row: 'net',
      payer: s.net.payer ?? '',
      seller: s.net.payee ?? '',
      service: '',
      count: '',
      minutes: '',
      amount: s.net.amount,
    },
  ];
}

/**
 * Settlement statements of interconnections (docs/interconnections.md): per agreement and
 * accounting period, what each side sent the other at the agreed prices, from the CDRs the terms
 * priced, with totals and the net position. The money has already moved through the ledger (each
 * call and message settled at its price); a statement is the two parties' reconciliation of it.
 * A closed period's statement is made once (by the job at period end, or the first request) and is
 * final; one asked for the running period is provisional and made anew each time.
 */
export function createStatements(deps: { sql: Sql; clock: Clock }) {
  const { sql, clock } = deps;

  const compute = async (
    db: Db,
    r: InterconnectionRow,
    start: Date,
    end: Date,
  ): Promise<Pick<Statement, 'lines' | 'requester' | 'peer' | 'net'>> => {
    const rows = await db<
      {
        payer: Side;
        service: 'voice' | 'sms';
        routeId: string | null;
        routeName: string | null;
        agreedRate: string;
        count: number;
        seconds: number;
        segments: number;
        amount: string;
        buyerCost: string;
      }[]
    >`
      select case when c.seller_id = ${r.requesterId} then 'peer' else 'requester' end as payer,
             c.kind as service, c.route_id, rt.name as route_name, c.agreed_rate::text as agreed_rate,
             count(*)::int as count, coalesce(sum(c.billed_seconds), 0)::int as seconds,
             coalesce(sum(c.segments), 0)::int as segments,
             coalesce(sum(c.seller_credit), 0)::numeric(20, 6)::text as amount,
             coalesce(sum(c.buyer_cost), 0)::numeric(20, 6)::text as buyer_cost
      from cdrs c left join routes rt on rt.id = c.route_id
      where c.interconnection_id = ${r.id} and c.created_at >= ${start} and c.created_at < ${end}
        and not c.simulated and not c.is_probe
      group by 1, 2, 3, 4, 5
      order by 1 desc, 2, 4, 5`;
    const lines: StatementLine[] = rows.map((x) => ({
      payer: x.payer,
      seller: x.payer === 'requester' ? 'peer' : 'requester',
      service: x.service,
      routeId: x.routeId,
      routeName: x.routeName,
      agreedRate: toMoney(new Decimal(x.agreedRate)),
      count: x.count,
      billedSeconds: x.service === 'voice' ? x.seconds : 0,
      minutes: minutesOf(x.service === 'voice' ? x.seconds : 0),
      segments: x.service === 'sms' ? x.segments : 0,
      amount: toMoney(new Decimal(x.amount)),
      buyerCost: toMoney(new Decimal(x.buyerCost)),
    }));
    const sentBy = (side: Side) => {
      const own = lines.filter((l) => l.payer === side);
      const seconds = own.reduce((n, l) => n + l.billedSeconds, 0);
      return {
        amount: own.reduce((a, l) => a.plus(l.amount), new Decimal(0)),
        calls: own.filter((l) => l.service === 'voice').reduce((n, l) => n + l.count, 0),
        minutes: minutesOf(seconds),
        messages: own.reduce((n, l) => n + l.segments, 0),
      };
    };
    const req = sentBy('requester');
    const peer = sentBy('peer');
    const side = (accountId: string, own: typeof req, other: typeof req): StatementSide => ({
      accountId,
      sent: toMoney(own.amount),
      received: toMoney(other.amount),
      calls: own.calls,
      minutes: own.minutes,
      messages: own.messages,
    });
    const diff = req.amount.minus(peer.amount);
    return {
      lines,
      requester: side(r.requesterId, req, peer),
      peer: side(r.peerId, peer, req),
      net: diff.isZero()
        ? { payer: null, payee: null, amount: toMoney(diff) }
        : diff.isPositive()
          ? { payer: 'requester', payee: 'peer', amount: toMoney(diff) }
          : { payer: 'peer', payee: 'requester', amount: toMoney(diff.negated()) },
    };
  };

  const bounds = async (r: InterconnectionRow, at: Date) => {
    const [b] = await sql<{ start: Date; end: Date }[]>`
      select svc_interconnection_period_start(${r.period}, ${at}) as start,
             svc_interconnection_period_end(${r.period}, ${at}) as end`;
    return b!;
  };

  const stored = async (db: Db, where: ReturnType<Db>) => {
    const rows = await db<{ body: Statement }[]>`select body from interconnection_statements where ${where}`;
    return rows.map((x) => x.body);
  };

  /**
   * Makes the statement of the period of `r` holding `at` (in `tx`). A closed period's is made
   * once: the final statement already there is returned (`made: false`).
   */
  const make = async (
    tx: Db,
    r: InterconnectionRow,
    at: Date,
    by: 'job' | 'request',
  ): Promise<{ statement: Statement; made: boolean }> => {
    const now = clock.now();
    const { start, end } = await bounds(r, at);
    const final = end.getTime() <= now.getTime();
    if (final) {
      // One final statement per period: concurrent makers wait here for each other.
      await tx`select pg_advisory_xact_lock(hashtext(${`interconnection-statement:${r.id}:${start.toISOString()}`}))`;
      const [done] = await stored(tx, tx`interconnection_id = ${r.id} and period_start = ${start} and final`);
      if (done !== undefined) return { statement: done, made: false };
    }
    const statement: Statement = {
      id: newId(),
      interconnectionId: r.id,
      periodStart: start.toISOString(),
      periodEnd: end.toISOString(),
      final,
      generatedBy: by,
      generatedAt: now.toISOString(),
      ...(await compute(tx, r, start, end)),
    };
    await tx`
      insert into interconnection_statements (id, interconnection_id, period_start, period_end, final, generated_by,
        body, created_at)
      values (${statement.id}, ${r.id}, ${start}, ${end}, ${final}, ${by}, ${tx.json(statement as never)}, ${now})`;
    if (final)
      for (const to of [r.requesterId, r.peerId])
        await emit(tx, {
          accountId: to,
          event: 'interconnection.statement_ready',
          data: {
            interconnectionId: r.id,
            counterpartyId: to === r.requesterId ? r.peerId : r.requesterId,
            statementId: statement.id,
            periodStart: statement.periodStart,
            periodEnd: statement.periodEnd,
            net: statement.net,
          },
        });
    return { statement, made: true };
  };

  const sideOf = async (accountId: string, id: string) => {
    const r = await repo.find(sql, id, accountId);
    if (r === undefined) throw notFound('Interconnection');
    return r;
  };

  return {
    /** On demand: the statement of the period holding `at` (now when absent). */
    async generate(accountId: string, id: string, at?: Date): Promise<{ statement: Statement; made: boolean }> {
      const r = await sideOf(accountId, id);
      return sql.begin((tx) => make(tx, r, at ?? clock.now(), 'request'));
    },

    /** The interconnection's statements, newest first. */
    async list(accountId: string, id: string, q: { cursor?: string | undefined; limit: number }) {
      await sideOf(accountId, id);
      return stored(
        sql,
        sql`interconnection_id = ${id} ${q.cursor ? sql`and id < ${q.cursor}` : sql``}
            order by id desc limit ${q.limit}`,
      );
    },

    async get(accountId: string, id: string, statementId: string): Promise<Statement> {
      await sideOf(accountId, id);
      const [s] = await stored(sql, sql`interconnection_id = ${id} and id = ${statementId}`);
      if (s === undefined) throw notFound('Statement');
      return s;
    },

    /**
     * The job at period end: the final statement of the last closed period of every agreement that
     * was in force at some time in it and has none yet; both sides are told. Returns how many it made.
     */
    async closeDue(): Promise<number> {
      const now = clock.now();
      const due = await repo.closedPeriodDue(sql, now);
      let made = 0;
      for (const r of due) {
        const { start } = await bounds(r, now);
        // A second before the running period starts is in the period that closed.
        const prev = new Date(start.getTime() - 1000);
        if ((await sql.begin((tx) => make(tx, r, prev, 'job'))).made) made++;
      }
      return made;
    },
  };
}

export type Statements = ReturnType<typeof createStatements>;
