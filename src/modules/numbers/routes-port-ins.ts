import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { CursorPage, DateTime, Nullable, Ok, Uuid, ok } from '../../http/envelope.js';
import { forbidden } from '../../http/errors.js';
import { cursorPage, CursorQuery } from '../../http/pagination.js';
import type { PortIns, PortInStep } from './port-ins.js';
import { READ, TAGS, WRITE } from './schemas.js';

const Status = Type.Union(
  ['submitted', 'in_review', 'approved', 'rejected', 'completed', 'cancelled'].map((s) => Type.Literal(s)),
);

const PortIn = Type.Object({
  id: Uuid(),
  status: Type.String(),
  numbers: Type.Array(Type.String()),
  losingCarrier: Type.String(),
  carrierAccountNumber: Type.String(),
  pinProvided: Type.Boolean(),
  authorizedName: Type.String(),
  documentsRef: Nullable(Type.String()),
  desiredDate: Type.String({ format: 'date' }),
  reviewNote: Nullable(Type.String()),
  submittedAt: DateTime(),
  reviewedAt: Nullable(DateTime()),
  completedAt: Nullable(DateTime()),
  cancelledAt: Nullable(DateTime()),
});
const PortInReview = Type.Intersect([PortIn, Type.Object({ accountId: Uuid(), carrierPin: Nullable(Type.String()) })]);

const NewPortIn = Type.Object(
  {
    numbers: Type.Array(Type.String({ pattern: '^\\+?[1-9][0-9]{6,14}$', description: 'E.164, with or without +' }), {
      minItems: 1,
      maxItems: 100,
    }),
    losingCarrier: Type.String({ minLength: 1, maxLength: 120 }),
    carrierAccountNumber: Type.String({ minLength: 1, maxLength: 64 }),
    carrierPin: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 32 }))),
    authorizedName: Type.String({
      minLength: 1,
      maxLength: 120,
      description: 'the name on the losing carrier account',
    }),
    documentsRef: Type.Optional(
      Nullable(Type.String({ maxLength: 500, description: 'where the letter of authorisation and bill are kept' })),
    ),
    desiredDate: Type.String({ format: 'date', description: 'the day the buyer wants the numbers to move' }),
  },
  { additionalProperties: false },
);

const OPERATOR_STEPS: { path: string; step: Exclude<PortInStep, 'cancel'>; summary: string }[] = [
  { path: 'start-review', step: 'review', summary: 'Take a submitted port-in order into review (operator only)' },
  { path: 'approve', step: 'approve', summary: 'Approve a port-in order (operator only)' },
  { path: 'reject', step: 'reject', summary: 'Reject a port-in order (operator only)' },
  {
    path: 'complete',
    step: 'complete',
    summary: "Complete an approved port-in order: the numbers are the buyer's own (operator only)",
  },
];

/** Port-in orders (docs/numbers.md "Port-in orders"): the buyer's operations and the operator's review. */
export function portInRoutes(portIns: PortIns) {
  return (app: App) => {
    app.post(
      '/dids/port-ins',
      {
        config: { access: WRITE, idempotent: true },
        schema: {
          tags: TAGS,
          summary: 'Ask to bring numbers held at another carrier into the exchange',
          description:
            'Creates a `submitted` order. 409 CONFLICT when a number is rented here, already ported, or in another open ' +
            'order; 400 when a number is listed twice. The carrier PIN is passed to the operator and never shown back.',
          body: NewPortIn,
          response: { 201: Ok(PortIn) },
        },
      },
      async (req, reply) => {
        const b = req.body;
        const created = await portIns.create(req.principal!.accountId, {
          numbers: b.numbers,
          losingCarrier: b.losingCarrier,
          carrierAccountNumber: b.carrierAccountNumber,
          carrierPin: b.carrierPin ?? null,
          authorizedName: b.authorizedName,
          documentsRef: b.documentsRef ?? null,
          desiredDate: b.desiredDate,
        });
        return reply.code(201).send(ok(created));
      },
    );

    app.get(
      '/dids/port-ins',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'Your port-in orders, newest first',
          querystring: Type.Object({ ...CursorQuery(), status: Type.Optional(Status) }),
          response: { 200: CursorPage(PortIn) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 25;
        return cursorPage(await portIns.list(req.principal!.accountId, { ...req.query, limit }), limit);
      },
    );

    app.get(
      '/dids/port-ins/review-queue',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "Every account's port-in orders, with the carrier PIN (operator only)",
          querystring: Type.Object({ ...CursorQuery(), status: Type.Optional(Status) }),
          response: { 200: CursorPage(PortInReview) },
        },
      },
      async (req) => {
        if (req.principal!.role !== 'admin') throw forbidden('Only the platform operator reviews port-in orders');
        const limit = req.query.limit ?? 25;
        return cursorPage(await portIns.listAll({ ...req.query, limit }), limit);
      },
    );

    app.get(
      '/dids/port-ins/:id',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'One of your port-in orders',
          params: Type.Object({ id: Uuid() }),
          response: { 200: Ok(PortIn) },
        },
      },
      async (req) => ok(await portIns.get(req.principal!.accountId, req.params.id)),
    );

    app.post(
      '/dids/port-ins/:id/cancel',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Cancel your port-in order before it completes',
          description: '409 CONFLICT once rejected, completed or cancelled.',
          params: Type.Object({ id: Uuid() }),
          response: { 200: Ok(PortIn) },
        },
      },
      async (req) => ok(await portIns.cancel(req.principal!.accountId, req.params.id)),
    );

    for (const s of OPERATOR_STEPS) {
      app.post(
        `/dids/port-ins/:id/${s.path}`,
        {
          config: { access: WRITE },
          schema: {
            tags: TAGS,
            summary: s.summary,
            description: '409 CONFLICT when the order is not in a state this step leaves from (docs/numbers.md).',
            params: Type.Object({ id: Uuid() }),
            body: Type.Optional(
              Type.Object(
                {
                  note: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
                  ...(s.step === 'complete'
                    ? {
                        inboundCarrierId: Type.Optional(
                          Uuid(
                            "the account whose SIP trunk brings the ported numbers' calls in; default [numbers] ported_inbound_trunk",
                          ),
                        ),
                      }
                    : {}),
                },
                { additionalProperties: false },
              ),
            ),
            response: { 200: Ok(PortInReview) },
          },
        },
        async (req) => {
          if (req.principal!.role !== 'admin') throw forbidden('Only the platform operator reviews port-in orders');
          const body = req.body as { note?: string | null; inboundCarrierId?: string } | undefined;
          return ok(
            await portIns.decide(req.principal!.accountId, req.params.id, s.step, body?.note, body?.inboundCarrierId),
          );
        },
      );
    }
  };
}
