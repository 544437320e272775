import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { CursorPage, DateTime, Nullable, Ok, Uuid, ok } from '../../http/envelope.js';
import { isOperator, requireOperator } from '../../http/operator.js';
import { CursorQuery, cursorPage } from '../../http/pagination.js';
import type { ComplianceService } from './service.js';

const TAGS = ['Compliance'];
const Status = Type.Union([
  Type.Literal('unverified'),
  Type.Literal('pending'),
  Type.Literal('verified'),
  Type.Literal('rejected'),
]);
const Kind = Type.Union([
  Type.Literal('passport'),
  Type.Literal('national_id'),
  Type.Literal('driving_licence'),
  Type.Literal('proof_of_address'),
  Type.Literal('business_registration'),
  Type.Literal('other'),
]);
const Document = Type.Object({
  id: Uuid(),
  kind: Kind,
  fileName: Type.String(),
  contentType: Type.String(),
  sizeBytes: Type.Integer(),
  sha256: Type.String(),
  createdAt: DateTime(),
});
const Record = Type.Object({
  accountId: Uuid(),
  status: Status,
  subjectType: Nullable(Type.Union([Type.Literal('individual'), Type.Literal('business')])),
  legalName: Nullable(Type.String()),
  countryCode: Nullable(Type.String()),
  address: Nullable(Type.String()),
  dateOfBirth: Nullable(Type.String({ format: 'date' })),
  registrationNumber: Nullable(Type.String()),
  submittedAt: Nullable(DateTime()),
  reviewedAt: Nullable(DateTime()),
  rejectionReason: Nullable(Type.String()),
  documents: Type.Array(Document),
});

export function complianceRoutes(compliance: ComplianceService, maxDocumentBytes: number) {
  return (app: App) => {
    app.get(
      '/compliance/kyc',
      {
        config: { access: { auth: 'required', scope: 'account:read' } },
        schema: {
          tags: TAGS,
          summary: 'The identity verification (KYC) record of the account, with its documents',
          response: { 200: Ok(Record) },
        },
      },
      async (req) => ok(await compliance.get(req.principal!.accountId)),
    );

    app.put(
      '/compliance/kyc',
      {
        config: { access: { auth: 'session' } },
        schema: {
          tags: TAGS,
          summary: 'Fill in the identity details; with submit: true, send them for review',
          description:
            'Send only changing fields. Submitting needs subjectType, legalName, countryCode, address, dateOfBirth (individual) or registrationNumber (business) and at least one document. While pending review or once verified: 409 CONFLICT.',
          body: Type.Object(
            {
              subjectType: Type.Optional(Type.Union([Type.Literal('individual'), Type.Literal('business')])),
              legalName: Type.Optional(Type.String({ minLength: 2, maxLength: 200 })),
              countryCode: Type.Optional(Type.String({ pattern: '^[A-Z]{2}$', description: 'ISO 3166-1 alpha-2' })),
              address: Type.Optional(Type.String({ minLength: 5, maxLength: 500 })),
              dateOfBirth: Type.Optional(Nullable(Type.String({ format: 'date' }))),
              registrationNumber: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 100 }))),
              submit: Type.Optional(Type.Boolean({ default: false })),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Record) },
        },
      },
      async (req) => {
        const { submit, ...details } = req.body;
        return ok(await compliance.update(req.principal!.accountId, details, submit ?? false));
      },
    );

    app.post(
      '/compliance/kyc/documents',
      {
        config: { access: { auth: 'session' }, rateLimit: { points: 20, seconds: 3600 } },
        // Base64 is 4/3 of the file; room for the JSON around it.
        bodyLimit: Math.ceil((maxDocumentBytes * 4) / 3) + 64 * 1024,
        schema: {
          tags: TAGS,
          summary: 'Upload an identity document (PDF, PNG, JPEG or WebP, base64)',
          description: `At most ${maxDocumentBytes} bytes once decoded; the type is told from the file's bytes, not its name.`,
          body: Type.Object(
            {
              kind: Kind,
              fileName: Type.String({ minLength: 1, maxLength: 200 }),
              contentBase64: Type.String({ minLength: 4, description: 'the file, standard base64' }),
            },
            { additionalProperties: false },
          ),
          response: { 201: Ok(Document) },
        },
      },
      async (req, reply) => reply.code(201).send(ok(await compliance.addDocument(req.principal!.accountId, req.body))),
    );

    app.get(
      '/compliance/kyc/documents/:id',
      {
        config: { access: { auth: 'session' } },
        schema: {
          tags: TAGS,
          summary: 'Download a document (its owner, or an operator reviewing it)',
          params: Type.Object({ id: Uuid() }),
        },
      },
      async (req, reply) => {
        const p = req.principal!;
        const { doc, bytes } = await compliance.readDocument(req.params.id, {
          accountId: p.accountId,
          operator: isOperator(p),
        });
        return reply
          .type(doc.contentType)
          .header('content-disposition', `attachment; filename="${doc.fileName}"`)
          .header('x-content-type-options', 'nosniff')
          .header('cache-control', 'private, no-store')
          .send(bytes);
      },
    );

    app.get(
      '/compliance/reviews',
      {
        config: { access: { auth: 'session' } },
        schema: {
          tags: TAGS,
          summary: 'Operators: verifications by status (default pending), with their documents',
          querystring: Type.Object({ ...CursorQuery(), status: Type.Optional(Status) }),
          response: {
            200: CursorPage(Type.Intersect([Record, Type.Object({ id: Uuid(), email: Nullable(Type.String()) })])),
          },
        },
      },
      async (req) => {
        requireOperator(req.principal);
        const limit = req.query.limit ?? 25;
        return cursorPage(
          await compliance.queue({ status: req.query.status ?? 'pending', cursor: req.query.cursor, limit }),
          limit,
        );
      },
    );

    app.post(
      '/compliance/reviews/:accountId',
      {
        config: { access: { auth: 'session' } },
        schema: {
          tags: TAGS,
          summary: 'Operators: approve or reject a pending verification',
          description:
            'Emits kyc.verified or kyc.rejected to the account. A rejected account can correct and submit again.',
          params: Type.Object({ accountId: Uuid() }),
          body: Type.Object(
            {
              decision: Type.Union([Type.Literal('approve'), Type.Literal('reject')]),
              reason: Type.Optional(Type.String({ minLength: 1, maxLength: 1000 })),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Record) },
        },
      },
      async (req) => {
        const op = requireOperator(req.principal);
        return ok(
          await compliance.review(req.params.accountId, op.accountId, req.body.decision, req.body.reason ?? null),
        );
      },
    );
  };
}
