import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { CursorPage, DateTime, Money, Nullable, Ok, Uuid, ok } from '../../http/envelope.js';
import { cursorPage, CursorQuery } from '../../http/pagination.js';
import type { InterconnectionsService } from './service.js';
import { STATEMENT_CSV_COLUMNS, STATEMENT_CSV_NUMERIC, statementCsvRows, type Statements } from './statements.js';
import { createCsvWriter } from '../../http/csv.js';

const TAGS = ['Interconnections'];
const READ = { auth: 'required', scope: 'routes:read' } as const;
// Agreements bind live traffic and money between two accounts: test keys may not make or change them.
const WRITE = { auth: 'required', scope: 'offers:write', denyTestKeys: true } as const;

const Side = Type.Union([Type.Literal('requester'), Type.Literal('peer')]);
const storedLiterals = [
  Type.Literal('pending'),
  Type.Literal('active'),
  Type.Literal('suspended'),
  Type.Literal('declined'),
  Type.Literal('cancelled'),
  Type.Literal('terminated'),
  Type.Literal('expired'),
] as const;
const Stored = Type.Union([...storedLiterals]);
const Shown = Type.Union([...storedLiterals], {
  description: '`expired`: a proposal nobody answered in time, or terms past `validUntil`',
});
const Period = Type.Union([Type.Literal('day'), Type.Literal('week'), Type.Literal('month')], {
  description: 'the accounting period of caps and statements (UTC; a week starts on Monday)',
});
const OverCap = Type.Union([Type.Literal('list_price'), Type.Literal('refuse')], {
  description: "past a cap, the side's traffic goes at list price, or is refused on the other's routes",
});
const MAX_RATES = 500;
const Service = Type.Union([Type.Literal('voice'), Type.Literal('sms')]);
const Pct = (description: string) =>
  Type.String({ pattern: '^(50(\\.0{1,2})?|[1-4]?\\d(\\.\\d{1,2})?)$', description });

const TermsBody = {
  services: Type.Array(Service, { minItems: 1, maxItems: 2, description: 'what the terms cover' }),
  requesterDiscountPct: Pct("percent (0–50) off the peer's seller rates that the requester pays on the peer's routes"),
  peerDiscountPct: Pct("percent (0–50) off the requester's seller rates that the peer pays on the requester's routes"),
  termDays: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 3660, description: 'days in force once accepted (365)' }),
  ),
  note: Type.Optional(Type.String({ maxLength: 1000 })),
  expiresInHours: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 720, description: 'hours the proposal stays open (72)' }),
  ),
  period: Type.Optional(Period),
  caps: Type.Optional(
    Type.Object(
      {
        minutes: Type.Optional(
          Type.Integer({ minimum: 1, maximum: 1_000_000_000, description: 'billed minutes (voice)' }),
        ),
        messages: Type.Optional(
          Type.Integer({ minimum: 1, maximum: 1_000_000_000, description: 'billed segments (SMS)' }),
        ),
        amount: Type.Optional(
          Type.String({
            pattern: '^\\d{1,14}(\\.\\d{1,6})?$',
            description: "agreed value (what the side's traffic credits the other), both services",
          }),
        ),
        overCap: Type.Optional(OverCap),
      },
      {
        additionalProperties: false,
        description: "per period and per side: each side's purchases from the other at the agreed prices",
      },
    ),
  ),
  rates: Type.Optional(
    Type.Array(
      Type.Object(
        {
          payer: Side,
          service: Service,
          prefix: Type.String({ pattern: '^\\d{1,15}$' }),
          rate: Type.String({
            pattern: '^\\d{1,14}(\\.\\d{1,6})?$',
            description: 'seller rate per minute (voice) or message (SMS), before the platform fee',
          }),
          destination: Type.Optional(Type.String({ maxLength: 100 })),
        },
        { additionalProperties: false },
      ),
      {
        maxItems: MAX_RATES,
        description:
          "agreed seller rates per destination: `payer` pays `rate` on the other side's routes for numbers under " +
          '`prefix` (the longest prefix wins) in place of the list rate less its discount',
      },
    ),
  ),
};
const Reason = Type.Object({ reason: Type.Optional(Type.String({ maxLength: 500 })) }, { additionalProperties: false });

