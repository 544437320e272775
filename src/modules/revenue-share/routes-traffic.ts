/** Statistics, CDRs and their export, earnings, supplier payments and fraud rules and flags. */
import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { createCsvWriter } from '../../http/csv.js';
import { CursorPage, DateTime, Money, Nullable, Ok, Uuid, ok } from '../../http/envelope.js';
import { cursorPage, CursorQuery } from '../../http/pagination.js';
import type { Earnings } from './earnings.js';
import { principalOf } from './routes-ranges.js';
import { CallStatus, Cdr, Flag, FraudRules, READ, TAGS, Window, WRITE } from './schemas.js';
import { EXPORT_MAX, type Stats } from './stats.js';

const Side = Type.Optional(
  Type.Union([Type.Literal('holder'), Type.Literal('supplier')], {
    default: 'holder',
    description: "holder: calls to the caller's numbers; supplier: calls to the caller's ranges (the operator: all)",
  }),
);

const Figures = {
  calls: Type.Integer(),
  answered: Type.Integer(),
  asr: Nullable(Type.Number({ description: 'percent of calls answered (display number)' })),
  acd: Nullable(Type.Number({ description: 'average answered seconds (display number)' })),
  minutes: Type.Number({ description: 'billed minutes (display number)' }),
  earned: Money('payouts of calls held or released'),
  flagged: Money('payouts held by open fraud flags'),
  charged: Type.Optional(Money('supplier view: what the supplier owes for the calls')),
};
const WindowOut = Type.Object({ from: DateTime(), to: DateTime() });

const CdrQuery = {
  ...Window,
  as: Side,
  numberId: Type.Optional(Uuid()),
  status: Type.Optional(CallStatus),
};

const CSV_NUMERIC = ['durationSeconds', 'billedSeconds', 'payoutPerMinute', 'payout', 'charge', 'sipCode'] as const;

export function trafficRoutes(deps: { stats: Stats; earnings: Earnings }) {
  const { stats, earnings } = deps;
  return (app: App) => {
    app.get(
      '/revenue-share/stats/summary',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'Totals of revenue share traffic over a window (default: the last 30 days)',
          querystring: Type.Object({ ...Window, as: Side }),
          response: { 200: Ok(Type.Object({ window: WindowOut, ...Figures })) },
        },
      },
      async (req) => ok(await stats.summary(principalOf(req), req.query)),
    );

    app.get(
      '/revenue-share/stats',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'Traffic statistics per day, number, range, country or origin',
          description:
            '`origin` groups by the payout row that priced each call (the caller-number prefix); at most 1,000 rows.',
          querystring: Type.Object({
            ...Window,
            as: Side,
            groupBy: Type.Union([
              Type.Literal('day'),
              Type.Literal('number'),
              Type.Literal('range'),
              Type.Literal('country'),
              Type.Literal('origin'),
            ]),
          }),
          response: {
            200: Ok(
              Type.Object({
                window: WindowOut,
                rows: Type.Array(Type.Object({ key: Type.String(), label: Nullable(Type.String()), ...Figures })),
              }),
            ),
          },
        },
      },
      async (req) => ok(await stats.grouped(principalOf(req), req.query, req.query.groupBy)),
    );

    app.get(
      '/revenue-share/cdrs',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'Call records of revenue share numbers, newest first',
          description:
            'One record per call, answered or not (test-number calls are in `GET /revenue-share/test-calls`).',
          querystring: Type.Object({ ...CdrQuery, ...CursorQuery(50, 100) }),
          response: { 200: CursorPage(Type.Intersect([Cdr, Type.Object({ charge: Type.Optional(Money()) })])) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 50;
        return cursorPage(await stats.cdrs(principalOf(req), { ...req.query, limit }), limit);
      },
    );

    app.get(
      '/revenue-share/cdrs/export',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: `The call records as CSV (text/csv, newest first, up to ${EXPORT_MAX.toLocaleString('en-US')} rows)`,
          querystring: Type.Object(CdrQuery),
          produces: ['text/csv'],
        },
      },
      async (req, reply) => {
        const rows = await stats.exportRows(principalOf(req), req.query);
        const columns = Object.keys(rows[0] ?? { id: '' });
        const csv = createCsvWriter(
          columns,
          CSV_NUMERIC.filter((c) => columns.includes(c)),
        );
        reply
          .type('text/csv; charset=utf-8')
          .header('content-disposition', 'attachment; filename="revenue-share-cdrs.csv"');
        for (const r of rows) csv.write(r);
        csv.end();
        return reply.send(csv);
      },
    );

    app.get(
      '/revenue-share/earnings',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary:
            'Revenue share earnings: held, flagged, released and clawed back, the release schedule, recent releases',
          description:
            'Released earnings are in the payable balance and are withdrawn with the Payouts operations. `schedule[].releaseOn` is ' +
            'null for earnings of ranges that wait on the supplier’s payment.',
          response: {
            200: Ok(
              Type.Object({
                held: Money(),
                flagged: Money(),
                released: Money(),
                clawedBack: Money(),
                answeredCalls: Type.Integer(),
                schedule: Type.Array(Type.Object({ releaseOn: Nullable(Type.String()), amount: Money() })),
                recentReleases: Type.Array(
                  Type.Object({
                    id: Uuid(),
                    amount: Money(),
                    calls: Type.Integer(),
                    transactionId: Uuid(),
                    createdAt: DateTime(),
                  }),
                ),
              }),
            ),
          },
        },
      },
      async (req) => ok(await earnings.summary(req.principal!.accountId)),
    );

    app.post(
      '/revenue-share/supplier-payments',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: "Record a supplier's payment for a range's traffic through a day (operator only)",
          description:
            "Posts the cash against what the range's supplier owes and marks the range paid through `periodEnd`; earnings of " +
            '`supplier_payment` ranges for calls up to that day are released by the next release run.',
          body: Type.Object(
            {
              rangeId: Uuid(),
              periodEnd: Type.String({ format: 'date' }),
              amount: Money(),
              reference: Type.Optional(Type.String({ maxLength: 200 })),
            },
            { additionalProperties: false },
          ),
          response: {
            201: Ok(
              Type.Object({
                id: Uuid(),
                rangeId: Uuid(),
                periodEnd: Type.String(),
                amount: Money(),
                charged: Money('what the range’s traffic has charged the supplier so far'),
                paid: Money(),
                outstanding: Money(),
                createdAt: DateTime(),
              }),
            ),
          },
        },
      },
      async (req, reply) => reply.code(201).send(ok(await earnings.supplierPayment(principalOf(req), req.body))),
    );

    app.get(
      '/revenue-share/fraud-rules',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'The fraud rules in force: the platform defaults, or a range’s with its overrides',
          querystring: Type.Object({ rangeId: Type.Optional(Uuid()) }),
          response: { 200: Ok(Type.Intersect([Type.Object({ rangeId: Nullable(Uuid()) }), FraudRules])) },
        },
      },
      async (req) => ok(await earnings.rules(principalOf(req), req.query.rangeId)),
    );

    app.put(
      '/revenue-share/ranges/:id/fraud-rules',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Override fraud rules for a range (its supplier or the operator); fields left out keep the defaults',
          params: Type.Object({ id: Uuid() }),
          body: Type.Partial(FraudRules, { additionalProperties: false }),
          response: { 200: Ok(Type.Intersect([Type.Object({ rangeId: Nullable(Uuid()) }), FraudRules])) },
        },
      },
      async (req) => ok(await earnings.putRules(principalOf(req), req.params.id, req.body)),
    );

    app.get(
      '/revenue-share/fraud-flags',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'Fraud flags on your numbers (or, as=supplier, on your ranges), newest first',
          querystring: Type.Object({
            as: Side,
            status: Type.Optional(
              Type.Union([Type.Literal('open'), Type.Literal('cleared'), Type.Literal('confirmed')]),
            ),
            ...CursorQuery(),
          }),
          response: { 200: CursorPage(Flag) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 25;
        return cursorPage(await earnings.flags(principalOf(req), { ...req.query, limit }), limit);
      },
    );

    app.post(
      '/revenue-share/fraud-flags/:id/resolve',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: "Review a fraud flag (the range's supplier or the operator): clear it, or confirm it and claw back",
          description:
            '`clear`: the flagged calls return to the hold and are released as usual. `confirm`: their credits are reversed ' +
            'in one ledger posting (the holder is not paid, the supplier not charged). 409 when the flag is not open.',
          params: Type.Object({ id: Uuid() }),
          body: Type.Object(
            {
              action: Type.Union([Type.Literal('clear'), Type.Literal('confirm')]),
              note: Type.Optional(Type.String({ maxLength: 1000 })),
            },
            { additionalProperties: false },
          ),
          response: {
            200: Ok(
              Type.Object({
                id: Uuid(),
                flagId: Uuid(),
                status: Type.Union([Type.Literal('cleared'), Type.Literal('confirmed')]),
                calls: Type.Integer(),
                payout: Money(),
                note: Nullable(Type.String()),
                transactionId: Nullable(Uuid()),
              }),
            ),
          },
        },
      },
      async (req) => ok(await earnings.resolve(principalOf(req), req.params.id, req.body)),
    );
  };
}