const Interconnection = Type.Object({
  id: Uuid(),
  role: Side,
  counterpartyId: Uuid('the other account'),
  status: Shown,
  proposedBy: Side,
  awaiting: Nullable(Side),
  services: Type.Array(Service),
  requesterDiscountPct: Type.String(),
  peerDiscountPct: Type.String(),
  termDays: Type.Integer(),
  note: Nullable(Type.String()),
  rounds: Type.Integer({ description: 'proposals made so far' }),
  expiresAt: DateTime(),
  activatedAt: Nullable(DateTime()),
  validUntil: Nullable(DateTime()),
  suspendedBy: Nullable(Side),
  suspendedAt: Nullable(DateTime()),
  endedBy: Nullable(Side),
  endedAt: Nullable(DateTime()),
  endReason: Nullable(Type.String()),
  period: Period,
  caps: Type.Object({
    minutes: Nullable(Type.Integer()),
    messages: Nullable(Type.Integer()),
    amount: Nullable(Money()),
    overCap: OverCap,
  }),
  rates: Type.Array(
    Type.Object({
      payer: Side,
      service: Service,
      prefix: Type.String(),
      rate: Money(),
      destination: Nullable(Type.String()),
    }),
  ),
  createdAt: DateTime(),
  updatedAt: DateTime(),
});
const Usage = Type.Object({
  interconnectionId: Uuid(),
  period: Period,
  periodStart: DateTime(),
  periodEnd: DateTime(),
  overCap: OverCap,
  sides: Type.Array(
    Type.Object({
      payer: Side,
      minutes: Type.String({ description: 'billed minutes, 2 places' }),
      messages: Type.Integer({ description: 'billed segments' }),
      amount: Money('agreed value'),
      capReached: Type.Object({ minutes: Type.Boolean(), messages: Type.Boolean(), amount: Type.Boolean() }),
    }),
  ),
});
const StatementSide = Type.Object({
  accountId: Uuid(),
  sent: Money("agreed value of this side's traffic over the other's routes"),
  received: Money("agreed value of the other side's traffic over this side's routes"),
  calls: Type.Integer(),
  minutes: Type.String(),
  messages: Type.Integer(),
});
const Statement = Type.Object({
  id: Uuid(),
  interconnectionId: Uuid(),
  periodStart: DateTime(),
  periodEnd: DateTime(),
  final: Type.Boolean({ description: 'made after the period closed: it does not change' }),
  generatedBy: Type.Union([Type.Literal('job'), Type.Literal('request')]),
  generatedAt: DateTime(),
  lines: Type.Array(
    Type.Object({
      payer: Side,
      seller: Side,
      service: Service,
      routeId: Nullable(Uuid()),
      routeName: Nullable(Type.String()),
      agreedRate: Money('seller rate per minute or message under the terms'),
      count: Type.Integer({ description: 'calls or messages' }),
      billedSeconds: Type.Integer(),
      minutes: Type.String(),
      segments: Type.Integer(),
      amount: Money('agreed value: what the traffic credited the seller'),
      buyerCost: Money('what the payer was charged, platform fee included'),
    }),
  ),
  requester: StatementSide,
  peer: StatementSide,
  net: Type.Object({ payer: Nullable(Side), payee: Nullable(Side), amount: Money() }),
});
const StatementId = Type.Object({ id: Uuid(), statementId: Uuid() });
const Id = Type.Object({ id: Uuid() });

export function interconnectionsRoutes(ic: InterconnectionsService, statements: Statements) {
  return (app: App) => {
    app.post(
      '/interconnections',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Propose an interconnection to another account',
          description:
            'Proposes bilateral terms to another top-level account of the exchange: for the services named, each side pays ' +
            "the other's seller rates less its discount when it buys the other's routes. The peer is told with " +
            '`interconnection.requested`. One interconnection may be pending or in force per pair of accounts.',
          body: Type.Object({ peerAccountId: Uuid(), ...TermsBody }, { additionalProperties: false }),
          response: { 201: Ok(Interconnection) },
        },
      },
      async (req, reply) => {
        const { peerAccountId, ...terms } = req.body;
        const p = req.principal!;
        return reply.code(201).send(ok(await ic.propose(p, peerAccountId, terms)));
      },
    );

    app.get(
      '/interconnections',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "List the account's interconnections, newest first",
          querystring: Type.Object({
            role: Type.Optional(Side),
            status: Type.Optional(Stored),
            ...CursorQuery(),
          }),
          response: { 200: CursorPage(Interconnection) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 25;
        return cursorPage(await ic.list(req.principal!.accountId, { ...req.query, limit: limit + 1 }), limit);
      },
    );

    app.get(
      '/interconnections/:id',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'One interconnection',
          params: Id,
          response: { 200: Ok(Interconnection) },
        },
      },
      async (req) => ok(await ic.get(req.principal!.accountId, req.params.id)),
    );

    app.post(
      '/interconnections/:id/counter',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Answer a proposal with other terms',
          description:
            'Only the side the proposal awaits (409 otherwise, or when it is no longer pending). The other side is told with ' +
            '`interconnection.requested` (`kind: counter`) and may accept, counter or decline.',
          params: Id,
          body: Type.Object(TermsBody, { additionalProperties: false }),
          response: { 200: Ok(Interconnection) },
        },
      },
      async (req) => ok(await ic.counter(req.principal!.accountId, req.params.id, req.body)),
    );

    const decision = (
      path: string,
      summary: string,
      description: string,
      run: (accountId: string, id: string, reason?: string) => ReturnType<InterconnectionsService['get']>,
    ) =>
      app.post(
        `/interconnections/:id/${path}`,
        {
          config: { access: WRITE },
          // An empty POST is no reason given.
          preValidation: async (req) => {
            req.body ??= {};
          },
          schema: {
            tags: TAGS,
            summary,
            description,
            params: Id,
            body: Reason,
            response: { 200: Ok(Interconnection) },
          },
        },
        async (req) => ok(await run(req.principal!.accountId, req.params.id, req.body.reason)),
      );

    decision(
      'accept',
      'Accept the terms on the table',
      'Only the side the proposal awaits. The terms are in force from now for `termDays`: calls and messages either side ' +
        "sends over the other's routes are priced, held and settled at them. The other side is told with `interconnection.accepted`.",
      (a, id) => ic.accept(a, id),
    );
    decision(
      'decline',
      'Decline the terms on the table',
      'Only the side the proposal awaits; final. The other side is told with `interconnection.declined`.',
      (a, id, reason) => ic.decline(a, id, reason),
    );
    decision(
      'cancel',
      'Withdraw your proposal',
      'Only the side whose proposal is on the table, while pending. The other side is told with `interconnection.ended`.',
      (a, id) => ic.cancel(a, id),
    );
    decision(
      'suspend',
      'Pause an interconnection in force',
      "Either side. Until resumed, each side's routes are priced for the other at their listed rates. The other side is " +
        'told with `interconnection.suspended`; the term keeps running.',
      (a, id, reason) => ic.suspend(a, id, reason),
    );
    decision(
      'resume',
      'Resume a suspended interconnection',
      'Only the side that suspended it, before `validUntil`. The other side is told with `interconnection.resumed`.',
      (a, id) => ic.resume(a, id),
    );
    decision(
      'terminate',
      'End an interconnection',
      'Either side, in force or suspended; final. Calls already answered keep the price they were held at. The other ' +
        'side is told with `interconnection.ended`.',
      (a, id, reason) => ic.terminate(a, id, reason),
    );

    app.get(
      '/interconnections/:id/prices',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "What a number costs on the counterparty's routes under the terms",
          description:
            "The counterparty's routes the caller has bought (or may use) that cover the number, priced by the same routing " +
            'as live traffic under the terms: seller rate less the discount, plus the platform fee. Empty unless the ' +
            'interconnection is in force and covers the type.',
          params: Id,
          querystring: Type.Object({
            number: Type.String({ maxLength: 32, description: 'E.164, with or without +' }),
            type: Type.Optional(Service),
          }),
          response: {
            200: Ok(
              Type.Object({
                interconnectionId: Uuid(),
                status: Type.String(),
                inForce: Type.Boolean(),
                discountPct: Type.String({ description: "the caller's discount off the counterparty's rates" }),
                routes: Type.Array(
                  Type.Object({
                    routeId: Uuid(),
                    routeName: Type.String(),
                    matchedPrefix: Type.String(),
                    destination: Type.String(),
                    sellerRate: Money('seller rate after the discount'),
                    price: Money('what the caller pays per minute or message'),
                    increment: Type.String(),
                  }),
                ),
              }),
            ),
          },
        },
      },
      async (req) =>
        ok(await ic.prices(req.principal!.accountId, req.params.id, req.query.number, req.query.type ?? 'voice')),
    );

    app.get(
      '/interconnections/:id/usage',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "Each side's traffic at the agreed prices this period, against the caps",
          description:
            'Billed minutes, segments and agreed value of each side in the running period, counted as each call and ' +
            'message settles, and which caps each has reached (past one, its traffic goes per `overCap`).',
          params: Id,
          response: { 200: Ok(Usage) },
        },
      },
      async (req) => ok(await ic.usage(req.principal!.accountId, req.params.id)),
    );

    app.post(
      '/interconnections/:id/statements',
      {
        config: { access: READ },
        preValidation: async (req) => {
          req.body ??= {};
        },
        schema: {
          tags: TAGS,
          summary: 'Make the settlement statement of a period',
          description:
            'Either side. The statement of the period holding `at` (now when absent): what each side sent the other at ' +
            'the agreed prices, totals and the net position. A closed period has one final statement (also made by the ' +
            'job at period end): 200 with it when it exists, else 201. A running period gives a provisional one (201).',
          params: Id,
          body: Type.Object({ at: Type.Optional(DateTime()) }, { additionalProperties: false }),
          response: { 200: Ok(Statement), 201: Ok(Statement) },
        },
      },
      async (req, reply) => {
        const at = req.body.at === undefined ? undefined : new Date(req.body.at);
        const { statement, made } = await statements.generate(req.principal!.accountId, req.params.id, at);
        return reply.code(made ? 201 : 200).send(ok(statement));
      },
    );

    app.get(
      '/interconnections/:id/statements',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "The interconnection's settlement statements, newest first",
          params: Id,
          querystring: Type.Object(CursorQuery()),
          response: { 200: CursorPage(Statement) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 25;
        const rows = await statements.list(req.principal!.accountId, req.params.id, {
          cursor: req.query.cursor,
          limit: limit + 1,
        });
        return cursorPage(rows, limit);
      },
    );

    app.get(
      '/interconnections/:id/statements/:statementId',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'One settlement statement, as JSON or CSV',
          description:
            'Either side reads the same statement. `format=csv`: one row per line (`row` = `line`), one `sent` row per ' +
            'side and the `net` row.',
          params: StatementId,
          querystring: Type.Object({
            format: Type.Optional(Type.Union([Type.Literal('json'), Type.Literal('csv')], { default: 'json' })),
          }),
          // The CSV form is a stream, which Fastify sends without this serializer.
          response: { 200: Ok(Statement) },
        },
      },
      async (req, reply) => {
        const s = await statements.get(req.principal!.accountId, req.params.id, req.params.statementId);
        if (req.query.format !== 'csv') return ok(s);
        const csv = createCsvWriter(STATEMENT_CSV_COLUMNS, STATEMENT_CSV_NUMERIC);
        reply
          .type('text/csv; charset=utf-8')
          .header('content-disposition', `attachment; filename="interconnection-statement-${s.id}.csv"`);
        for (const row of statementCsvRows(s)) csv.write(row);
        csv.end();
        return reply.send(csv as unknown as never);
      },
    );
  };
}
